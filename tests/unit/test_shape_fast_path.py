"""shape_problem's fast path (repro.results.jsonfile): with the record's raw text it skips the walk over strings
and numbers where the text cannot hold a lone surrogate, and gives the same answer as the full walk."""

from __future__ import annotations

import json

import pytest

from repro.results.jsonfile import UnreadableRecord, read_record, shape_problem
from tests.unit import real_steps

RECORD = json.loads(real_steps.record(real_steps.runs()[0], "a").model_dump_json())


@pytest.mark.parametrize("raw", [
    json.dumps(RECORD).encode(),
    json.dumps({**RECORD, "log_tail": "\\ud800 as text"}).encode(),  # an escaped backslash: no surrogate
    json.dumps({**RECORD, "env": {"X": "\ud800"}}).encode(),  # json.dumps escapes it: \\ud800
    json.dumps({**RECORD, "env": {"X": "\ud800"}}, ensure_ascii=False).encode("utf-8", "surrogatepass"),
    json.dumps({**RECORD, "metrics": {"deep": "[" * 70 + "1" + "]" * 70}}).replace('"[', "[").replace(']"', "]")
    .encode(),  # a list 70 deep
    json.dumps({**RECORD, "metrics": {"long": list(range(200_001))}}).encode(),
    json.dumps(RECORD).encode("utf-16"),
])
def test_the_fast_path_agrees_with_the_full_walk(raw):
    data = json.loads(raw)
    assert shape_problem(data, raw) == shape_problem(data)


def test_a_record_with_a_lone_surrogate_is_still_refused_by_name(tmp_path):
    for i, raw in enumerate([json.dumps({**RECORD, "env": {"X": "\ud800"}}).encode(),
                             json.dumps({**RECORD, "env": {"X": "\ud800"}}, ensure_ascii=False).encode(
                                 "utf-8", "surrogatepass")]):
        path = tmp_path / f"r{i}.json"
        path.write_bytes(raw)
        with pytest.raises(UnreadableRecord) as exc:
            read_record(path)
        assert "lone surrogate" in exc.value.message and str(path) in exc.value.message
