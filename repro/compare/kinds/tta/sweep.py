"""The tta kind's end-of-sweep report (pure, from records): per run the time to the target, epochs, the final
quality (top-1, or the metric an imported MLPerf log names) and the compute/communication split; per point of
several runs their means, as `repro compare` sums up a side.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from repro.compare.kinds.tta.metrics import TOP1, TtaMetrics
from repro.formats import Column, Document, Table, constant_settings, number, percent, render
from repro.results.record import RunRecord
from repro.workloads.catalog import kind_of

TTA_KEYS = ("stack", "workers", "target")


def _tta_data(rec: RunRecord) -> dict[str, Any]:
    stated = TtaMetrics.model_validate(rec.metrics)
    m = stated if rec.status == "ok" else TtaMetrics()
    return {"id": rec.id, "stack": rec.stack.name, "stack_hash": rec.stack.hash, "workers": rec.settings.workers,
            "hosts": rec.settings.hosts, "status": rec.status, "target": stated.target,
            "reached": m.reached, "time_to_accuracy_s": m.time_to_accuracy_s,
            "epochs": m.epochs, "final_top1": _final(m), "final_top5": m.final_top5,
            "compute_s": m.compute_s, "communication_s": m.communication_s,
            "metric": stated.accuracy_metric, "failure": rec.failure}


def _final(m: TtaMetrics) -> float | None:
    """The run's final quality: top-1, or the figure an imported log names (log perplexity, eval loss, mAP)."""
    if m.final_top1 is not None or m.accuracy_metric == TOP1:
        return m.final_top1
    return m.final_accuracy


def _quality(data: Sequence[dict[str, Any]]) -> str:
    """What the runs' accuracy column holds: 'top-1' for classification, else the metric the logs name."""
    names = sorted({d.get("metric") or "top1" for d in data if not d.get("aggregate")})
    return "top-1" if names in ([], ["top1"]) else " / ".join(names)


def _quality_value(value: Any, quality: str) -> str:
    """A percentage for top-1; the figure as the log gives it for another metric (a loss is not a percent)."""
    if quality == "top-1":
        return percent(value)
    return f"{value:.4g}" if isinstance(value, (int, float)) and not isinstance(value, bool) else "-"


def _tta_cells(d: dict[str, Any], failure_ref: str, quality: str = "top-1") -> list[str]:
    if d["status"] != "ok":
        return [f"FAILED {failure_ref}".strip(), *["-"] * 5]
    tta = number(d["time_to_accuracy_s"]) if d["reached"] else "not reached"
    return [tta, "-" if d["epochs"] is None else str(d["epochs"]), _quality_value(d["final_top1"], quality),
            percent(d["final_top5"]), number(d["compute_s"]), number(d["communication_s"])]


def _mean(values: Sequence[Any]) -> float | None:
    vals = [float(v) for v in values if isinstance(v, (int, float)) and not isinstance(v, bool)]
    return sum(vals) / len(vals) if vals else None


def _tta_aggregate(group: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """A point's runs summed up as `repro compare` sums up a side: means over the runs that finished (time to
    accuracy: over those that reached the target), with how many reached it."""
    ok = [d for d in group if d["status"] == "ok"]
    reached = [d for d in ok if d["reached"]]
    first = group[0]
    return {"id": None, "aggregate": True, "stack": first["stack"], "stack_hash": first["stack_hash"],
            "workers": first["workers"], "hosts": first["hosts"], "status": "ok" if ok else "failed",
            "target": first["target"], "runs": len(group), "ok_runs": len(ok), "reached_runs": len(reached),
            "reached": bool(reached), "time_to_accuracy_s": _mean([d["time_to_accuracy_s"] for d in reached]),
            **{k: _mean([d[k] for d in ok]) for k in ("epochs", "final_top1", "final_top5", "compute_s",
                                                      "communication_s")},
            "failure": None}


def _tta_groups(data: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    groups: dict[tuple, list[dict[str, Any]]] = {}
    for d in data:
        groups.setdefault((d["stack_hash"], d["workers"], d["hosts"], d["target"]), []).append(d)
    return list(groups.values())


def _tta_aggregate_cells(d: dict[str, Any], quality: str = "top-1") -> list[str]:
    tta = number(d["time_to_accuracy_s"]) if d["reached"] else "not reached"
    epochs = "-" if d["epochs"] is None else f"{d['epochs']:.1f}"
    return [f"{tta} ({d['reached_runs']}/{d['runs']} reached)", epochs, _quality_value(d["final_top1"], quality),
            percent(d["final_top5"]), number(d["compute_s"]), number(d["communication_s"])]


def tta_document(records: Sequence[RunRecord]) -> Document:
    """One row per time-to-accuracy run (time, epochs, final accuracy, compute and communication time), and per
    point of several runs an aggregate row: the means, and how many runs reached the target."""
    runs = [_tta_data(r) for r in records if kind_of(r.settings.workload) == "tta"]
    groups = _tta_groups(runs)
    several = any(len(g) > 1 for g in groups)
    data: list[dict[str, Any]] = []
    for group in groups:
        for i, d in enumerate(group):
            data.append({**d, "aggregate": False, "run": i + 1})
        if len(group) > 1:
            data.append({**_tta_aggregate(group), "run": "mean"})
    shown = [{"stack": d["stack"], "workers": d["workers"], "target": d["target"]} for d in data]
    same, varying = constant_settings(shown, TTA_KEYS)
    varying = [k for k in varying if k != "workers"]
    failures = [d for d in data if d["status"] != "ok" and not d["aggregate"]]
    refs = {id(d): f"[{i + 1}]" for i, d in enumerate(failures)}
    quality = _quality(data)
    cols = [Column(k, numeric=k != "stack") for k in varying] + [Column("workers", True)] + (
        [Column("run", True)] if several else []) + [
        Column("time to accuracy (s)", True), Column("epochs", True),
        Column(quality, True), Column("top-5", True), Column("compute (s)", True), Column("communication (s)", True)]
    cells = tuple(tuple([*(str(d[k]) if d[k] is not None else "-" for k in varying), str(d["workers"]),
                         *([str(d["run"])] if several else []),
                         *(_tta_aggregate_cells(d, quality) if d["aggregate"]
                           else _tta_cells(d, refs.get(id(d), ""), quality))])
                  for d in data)
    first = data[0] if data else {}
    said = {"stack": f"stack {first.get('stack')} (hash {first.get('stack_hash')})"}
    if quality == "top-1" or first.get("target") is not None:
        said["target"] = f"target {quality} {_quality_value(first.get('target'), quality)}"
    caption = [" · ".join(said[k] for k in same if k in said)] if data else []
    if quality == "top-1":
        caption.append("time to accuracy: seconds from the start of training until validation top-1 first reached "
                       "the target; top-1/top-5: final validation accuracy; compute/communication: seconds per "
                       "worker over all epochs; one row per run")
    else:  # imported MLPerf runs: the quality each benchmark's rules name (a loss or perplexity is reached from above)
        caption.append(f"time to accuracy: seconds from run_start to run_stop of the runs that reached the "
                       f"benchmark's quality target; {quality}: the last evaluation the log states; one row per run")
    if several:
        caption.append("mean: the point's runs summed up as `repro compare` does: time to accuracy averaged over "
                       "the runs that reached the target (k/n reached), the other figures over the runs that "
                       "finished")
    notes = [f"{refs[id(d)]} {d['failure']}" for d in failures]
    return Document((Table(tuple(cols), cells, tuple(data), title="Time to accuracy",
                           caption=tuple(c for c in caption if c), notes=tuple(notes), name="tta"),))


def tta_report(records: Sequence[RunRecord], fmt: str = "table") -> str:
    return render(tta_document(records), fmt)
