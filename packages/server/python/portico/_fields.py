"""The Config as a list of fields, in the reference server's ``ModuleSchema.config_fields`` shape.

``config_fields(Config)`` → ``[{name, type, default, required, description, fields}]``: ``type`` is how Python
writes the annotation (``str(annotation)``: ``<class 'int'>``, ``str | None``,
``typing.Literal['a', 'b']``), because clients written for the reference parse exactly that;
``default`` is the JSON default (null when required); ``description`` is the field's text, from
the sources the JSON Schema reads (``_jsonschema.field_descriptions``: docstring,
``Field(description=...)``, ``Annotated`` text), else null; ``fields`` lists the sub-fields of a nested
config (a config class, an optional one, a list/tuple/set of them, or a dict with them as values)
down to ``MAX_DEPTH``, else null. Plain annotated classes, dataclasses and pydantic models are read
through the same declarations that resolve versions (``config._schema``), so what is listed is
what is validated.
"""

from __future__ import annotations

import types
import typing
from typing import Any, Union, get_args, get_origin

from . import config as _config
from ._jsonschema import field_descriptions

#: Nesting below this depth is not listed (``fields`` is null there), as in the reference.
MAX_DEPTH = 6

_COLLECTIONS = (list, tuple, set, frozenset)


def _nested(annotation: Any) -> type | None:
    """The config class an annotation holds, directly or as the one arm of an optional, the item
    of a collection, or the value of a dict; None for plain value types."""
    if _config._is_config_class(annotation):
        return annotation
    origin, args = get_origin(annotation), get_args(annotation)
    if origin is typing.Annotated:
        return _nested(args[0])
    if origin in (Union, types.UnionType):
        arms = [arm for arm in args if arm is not type(None)]
        return _nested(arms[0]) if len(arms) == 1 else None
    if origin in _COLLECTIONS and args:
        return _nested(args[0])
    if origin is dict and len(args) == 2:
        return _nested(args[1])
    return None


def _field(name: str, annotation: Any, default: Any, required: bool, description: str | None, depth: int) -> dict[str, Any]:
    nested = _nested(annotation)
    return {
        "name": name,
        "type": str(annotation),
        "default": None if required else default,
        "required": required,
        "description": description,
        "fields": config_fields(nested, depth + 1) if nested is not None and depth < MAX_DEPTH else None,
    }


def config_fields(config_cls: Any, depth: int = 0) -> list[dict[str, Any]]:
    """The fields of a Config declaration (empty without one); names with a leading or trailing
    underscore are not config."""
    schema = _config._schema(config_cls)
    descriptions = field_descriptions(config_cls)
    out: list[dict[str, Any]] = []
    if schema.model is not None:
        for name, info in schema.model.model_fields.items():
            if name.startswith("_") or name.endswith("_"):
                continue
            required = info.is_required()
            default = None
            if not required:
                default, error = _config._json_default(info.get_default(call_default_factory=True))
                default = None if error is not None else default
            out.append(_field(name, info.annotation, default, required, descriptions.get(name), depth))
        return out
    for name, field in schema.fields.items():
        if name.endswith("_"):
            continue
        if field.default is _config._NESTED:
            default: Any = _config._defaults(_config._schema(field.annotation))
        elif field.default is _config._MISSING:
            default = None
        else:
            default = field.default
        required = field.default is _config._MISSING and field.default_error is None
        out.append(_field(name, field.annotation, default, required, descriptions.get(name), depth))
    return out
