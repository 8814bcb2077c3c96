"""tf_cnn_benchmarks (github.com/tensorflow/benchmarks) as a workload: the whitepaper's (seed 003) program.

Its command line comes from repro.launch.tfcnn; the image puts the script at render.TfCnnBenchmarks().script.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from repro.launch.tfcnn import tf_cnn_benchmarks_argv
from repro.launch.workloads import find_result
from repro.results.record import Settings
from repro.workloads.spec import WorkloadSpec
from repro.workloads.tf_cnn_benchmarks import SPEC


@dataclass(frozen=True)
class TfCnnBenchmarks:
    """tf_cnn_benchmarks.py with --variable_update=horovod, one process per worker."""

    spec: WorkloadSpec = SPEC
    script: str | None = None

    def command(self, point: Settings, python: str, *, data: str | None = None) -> list[str]:
        from repro.image.render import TfCnnBenchmarks as Block

        return tf_cnn_benchmarks_argv(point, python=python, data_dir=data, script=self.script or Block().script)

    def parse(self, stdout: str) -> dict[str, Any] | None:
        return find_result(stdout)


WORKLOAD = TfCnnBenchmarks()
