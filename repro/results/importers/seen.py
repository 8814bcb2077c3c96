"""Device names and software versions that TensorFlow, NCCL and CUDA print into a log (pure).

GPU names, as TensorFlow logs them when it opens the devices:

* TF 1.x: ``Found device 0 with properties:`` then ``name: Tesla M60`` (older: alone on its line, newer:
  ``name: GeForce RTX 3080 major: 8 minor: 6 memoryClockRate(GHz): 1.8``);
* TF 2.x: ``pciBusID: 0000:07:00.0 name: A100-SXM4-40GB computeCapability: 8.0`` (ROCm builds:
  ``name: Vega 20     ROCm AMD GPU ISA: gfx906``);
* both: ``Created TensorFlow device (... device:GPU:0 ...) -> physical GPU (device: 0, name: Tesla
  V100-SXM2-16GB, pci bus id: ...)``; TF 2.5 and later: ``Created device ...device:GPU:0 with 78911 MB
  memory:  -> device: 0, name: NVIDIA A100-SXM4-80GB, pci bus id: ...``.

Versions: NCCL's ``NCCL version 2.4.8+cuda10.0``, the CUDA runtime TensorFlow loads
(``libcudart.so.11.0``), Horovod's ``Horovod v0.28.1`` / ``horovod 0.19.0`` banner.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from repro.results.importers.lines import Line

_FOUND = re.compile(r"Found device (\d+) with properties")
_NAME_TF1 = re.compile(r"^\s*name:\s*(.+?)(?:\s+major:.*)?$")
_NAME_TF2 = re.compile(r"\bname:\s*(.+?)\s+(?:computeCapability:|ROCm AMD GPU ISA:)")
_CREATED = re.compile(r"device:GPU:(\d+).*?->\s*(?:physical GPU \()?(?:device: \d+, )?name: ([^,]+), pci bus id")
_NCCL = re.compile(r"\bNCCL version (\d+\.\d+\.\d+)")
_CUDART = re.compile(r"libcudart\.so\.(\d+(?:\.\d+)*)")
_HOROVOD = re.compile(r"^\s*horovod[ =:]+v?(\d+\.\d+\.\d+)\b", re.I)


@dataclass(frozen=True)
class Seen:
    """GPU names by device index, in the order seen, and the software versions."""

    gpus: tuple[tuple[int, str], ...]
    software: dict[str, str]

    @property
    def names(self) -> tuple[str, ...]:
        """One name per device index (the first seen)."""
        by_index: dict[int, str] = {}
        for index, name in self.gpus:
            by_index.setdefault(index, name)
        return tuple(by_index[i] for i in sorted(by_index))

    def name(self, index: int = 0) -> str | None:
        """The name of device `index`, None when the log does not show it."""
        return next((n for i, n in self.gpus if i == index), None)


def _gpu(lines: Sequence[Line], i: int, found_at: dict[int | None, tuple[int, int]]) -> tuple[int, str] | None:
    text = lines[i].text
    if m := _CREATED.search(text):
        return int(m.group(1)), m.group(2).strip()
    if m := _FOUND.search(text):
        found_at[lines[i].rank] = (int(m.group(1)), i)
        return None
    pending = found_at.get(lines[i].rank)
    if pending and i - pending[1] <= 3 and ((m := _NAME_TF2.search(text)) or (m := _NAME_TF1.match(text))):
        found_at.pop(lines[i].rank)
        return pending[0], m.group(1).strip()
    return None


def seen_in(lines: Sequence[Line]) -> Seen:
    """Every GPU name and software version the lines show."""
    gpus: list[tuple[int, str]] = []
    software: dict[str, str] = {}
    found_at: dict[int | None, tuple[int, int]] = {}
    for i, line in enumerate(lines):
        gpu = _gpu(lines, i, found_at)
        if gpu and gpu[1]:
            gpus.append(gpu)
        for name, rx in (("nccl", _NCCL), ("cuda_runtime", _CUDART), ("horovod", _HOROVOD)):
            if name not in software and (m := rx.search(line.text)):
                software[name] = m.group(1)
    return Seen(tuple(gpus), software)
