"""What a throughput run states beyond its step times (repro.results.metrics reads those, the one definition of
images/sec): the unit its items are counted in."""

from __future__ import annotations

from repro.compare.model import KindMetrics, Text


class ThroughputMetrics(KindMetrics):
    """A throughput run's own figures."""

    items: Text = None  # what an imported transformer-training log counts: tokens or samples (None: images)

    @property
    def unit(self) -> str:
        """What the run's figure counts per second."""
        return f"{self.items}/sec" if self.items in ("tokens", "samples") else "images/sec"
