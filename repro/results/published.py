"""Published baselines: figures copied from papers and tables, imported as records (pure).

`repro import --table FILE.csv --stack NAME` reads a CSV with one row per measured point:

    system, gpus, images_per_sec          required
    top1, top5                            final accuracy, as fractions (0.7318) or percentages (73.18%)
    model, batch, precision               the point's settings (batch per GPU)
    note, source                          free text kept with the figure
    hosts, global_batch, data, xla, data_format, scaling, workload
                                          further settings, when the source states them
    gpu, interconnect                     hardware (kept in record.hardware, used by compare's hardware check)
    printed_*                             figures the source printed next to images/sec (speedup,
                                          efficiency...), kept verbatim in metrics["printed"] for checking
    any other column                      a setting of the point, in settings.extra (e.g. ps, network)

Each row becomes a record with origin "published" and `published` set; settings.workers is `gpus`;
`system` is kept in `published.system` and, so that points of different machines stay apart, in
settings.extra["system"]. A row whose images_per_sec the source gave as "error", "N/A", "-" or blank
becomes a failed record: a failure, never data.

A setting the table does not state (no column, or a blank cell) is unknown (None): precision, XLA, the
data and the host count are never assumed. To line a table up with the raw logs of the same runs
(``repro compare TABLE-STACK LOG-STACK``), state what the logs show: ``workload`` (tf_cnn_benchmarks,
horovod_synthetic), ``batch``, ``precision``, ``data``, and the logs' workload-specific settings as
further columns (``mode``, ``variable_update``, ``all_reduce``, ``data_name``); see
docs/baselines/lambda-rtx3080-fp16.csv. The SHA-256 of the file is kept (metrics["source"]) so that a
table imported twice is recognised.
"""

from __future__ import annotations

import csv
import hashlib
import io
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from repro.errors import Diagnostic, InputError, Location
from repro.files import FileProblem, read_file
from repro.results.record import Hardware, Published, RunRecord, Settings, StackRef, new_id, now_iso
from repro.workloads.tf_cnn_benchmarks import canonical_model

REQUIRED = ("system", "gpus", "images_per_sec")
SETTINGS_COLUMNS = {"model", "batch", "precision", "hosts", "global_batch", "data", "xla", "data_format", "scaling",
                    "workload"}
KEPT = {"top1", "top5", "note", "source", "gpu", "interconnect"}
NO_FIGURE = {"", "-", "n/a", "na", "none", "error", "failed"}


def _diag(file: str, line: int, column: str, message: str, expected: str, found: str) -> Diagnostic:
    return Diagnostic(message, Location(file, line), path=column, expected=expected, found=repr(found))


def _int(value: str, file: str, line: int, column: str, errors: list[Diagnostic]) -> int | None:
    try:
        n = int(value)
        if n < 1:
            raise ValueError
        return n
    except ValueError:
        errors.append(_diag(file, line, column, "not a positive whole number", "e.g. 8", value))
        return None


def _fraction(value: str, file: str, line: int, column: str, errors: list[Diagnostic]) -> float | None:
    text = value.strip()
    if not text or text.lower() in NO_FIGURE:
        return None
    try:
        number = float(text.rstrip("%")) / (100 if text.endswith("%") else 1)
    except ValueError:
        number = -1
    if not 0 <= number <= 1:
        errors.append(_diag(file, line, column, "not an accuracy", "a fraction like 0.7318 or 73.18%", value))
        return None
    return number


def _bool(value: str, file: str, line: int, column: str, errors: list[Diagnostic]) -> bool | None:
    text = value.strip().lower()
    if text in ("true", "yes", "1", "on"):
        return True
    if text in ("false", "no", "0", "off"):
        return False
    errors.append(_diag(file, line, column, "not a yes/no value", "true or false", value))
    return None


def _row(row: dict[str, str], line: int, file: str, stack: StackRef, errors: list[Diagnostic], sha256: str = ""
         ) -> RunRecord | None:
    cell = {k: (v or "").strip() for k, v in row.items() if k is not None}
    n_before = len(errors)
    gpus = _int(cell["gpus"], file, line, "gpus", errors)
    raw = cell["images_per_sec"].replace(",", "")
    figure: float | None = None
    if raw.lower() not in NO_FIGURE:
        try:
            figure = float(raw)
            if figure <= 0:
                raise ValueError
        except ValueError:
            errors.append(_diag(file, line, "images_per_sec", "not a throughput",
                                "a positive number, or error / N/A for a point without a figure", raw))
    settings: dict[str, Any] = {"workload": cell.get("workload") or "cnn", "workers": gpus or 1,
                                "precision": None, "xla": None, "data": None, "hosts": None}  # unknown unless stated
    if cell.get("model"):
        settings["model"] = canonical_model(cell["model"])
    for column, name in (("batch", "batch_per_worker"), ("hosts", "hosts"), ("global_batch", "global_batch")):
        if cell.get(column):
            settings[name] = _int(cell[column], file, line, column, errors)
    if cell.get("precision"):
        if cell["precision"] not in ("fp32", "fp16"):
            errors.append(_diag(file, line, "precision", "unknown precision", "fp32 or fp16", cell["precision"]))
        settings["precision"] = cell["precision"]
    if cell.get("xla"):
        settings["xla"] = _bool(cell["xla"], file, line, "xla", errors)
    for name in ("data", "data_format", "scaling"):
        if cell.get(name):
            settings[name] = cell[name]
    extra = {"system": cell["system"]} if cell["system"] else {}
    extra.update({k: v for k, v in cell.items()
                  if k not in (*REQUIRED, *SETTINGS_COLUMNS, *KEPT) and not k.startswith("printed_") and v})
    settings["extra"] = extra
    top1 = _fraction(cell.get("top1", ""), file, line, "top1", errors)
    top5 = _fraction(cell.get("top5", ""), file, line, "top5", errors)
    if len(errors) > n_before:
        return None
    try:
        parsed = Settings.model_validate(settings)
    except ValidationError as exc:
        first = exc.errors()[0]
        errors.append(_diag(file, line, ".".join(map(str, first["loc"])), first["msg"], "a valid setting",
                            str(first.get("input"))))
        return None
    declared = {k: cell[k] for k in ("gpu", "interconnect") if cell.get(k)}
    hardware = Hardware(**declared) if declared else None
    printed = {k.removeprefix("printed_"): v for k, v in cell.items() if k.startswith("printed_") and v}
    metrics: dict[str, Any] = {"source_file": Path(file).name, "source_line": line,
                               "source": {"file": Path(file).name, "lines": str(line), "sha256": sha256}}
    if printed:
        metrics["printed"] = printed
    common: dict[str, Any] = dict(id=new_id(), created=now_iso(), origin="published", stack=stack, settings=parsed,
                                  runtime="imported", hardware=hardware, metrics=metrics)
    if figure is None:
        return RunRecord(status="failed", failure=f"the source gives no figure for this point: {raw or 'blank'!r}"
                         + (f" ({cell['note']})" if cell.get("note") else ""), **common)
    published = Published(images_per_sec=figure, top1=top1, top5=top5, source=cell.get("source", ""),
                          system=cell["system"], note=cell.get("note", ""))
    return RunRecord(status="ok", published=published, **common)


def parse_table(text: str, file: str, stack: StackRef, sha256: str = "") -> list[RunRecord]:
    """Every row of a baseline CSV as a record; all problems of the file are reported together."""
    lines = [line for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    reader = csv.DictReader(io.StringIO("\n".join(lines)))
    columns = [c.strip() for c in reader.fieldnames or []]
    reader.fieldnames = columns
    missing = [c for c in REQUIRED if c not in columns]
    if missing:
        raise InputError(f"{file}: not a baseline table", [Diagnostic(
            f"missing column{'s' if len(missing) > 1 else ''} {', '.join(missing)}", Location(file, 1),
            expected="a header with system, gpus, images_per_sec (and optionally top1, top5, model, batch, "
            "precision, note, source)", found=", ".join(columns) or "(empty)")])
    # line numbers of the file as written (comments and blank lines included)
    numbers = [i for i, line in enumerate(text.splitlines(), start=1)
               if line.strip() and not line.lstrip().startswith("#")][1:]
    errors: list[Diagnostic] = []
    records = []
    try:
        for number, row in zip(numbers, reader, strict=False):  # a quoted multi-line cell makes fewer rows than lines
            record = _row(row, number, file, stack, errors, sha256)
            if record is not None:
                records.append(record)
    except csv.Error as exc:
        raise InputError(f"{file}: not a readable CSV table ({exc})") from None
    if errors:
        raise InputError(f"{file}: cannot import this table", errors)
    if not records:
        raise InputError(f"{file}: the table has no rows")
    return records


MAX_TABLE_BYTES = 64 << 20


def import_table(path: str | Path, stack: StackRef) -> list[RunRecord]:
    """Read a baseline CSV file into records."""
    p = Path(path)
    try:  # bounded: a named pipe or a device is refused, never read for ever
        data = read_file(p, MAX_TABLE_BYTES)
        text = data.decode("utf-8")
    except FileProblem as exc:
        raise InputError(f"{p}: cannot read ({exc})") from None
    except UnicodeDecodeError:
        raise InputError(f"{p}: not a CSV file (not text in UTF-8)") from None
    return parse_table(text, str(p), stack, hashlib.sha256(data).hexdigest())
