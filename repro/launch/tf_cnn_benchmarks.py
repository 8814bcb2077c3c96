"""tf_cnn_benchmarks (github.com/tensorflow/benchmarks) as a workload: the whitepaper's (seed 003) program.

Its command line comes from repro.workloads.tf_cnn_benchmarks; the image puts the script at
render.TfCnnBenchmarks().script.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from repro.errors import InputError
from repro.results.record import Settings
from repro.workloads import WorkloadError
from repro.workloads.spec import WorkloadSpec
from repro.workloads.tf_cnn_benchmarks import SPEC, tf_cnn_benchmarks_argv


@dataclass(frozen=True)
class TfCnnBenchmarks:
    """tf_cnn_benchmarks.py with --variable_update=horovod, one process per worker."""

    spec: WorkloadSpec = SPEC
    script: str | None = None

    def command(self, point: Settings, python: str, *, data: str | None = None) -> list[str]:
        from repro.image.render import TfCnnBenchmarks as Block

        try:
            return tf_cnn_benchmarks_argv(point, python=python, data_dir=data, script=self.script or Block().script)
        except WorkloadError as exc:
            raise InputError(str(exc)) from None

    def parse(self, stdout: str) -> dict[str, Any] | None:
        """The run in the program's own output (the parser `repro import` uses), as a workload result."""
        from repro.results.importers import parse_tf_cnn_output

        try:
            run = parse_tf_cnn_output(stdout)
        except InputError:
            return None
        if run.failure is not None or not run.ranks:
            return None
        return {"format": "repro.workload/1", "workload": SPEC.name, "settings": dict(run.settings),
                "world": {"size": len(run.ranks)}, "software": dict(run.software),
                "ranks": [r.model_dump() for r in run.ranks], "metrics": dict(run.metrics),
                "reported_images_per_sec": run.figure}


WORKLOAD = TfCnnBenchmarks()
