"""Golden files: compare rendered text with a committed file; REPRO_UPDATE_GOLDEN=1 writes them instead."""

from __future__ import annotations

import os
from pathlib import Path

UPDATE = os.environ.get("REPRO_UPDATE_GOLDEN") == "1"


def assert_golden(directory: Path, name: str, text: str) -> None:
    """`text` is exactly directory/name (written there first under REPRO_UPDATE_GOLDEN=1)."""
    path = directory / name
    if UPDATE:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    assert path.exists(), f"{path} missing: run with REPRO_UPDATE_GOLDEN=1 to create it"
    assert text == path.read_text(), f"{name} differs from its golden file (REPRO_UPDATE_GOLDEN=1 to accept)"
