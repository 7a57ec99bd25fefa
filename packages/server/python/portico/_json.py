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
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["dumps", "encode_string"]


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


def _direct_c_encoder() -> Callable[[Any], str] | None:
    """What ``_ENCODER.encode`` ends up calling (json's C encoder, with a fresh circular-reference
    table per value), called directly: JSONEncoder.encode and iterencode around it cost more than
    encoding a small call result does (~2.5 of ~4 us). None where this interpreter's json module
    does not offer it the same way, checked against ``_ENCODER`` once."""
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is None:
        return None
    ascii_string = json.encoder.encode_basestring_ascii

    def encode(obj: Any) -> str:
        return "".join(make({}, _default, ascii_string, None, ":", ",", False, False, False)(obj, 0))

    sample = {"s": "\u00e9\n", "n": [1, -2.5, 1e300, None, True], "t": (1,), "d": {"1": datetime.date(2024, 1, 2)}}
    try:
        if encode(sample) != _ENCODER.encode(sample) or encode("x") != _ENCODER.encode("x"):
            return None
    except Exception:
        return None
    return encode


_encode = _direct_c_encoder() or _ENCODER.encode


#: ``dumps`` of a str (what the encoder calls for one): a str result needs no encoder built.
encode_string: Callable[[str], str] = json.encoder.encode_basestring_ascii


def dumps(obj: Any) -> str:
    """Encode ``obj`` as compact, strict JSON.

    Raises TypeError (unsupported type) or ValueError (NaN, infinity, circular reference).
    """
    return _encode(obj)
