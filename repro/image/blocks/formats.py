"""Rendering hpccm building blocks in one format without leaking hpccm's global settings (pure).

hpccm keeps its output settings in module globals (`hpccm.config`): the container format, the Linux
distribution and version, the CPU architecture. Its building blocks read them both when they are
constructed (package names per distribution, download steps per format) and when they are rendered
(`str(block)`). `settings()` sets every one of them for the duration of one render, under a lock,
and restores the previous values afterwards, so one render never changes another.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator

from repro.errors import ImageError

DOCKER = "docker"
APPTAINER = "singularity"  # hpccm's name for the Singularity/Apptainer definition format
FORMATS = (DOCKER, APPTAINER)
SINGULARITY_VERSION = "3.7"  # definition format with multiple sections per kind (Singularity >= 3.1)
WORKING_DIRECTORY = "/var/tmp"

# Stack OS -> the distribution label hpccm's blocks branch on. hpccm knows Ubuntu and RHEL-family
# releases only; a Debian release takes the Ubuntu release of its generation (same package manager,
# same package names for everything repro asks hpccm for).
_HPCCM_DISTRO = {
    ("ubuntu", "16.04"): "ubuntu16", ("ubuntu", "18.04"): "ubuntu18", ("ubuntu", "20.04"): "ubuntu20",
    ("ubuntu", "22.04"): "ubuntu22", ("ubuntu", "24.04"): "ubuntu24",
    ("debian", "10"): "ubuntu18", ("debian", "11"): "ubuntu20", ("debian", "12"): "ubuntu22",
    ("debian", "13"): "ubuntu24",
}
_SETTINGS = ("g_ctype", "g_linux_distro", "g_linux_version", "g_cpu_arch", "g_cpu_target", "g_wd",
             "g_singularity_version", "g_singularity_tmp_fallback")
_LOCK = threading.RLock()


def hpccm_distro(distro: str, release: str) -> str:
    """hpccm's distribution label for a stack's OS; ImageError for one repro cannot render."""
    try:
        return _HPCCM_DISTRO[(distro, release)]
    except KeyError:
        known = ", ".join(f"{d} {v}" for d, v in _HPCCM_DISTRO)
        raise ImageError(f"repro renders images for Debian-family systems only; {distro} {release} is not one "
                         f"of {known}") from None


@contextlib.contextmanager
def settings(fmt: str, distro: str) -> Iterator[None]:
    """hpccm's globals set for one render (format, distribution, x86_64), restored on exit."""
    import hpccm.config as config

    if fmt not in FORMATS:
        raise ImageError(f"unknown recipe format {fmt!r} (known: {', '.join(FORMATS)})")
    with _LOCK:
        saved = {name: getattr(config, name) for name in _SETTINGS}
        try:
            config.set_container_format(fmt)
            config.set_linux_distro(distro)
            config.set_cpu_architecture("x86_64")
            config.set_cpu_target(None)
            config.set_working_directory(WORKING_DIRECTORY)
            config.set_singularity_version(SINGULARITY_VERSION)
            config.set_singularity_tmp_fallback(True)
            yield
        finally:
            for name, value in saved.items():
                setattr(config, name, value)


def render_part(part: object) -> str:
    """One block (or a list of blocks and primitives, one per line) in the current format."""
    if isinstance(part, (list, tuple)):
        return "\n".join(t for t in (render_part(p) for p in part) if t)
    return str(part).strip("\n")


def join(parts: list[object]) -> str:
    """Blocks rendered in the current format, separated by blank lines, ending in one newline."""
    texts = [render_part(p) for p in parts]
    return "\n\n".join(t for t in texts if t) + "\n"
