"""The base of a comparison kind's typed metrics: what its workloads write into `RunRecord.metrics`, validated once
when the kind reads a record (`Kind.read`), so that code past that point reads fields, never a raw dict.

Lenient on purpose: a stored record is history, and a figure of the wrong type (an older workload's, a
hand-edited file's) reads as absent, as the reports always treated it, rather than failing a whole report.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict


def _number(value: Any) -> int | float | None:
    # int stays int: an epoch count of 3 is shown as "3", not "3.0"
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _text(value: Any) -> str | None:
    return str(value) if value not in (None, "") else None


def _flag(value: Any) -> bool | None:
    return None if value is None else bool(value)


Number = Annotated[int | float | None, BeforeValidator(_number)]
Text = Annotated[str | None, BeforeValidator(_text)]
Flag = Annotated[bool | None, BeforeValidator(_flag)]


def dicts(value: Any) -> list[Any]:
    """The entries of a list that are mappings (rows of another shape are skipped, as the reports always did)."""
    return [v for v in value if isinstance(v, dict)] if isinstance(value, (list, tuple)) else []


class KindMetrics(BaseModel):
    """A kind's metrics of one run (the default knows no field: a kind that reads none)."""

    model_config = ConfigDict(extra="ignore", frozen=True)
