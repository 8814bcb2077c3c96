"""Long result lines in parts (repro.workloads.framing): whole again after any interleaving of lines."""

from __future__ import annotations

import json
import random

from repro.launch.workloads import WORKLOADS, find_result
from repro.workloads import framing, probe


def _result(size: int = 2, steps: int = 400) -> dict:
    rank = {"rank": 0, "local_rank": 0, "hostname": "h1", "addresses": ["10.0.0.1"], "device": "CPU",
            "warmup_times": [0.1], "step_times": [0.1000921499 + i * 1e-12 for i in range(steps)],
            "items_per_step": 8}
    return {"format": "repro.workload/1", "workload": "probe", "settings": {}, "world": {"size": size},
            "ranks": [rank], "metrics": {}}


def test_a_short_line_is_printed_as_it_is():
    assert framing.framed("REPRO_RESULT {}") == ["REPRO_RESULT {}"]
    assert framing.printed("x") == "x\n"


def test_a_long_line_becomes_parts_under_the_width_that_join_back():
    line = "REPRO_RESULT " + json.dumps(_result())
    parts = framing.framed(line)
    assert len(parts) > 1 and all(len(p.encode()) < 1000 for p in parts)
    assert all(p.startswith(framing.PART_PREFIX) and p.endswith("|") for p in parts)
    assert framing.joined("\n".join(parts)) == line


def test_non_ascii_parts_stay_under_the_width_in_bytes():
    line = "REPRO_RESULT " + "é€😀" * 900
    parts = framing.framed(line)
    assert all(len(p.encode()) < 1000 for p in parts)
    assert framing.joined("\n".join(parts) + "\n") == line + "\n"


def test_two_ranks_interleaved_line_by_line_and_tagged_both_come_back():
    result = _result()
    other = {**result["ranks"][0], "rank": 1, "hostname": "h2"}
    zero = framing.framed("REPRO_RESULT " + json.dumps(result))
    one = framing.framed(probe.RANK_PREFIX + json.dumps(other))
    rng = random.Random(7)
    out, a, b = [], list(zero), list(one)
    while a or b:  # any interleaving of whole lines, as srun's ~1 KiB messages give
        src = a if (a and (not b or rng.random() < 0.5)) else b
        out.append(src.pop(0))
    out = ["[1,0]<stdout>:" + line if i % 3 == 0 else line for i, line in enumerate(out)]  # mpirun's tags
    merged = WORKLOADS.get("probe").parse("probe: step 10/11\n" + "\n".join(out) + "\n")
    assert merged is not None and [r["hostname"] for r in merged["ranks"]] == ["h1", "h2"]


def test_a_part_missing_or_cut_gives_no_line():
    parts = framing.framed("REPRO_RESULT " + json.dumps(_result()))
    assert find_result("\n".join(parts[:-1])) is None
    cut = parts[1][:-5]  # a part whose end marker never came
    assert find_result("\n".join([parts[0], cut, *parts[2:]])) is None


def test_trailing_blanks_stripped_on_the_way_do_not_shorten_a_slice():
    line = "REPRO_RESULT " + json.dumps({**_result(), "note": " " * 2000})
    parts = framing.framed(line)
    stripped = "\r\n".join(p.rstrip() for p in parts)
    assert framing.joined(stripped) == line
