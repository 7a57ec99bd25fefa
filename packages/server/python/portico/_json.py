"""JSON encoding of values that leave Python: call results, streamed items, events, widget state
and messages, saved files.

One encoder so that ``emit``, results, widget values and ``save_file("x.json", ...)`` agree on
what is serializable, and what each value becomes (the table of docs/writing/values.md):

- JSON's own types as they are; tuples as arrays, sets as sorted arrays, dataclasses and
  mappings as objects, pydantic models as their ``model_dump(mode="json")``;
- numpy (never imported here: looked up in ``sys.modules``, so a value of it implies it is
  loaded) as Jupyter's kernel sends it: ``bool_`` → true/false, integers → numbers, floats →
  numbers (``float()`` of them), arrays of any shape → nested arrays (``tolist()``),
  ``datetime64`` → ISO 8601 text;
- NaN, Infinity and -Infinity (Python, numpy or Decimal) → the strings ``"NaN"``,
  ``"Infinity"``, ``"-Infinity"``: strict JSON, which browsers and the gateway parse, in the
  spellings JavaScript's ``Number()`` and Python's ``float()`` both read back (Jupyter's fallback
  writes ``repr()``, ``"nan"`` / ``"inf"``, which ``Number()`` reads as NaN for both);
- ``datetime`` / ``date`` / ``time`` → ``isoformat()``; ``Decimal`` → a number (``float()``);
  ``PurePath`` (so ``Path``) → its text; ``UUID`` → 32 hex digits;
- anything else raises TypeError naming the type (``unserializable_result`` for a call).

``NONFINITE`` is the way back: where a receiver declares a float (a method parameter annotated
``float``, a ``Float`` trait of a served anywidget) the worker reads those strings as the floats.
"""

from __future__ import annotations

import dataclasses
import datetime
import decimal
import json
import math
import pathlib
import sys
import uuid
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["NONFINITE", "dumps", "encode_string", "strict_dumps"]

#: The strings non-finite floats are written as, and read back from where a float is declared.
#: Jupyter's ``repr()`` spellings are read back too (not written: JavaScript cannot read "inf").
NONFINITE: dict[str, float] = {
    "NaN": math.nan,
    "Infinity": math.inf,
    "-Infinity": -math.inf,
    "nan": math.nan,
    "inf": math.inf,
    "-inf": -math.inf,
}


def _number(value: float) -> float | str:
    """``value``, or its string when JSON has no number for it."""
    if math.isfinite(value):
        return value
    return "NaN" if value != value else "Infinity" if value > 0 else "-Infinity"


def _numpy(numpy: Any, obj: Any) -> Any:
    """A numpy array or scalar as plain values; ``_default``'s TypeError for the rest (complex,
    timedelta64, bytes_, void, object scalars)."""
    if isinstance(obj, numpy.ndarray):
        kind = obj.dtype.kind
        if kind == "M":  # tolist() would give ints at ns precision: keep the time
            return numpy.datetime_as_string(obj).tolist()
        if kind != "m":  # timedelta64: a count of its unit, refused as timedelta is
            return obj.tolist()
    elif isinstance(obj, numpy.bool_):
        return bool(obj)
    elif isinstance(obj, numpy.timedelta64):  # an integer subclass in numpy
        pass
    elif isinstance(obj, numpy.integer):
        return int(obj)
    elif isinstance(obj, numpy.floating):
        return _number(float(obj))
    elif isinstance(obj, numpy.datetime64):
        return str(numpy.datetime_as_string(obj))
    return _refuse(obj)


def _refuse(obj: Any) -> Any:
    raise TypeError(f"Object of type {type(obj).__name__} is not JSON serializable")


def _default(obj: Any) -> Any:
    """Convert the extra types we support into plain JSON values; refuse everything else."""
    # Look numpy and pydantic up instead of importing them: a value of theirs implies they are
    # loaded, and importing them here would cost every worker start-up time.
    numpy = sys.modules.get("numpy")
    if numpy is not None and isinstance(obj, (numpy.ndarray, numpy.generic)):
        return _numpy(numpy, obj)
    if isinstance(obj, (datetime.datetime, datetime.date, datetime.time)):
        return obj.isoformat()
    if isinstance(obj, (set, frozenset)):
        try:
            return sorted(obj)
        except TypeError:  # mixed or unorderable members: keep iteration order
            return list(obj)
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return dataclasses.asdict(obj)
    pydantic = sys.modules.get("pydantic")
    if pydantic is not None and isinstance(obj, pydantic.BaseModel):
        return obj.model_dump(mode="json")
    if isinstance(obj, uuid.UUID):
        return obj.hex
    if isinstance(obj, pathlib.PurePath):
        return str(obj)
    if isinstance(obj, decimal.Decimal):
        return _number(math.nan if obj.is_snan() else float(obj))  # float() refuses a signaling NaN
    if isinstance(obj, Mapping):  # e.g. the read-only config view
        return dict(obj)
    return _refuse(obj)


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

_KEY_TYPES = (str, int, float, type(None))  # bool is an int


def _plain(obj: Any, active: set[int]) -> Any:
    """``obj`` with what json's encoder refuses by itself made plain: non-finite floats as their
    strings (also inside what ``_default`` converts) and dict keys of our extra types (a numpy
    integer, a date) as the JSON key they convert to. ``active``: the containers being walked,
    for json's own circular-reference error."""
    if isinstance(obj, (str, int)) or obj is None:  # bool is an int
        return obj
    if isinstance(obj, float):
        return _number(obj)
    if isinstance(obj, (dict, list, tuple)):
        if id(obj) in active:
            raise ValueError("Circular reference detected")
        active.add(id(obj))
        try:
            if isinstance(obj, dict):
                return {_key(key): _plain(value, active) for key, value in obj.items()}
            return [_plain(item, active) for item in obj]
        finally:
            active.discard(id(obj))
    return _plain(_default(obj), active)


def _key(key: Any) -> Any:
    """A dict key as json writes it: str, int, float (non-finite ones as their strings), bool,
    None, or what ``_default`` converts it to when that is one of those."""
    plain = key
    if not isinstance(plain, _KEY_TYPES):
        try:
            plain = _default(key)
        except TypeError:
            plain = ()  # refused below
        if not isinstance(plain, _KEY_TYPES):
            raise TypeError(f"keys must be str, int, float, bool or None, not {type(key).__name__}")
    return _number(plain) if isinstance(plain, float) else plain


def dumps(obj: Any) -> str:
    """Encode ``obj`` as compact, strict JSON, as the module docstring's table says.

    Raises TypeError (unsupported type) or ValueError (circular reference).
    """
    try:
        return _encode(obj)
    except (TypeError, ValueError):
        # json refused a non-finite float or a key it does not know (the C encoder has no hook
        # for either): encode a copy made plain. Only such values pay for the walk in Python;
        # values still unsupported raise again, from the walk.
        return _encode(_plain(obj, set()))


def strict_dumps(obj: Any) -> str:
    """``dumps`` that refuses non-finite floats (ValueError) instead of writing them as strings,
    and keys json does not know (TypeError): for a config, whose JSON is its identity."""
    return _encode(obj)
