"""The built-in comparison kinds, one package each (repro.compare.kind registers them by name, one line each):
throughput, allreduce, tta, lm. A kind's package holds everything repro says about its runs: the typed model of
their metrics, its comparison rows, tables, JSON, figure panels and regression rule, and its end-of-sweep
document and figure.
"""

from repro.compare.kind import KINDS

__all__ = ["KINDS"]
