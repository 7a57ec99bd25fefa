"""JSON encoding of values that leave Python: call results, streamed items, events, saved files.

One encoder so that ``emit``, results and ``save_file("x.json", ...)`` agree on what is
serializable. Strict JSON (no NaN / Infinity) because the gateway and browsers parse it.
"""

from __future__ import annotations

import dataclasses
import datetime
import decimal
import json
import pathlib
import sys
import uuid
from collections.abc import Mapping
from typing import Any

__all__ = ["dumps"]


def _default(obj: Any) -> Any:
    """Convert the extra types we support into plain JSON values; refuse everything else."""
    if isinstance(obj, (set, frozenset)):
        try:
            return sorted(obj)
        except TypeError:  # mixed or unorderable members: keep iteration order
            return list(obj)
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return dataclasses.asdict(obj)
    # Look pydantic up instead of importing it: a model instance implies it is already loaded,
    # and importing it here would cost every worker start-up time.
    pydantic = sys.modules.get("pydantic")
    if pydantic is not None and isinstance(obj, pydantic.BaseModel):
        return obj.model_dump(mode="json")
    if isinstance(obj, (datetime.datetime, datetime.date, datetime.time)):
        return obj.isoformat()
    if isinstance(obj, uuid.UUID):
        return obj.hex
    if isinstance(obj, pathlib.PurePath):
        return str(obj)
    if isinstance(obj, decimal.Decimal):
        return float(obj)
    if isinstance(obj, Mapping):  # e.g. the read-only config view
        return dict(obj)
    raise TypeError(f"Object of type {type(obj).__name__} is not JSON serializable")


# A shared encoder instance: building one per call is measurable on the hot path.
_ENCODER = json.JSONEncoder(separators=(",", ":"), allow_nan=False, default=_default)


def dumps(obj: Any) -> str:
    """Encode ``obj`` as compact, strict JSON.

    Raises TypeError (unsupported type) or ValueError (NaN, infinity, circular reference).
    """
    return _ENCODER.encode(obj)
