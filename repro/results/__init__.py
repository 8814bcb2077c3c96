"""Run records, the results store, derived metrics and their statistics."""
