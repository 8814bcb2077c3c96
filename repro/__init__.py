"""repro: reproducible distributed deep-learning benchmarks."""

__version__ = "0.1.0"
