"""What an MLPerf system or platform name says about the accelerators that ran (pure).

A platform name is not a worker count unless its format is known to say so: each rule below states where its
meaning comes from (the submitter's own system description, ``systems/*.json`` of the results repository,
``number_of_nodes`` x ``accelerators_per_node``). A name no rule reads leaves the count unknown, and the
import asks for ``--set FILE:workers=N``; so does a count of 0 (Habana's ``gaudi-0`` ran on 8 Gaudis).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Reading:
    """The accelerators (and hosts, when it says) a platform name gives, and the rule that read it."""

    workers: int
    hosts: int | None
    how: str


@dataclass(frozen=True)
class Rule:
    """One family of names: its pattern, what it means, and the source of that meaning."""

    pattern: re.Pattern[str]
    read: Callable[[re.Match[str]], tuple[int, int | None]]
    meaning: str
    source: str


# accelerators in one system of the names submitters give (systems/*.json, accelerators_per_node)
SYSTEM_SIZE = {"dgx-1": 8, "dgx1": 8, "dgx-2": 16, "dgx2": 16, "dgx-2h": 16, "dgx a100": 8, "dgxa100": 8,
               "dgx h100": 8, "dgxh100": 8}


def _systems(m: re.Match[str]) -> tuple[int, int | None]:
    return int(m.group(1)) * SYSTEM_SIZE[m.group(2).strip().lower()], int(m.group(1))


RULES = (
    Rule(re.compile(r"(\d+)x\s*(?:NVIDIA\s+)?(" + "|".join(re.escape(k) for k in SYSTEM_SIZE) + r")", re.I),
         _systems, "N systems of a known size",
         "NVIDIA's systems/dgx*.json in mlcommons/training_results_v0.7..v4.0: 8 accelerators per DGX-1, DGX A100 "
         "and DGX H100, 16 per DGX-2"),
    Rule(re.compile(r"gpu-[a-z]\w*-(\d+)", re.I), lambda m: (int(m.group(1)), None),
         "Google's gpu-MODEL-N: N GPUs",
         "mlcommons/training_results_v0.7 Google/systems/gpu-v100-8-TF2.0.json: 1 node x 8 accelerators"),
    # Cloud TPU v2-v4 slice names count TensorCores, two per chip; the submitter counts chips
    Rule(re.compile(r"tpu-?v[234]-(\d+)", re.I), lambda m: (int(m.group(1)) // 2, None),
         "Cloud TPU vX-N (v2-v4): N TensorCores, N/2 chips",
         "Google/systems/tpu-v3-32-TF2.0.json (training_results_v0.7): 2 nodes x 8 = 16 accelerators; "
         "tpu-v4-4096-TF.json (training_results_v1.0): 512 nodes x 4 = 2048"),
)


def read_platform(name: str | None) -> Reading | None:
    """The accelerators a platform name states, by the first rule that reads it; None when no rule does."""
    text = (name or "").strip()
    for rule in RULES:
        m = rule.pattern.fullmatch(text)
        if m is None:
            continue
        workers, hosts = rule.read(m)
        if workers < 1:  # a name that counts nothing is not a count
            return None
        return Reading(workers, hosts, f"submission_platform {text!r}: {rule.meaning} ({rule.source})")
    return None
