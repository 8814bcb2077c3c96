"""`repro results show ID`: one stored run -> its data (the record as stored) and its terminal text.

The text gathers what other stages say about the record (its software line, the host conditions, the fabric
summary), which is why it is put together here and not in the CLI; the CLI picks the format.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from repro.results.record import RunRecord

_LISTED = ("id", "created", "stack", "stack_hash", "origin", "status", "failure", "workload", "model", "batch",
           "workers", "hosts", "images_per_sec")


@dataclass(frozen=True)
class ShownRun:
    """One run: `data` the record as stored (json), `text` what a terminal shows of it."""

    data: dict[str, Any]
    text: str


def show_run(root: str | Path | None, run_id: str) -> ShownRun:
    """The run `run_id` (an id or unique prefix) of the store at `root`, with the one images/sec figure."""
    from repro.pipeline.runs import reading_store
    from repro.results.metrics import with_figure

    record = with_figure(reading_store(root).get(run_id))  # the one images/sec, also for older records
    return ShownRun(record.model_dump(mode="json"), record_text(record))


def summary_row(record: RunRecord) -> dict[str, Any]:
    """The fields `repro results` lists of one run, from the record."""
    from repro.results.index import summarize

    s = summarize("", record)
    return {"id": s.id, "created": s.created, "stack": s.stack, "stack_hash": s.stack_hash, "origin": s.origin,
            "workload": s.workload, "model": s.model, "batch": s.batch_per_worker, "workers": s.workers,
            "hosts": s.hosts, "status": s.status, "images_per_sec": s.images_per_sec, "failure": s.failure}


def _field(label: str, value: object) -> str:
    return f"{label + ':':16}{value}"


def _head(record: RunRecord) -> list[str]:
    """The listed fields, the image, the software and the command."""
    summary = summary_row(record)
    lines = [_field(key, f"{value:,.2f}" if isinstance(value, float) else value)
             for key in _LISTED if (value := summary.get(key)) is not None]
    if record.image is not None:
        lines.append(_field("image", f"{record.image.tag} ({record.image.image_id})"))
    from repro.pipeline.software import software_line

    lines += [_field("software", f"{host}: {software_line(sw)}") for host, sw in record.host_software.items()]
    if record.command:
        lines.append(_field("command", shlex.join(record.command)))
    return lines


def _circumstances(record: RunRecord) -> list[str]:
    """The hosts' conditions and the fabric, each with its warnings."""
    lines = []
    if record.conditions is not None:
        from repro.results.conditions import describe

        lines += [_field("conditions", f"{host}: {describe(c)}") for host, c in record.conditions.hosts.items()]
        lines += [_field("warning", w) for w in record.conditions.warnings]
    if record.fabric is not None and record.fabric.lines:  # measured and imported runs alike
        from repro.pipeline.fabric import summary, warnings

        lines.append(_field("fabric", summary(record.fabric)))
        lines += [_field("warning", w) for w in warnings(record.fabric)]
    return lines


def _ranks(record: RunRecord) -> list[str]:
    lines = []
    for r in record.ranks:
        steps = r.step_times
        mean = sum(steps) / len(steps) if steps else None
        lines.append(f"rank {r.rank:<4} {r.host or '-':10} {r.device:32} {len(steps):4} steps"
                     + (f", mean {mean:.4f} s, {r.items_per_step} items/step" if mean else ""))
    return lines


def _provenance(prov: object) -> list[str]:
    """An imported record's figures: what the log stated, what repro derived, what --set gave."""
    if not isinstance(prov, dict):
        return []
    titles = (("stated", "stated by the log"), ("derived", "derived by repro"), ("given", "given with --set"))
    return [f"{title + ':':20}" + "; ".join(f"{k} ({v})" for k, v in items.items())
            for key, title in titles if (items := prov.get(key) or {})]


def _rest(record: RunRecord) -> str:
    """Settings, published figures, metrics, software and hardware as YAML (the settings in the programs' words)."""
    import yaml

    data = record.model_dump(mode="json")
    data["settings"] = record.settings.shown()  # as every store has printed them
    rest = {k: data[k] for k in ("settings", "published", "metrics", "software", "hardware") if data.get(k)}
    if isinstance(rest.get("metrics"), dict):
        rest["metrics"] = {k: v for k, v in rest["metrics"].items() if k != "provenance"}
    return yaml.safe_dump(rest, sort_keys=False, default_flow_style=False, allow_unicode=True)


def record_text(record: RunRecord) -> str:
    """What `repro results show` prints of a run on a terminal."""
    lines = [*_head(record), *_circumstances(record), *_ranks(record),
             *_provenance(record.metrics.get("provenance"))]
    text = "".join(f"{line}\n" for line in lines) + _rest(record)
    if record.status != "ok" and record.log_tail:
        text += "log tail (the launcher's last lines):\n  " + record.log_tail.replace("\n", "\n  ") + "\n"
    return text
