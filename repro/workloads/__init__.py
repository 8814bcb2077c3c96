"""Programs that run inside a stack, one process per worker under mpirun.

`python -m repro.workloads.cnn` (training throughput), `.allreduce` (all-reduce sweep), `.tta` (time to
accuracy), and `.gloo` (runs an mpirun command line with Horovod's Gloo controller instead of MPI).

These files are copied into container images as they are, so they import nothing from repro outside
this package and need only TensorFlow, Horovod, numpy and the standard library (scikit-learn for the
digits dataset). They run on Python 3.8 and later. Heavy imports happen inside `run()`, so the pure
helpers here import fast and are unit-tested without TensorFlow.
"""


class WorkloadError(Exception):
    """A bad setting or an unusable environment: reported as one `repro-workload error:` line."""
