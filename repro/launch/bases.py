"""What the plug-in bases of launch/ share: a guard that refuses, when a plug-in class is made, a public name that
looks like a misspelt method of its base (`chekc` for `check`), which would otherwise be silently never called
while the base's default runs in its place."""

from __future__ import annotations

import difflib


def refuse_misspelt(cls: type, base: type) -> None:
    """TypeError naming a public attribute of `cls` that is close to, but not, a member of `base`."""
    known = {n for n in dir(base) if not n.startswith("_")}
    for name in vars(cls):
        if name.startswith("_") or name in known:
            continue
        close = difflib.get_close_matches(name, known, n=1, cutoff=0.8)
        if close:
            raise TypeError(f"{cls.__qualname__}.{name} looks like a misspelling of {base.__name__}.{close[0]}, "
                            f"which {cls.__qualname__} would then never override")
