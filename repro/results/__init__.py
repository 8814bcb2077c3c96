"""Run records, the results store, derived metrics and their statistics."""

DEFAULT_REPEATS = 3  # runs of every point: run-to-run variation is the dominant noise on shared machines
