"""Shared pytest configuration: registers the multi-host test cluster fixtures (tests/cluster)."""

pytest_plugins = ["tests.cluster.fixtures"]
