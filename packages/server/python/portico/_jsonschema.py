"""The JSON Schema (draft 2020-12) of a ``Config`` declaration, for the bridge's ``schema`` op.

Owns mapping annotations to JSON Schema and finding field descriptions. The fields themselves
(names, defaults, what is required, what is a nested config) come from config.py, so the schema
and validation never disagree about them.

- Plain annotated classes and dataclasses: one property per field; ``default`` is the JSON form
  of the default (the encoder of results); descriptions come from ``Annotated[T, "text"]``, then
  dataclass ``field(metadata={"description": ...})``, then the attribute docstring (a string
  literal right after the field in the class body).
- pydantic models: ``model_json_schema()`` with every ``$ref`` inlined, defaults of
  ``default_factory`` fields added, and ``Annotated[T, "text"]`` descriptions kept. Only a model
  that refers to itself keeps a reference: ``{"$ref": "#/$defs/Name"}`` with ``$defs`` at the top
  of the returned schema, so the result is always self-contained.
- Every object of config fields says ``"additionalProperties": false`` (config.py refuses
  unknown keys), except a pydantic model declared with ``extra="allow"``.
"""

from __future__ import annotations

import ast
import collections.abc
import dataclasses
import datetime
import decimal
import enum
import inspect
import pathlib
import textwrap
import types
import typing
import uuid
from typing import Any, Literal, Union, get_args, get_origin

from . import config as _config
from ._reflect import own_doc

__all__ = ["DIALECT", "config_schema", "field_descriptions"]

DIALECT = "https://json-schema.org/draft/2020-12/schema"

_DEFS_REF = "#/$defs/"
_STRING_FORMATS: tuple[tuple[type, str | None], ...] = (
    (datetime.datetime, "date-time"),  # before date: datetime is a date subclass
    (datetime.date, "date"),
    (datetime.time, "time"),
    (uuid.UUID, "uuid"),
    (pathlib.PurePath, None),
)


def config_schema(config_cls: type | None) -> dict[str, Any]:
    """The JSON Schema of ``config_cls`` (``None``: no config, an empty object)."""
    builder = _Builder()
    if config_cls is None:
        schema = _closed_object({}, [])
    else:
        schema = builder.type_schema(config_cls)
        if schema.get("type") != "object":  # not a config declaration at all: nothing is accepted
            schema = _closed_object({}, [])
    out = {"$schema": DIALECT, **schema}
    if builder.defs:
        out["$defs"] = builder.defs
    return out


def field_descriptions(config_cls: Any) -> dict[str, str]:
    """``{field: description}`` of a Config declaration, from what ``config_schema`` reads: a
    pydantic field's ``Field(description=...)`` (or ``Annotated`` text); a plain or dataclass
    field's ``Annotated[T, "text"]``, dataclass ``field(metadata={"description": ...})``, then its
    attribute docstring. Fields without one are left out."""
    if config_cls is None:
        return {}
    if _config._pydantic_model(config_cls):
        found = {name: info.description or _text(info.metadata) for name, info in config_cls.model_fields.items()}
    elif _config._is_config_class(config_cls):
        hints = _config._type_hints(config_cls, extras=True)
        metadata = {f.name: f.metadata.get("description") for f in dataclasses.fields(config_cls)} if dataclasses.is_dataclass(config_cls) else {}
        docs = _attribute_docs(config_cls)
        found = {}
        for name, spec in _config._schema(config_cls).fields.items():
            hint = hints.get(name, spec.annotation)
            described = metadata.get(name)
            found[name] = (
                (_text(get_args(hint)[1:]) if get_origin(hint) is typing.Annotated else None)
                or (inspect.cleandoc(described) if isinstance(described, str) and described.strip() else None)
                or docs.get(name)
            )
    else:
        return {}
    return {name: text for name, text in found.items() if text}


def _closed_object(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": required, "additionalProperties": False}


def _json_value(value: Any) -> tuple[bool, Any]:
    """``(True, JSON form)`` with the encoder of results, or ``(False, None)``."""
    encoded, error = _config._json_default(value)
    return (False, None) if error is not None else (True, encoded)


def _text(metadata: Any) -> str | None:
    """The first non-empty string among ``Annotated`` metadata items."""
    for item in metadata:
        if isinstance(item, str) and item.strip():
            return inspect.cleandoc(item)
    return None


class _Builder:
    def __init__(self) -> None:
        self.defs: dict[str, Any] = {}  # recursive pydantic models, referenced as #/$defs/Name
        self._open: set[type] = set()  # plain config classes being described (self-reference guard)

    # -- annotations ----------------------------------------------------------------------------

    def type_schema(self, tp: Any) -> dict[str, Any]:
        """The schema of one annotation; ``{}`` (anything) for what JSON Schema cannot say."""
        if get_origin(tp) is typing.Annotated:
            inner, *metadata = get_args(tp)
            schema = self.type_schema(inner)
            description = _text(metadata)
            return {**schema, "description": description} if description else schema
        if tp is Any or tp is object or isinstance(tp, (str, typing.ForwardRef, typing.TypeVar)):
            return {}
        if tp is None or tp is type(None):
            return {"type": "null"}
        if hasattr(tp, "__supertype__"):  # typing.NewType
            return self.type_schema(tp.__supertype__)
        origin = get_origin(tp)
        if origin is Literal:
            values = [value for ok, value in map(_json_value, get_args(tp)) if ok]
            return {"enum": values}
        if origin in (Union, types.UnionType):
            return {"anyOf": [self.type_schema(arm) for arm in get_args(tp)]}
        for python, name in ((bool, "boolean"), (int, "integer"), (float, "number"), (str, "string")):
            if tp is python:
                return {"type": name}
        if tp is tuple or origin is tuple:
            return self._tuple(get_args(tp))
        if tp in _config._SEQUENCES or origin in _config._SEQUENCES:
            schema: dict[str, Any] = {"type": "array"}
            args = get_args(tp)
            if args:
                schema["items"] = self.type_schema(args[0])
            if (origin or tp) in (set, frozenset, collections.abc.Set):
                schema["uniqueItems"] = True
            return schema
        if tp in _config._MAPPINGS or origin in _config._MAPPINGS:
            schema = {"type": "object"}
            args = get_args(tp)
            if len(args) == 2 and args[1] is not Any:
                schema["additionalProperties"] = self.type_schema(args[1])
            return schema
        if isinstance(tp, type):
            return self._class(tp)
        return {}

    def _tuple(self, args: tuple[Any, ...]) -> dict[str, Any]:
        if not args:
            return {"type": "array"}
        if len(args) == 2 and args[1] is Ellipsis:
            return {"type": "array", "items": self.type_schema(args[0])}
        if args == ((),):  # tuple[()]
            args = ()
        return {
            "type": "array",
            "prefixItems": [self.type_schema(arm) for arm in args],
            "minItems": len(args),
            "maxItems": len(args),
        }

    def _class(self, tp: type) -> dict[str, Any]:
        if issubclass(tp, enum.Enum):
            return {"enum": [value for ok, value in (_json_value(member.value) for member in tp) if ok]}
        if _config._pydantic_model(tp):
            return self._pydantic(tp)
        if _config._is_config_class(tp):
            return self._declared(tp)
        if issubclass(tp, decimal.Decimal):
            return {"type": "number"}
        for python, fmt in _STRING_FORMATS:
            if issubclass(tp, python):
                return {"type": "string", "format": fmt} if fmt else {"type": "string"}
        return {}

    # -- plain classes and dataclasses ----------------------------------------------------------

    def _declared(self, cls: type) -> dict[str, Any]:
        if cls in self._open:  # a config class containing itself: no finite inline form
            return {}
        self._open.add(cls)
        try:
            fields = _config._schema(cls).fields
            hints = _config._type_hints(cls, extras=True)
            descriptions = field_descriptions(cls)
            properties: dict[str, Any] = {}
            required: list[str] = []
            for name, spec in fields.items():
                prop = dict(self.type_schema(hints.get(name, spec.annotation)))
                if name in descriptions:
                    prop["description"] = descriptions[name]
                if spec.default is _config._MISSING:
                    required.append(name)  # also a default that is not JSON: validation insists on a value
                elif spec.default is not _config._NESTED:
                    prop["default"] = spec.default
                properties[name] = prop
            schema = _closed_object(properties, required)
            doc = _config_doc(cls)
            if doc:
                schema["description"] = doc
            return schema
        finally:
            self._open.discard(cls)

    # -- pydantic -------------------------------------------------------------------------------

    def _pydantic(self, model: type) -> dict[str, Any]:
        try:
            raw = model.model_json_schema()  # type: ignore[attr-defined]
        except Exception:  # a field type pydantic has no JSON Schema for
            return self._pydantic_fields(model, set())
        schema = _inline(raw, raw.get("$defs", {}), frozenset(), self.defs)
        _complete(model, schema, set())
        _close(schema)
        for definition in self.defs.values():
            _close(definition)
        return schema

    def _pydantic_fields(self, model: type, seen: set[type]) -> dict[str, Any]:
        """Our own reading of a model's fields, for models pydantic cannot describe."""
        if model in seen:
            return {}
        seen = seen | {model}
        properties: dict[str, Any] = {}
        required: list[str] = []
        for name, info in model.model_fields.items():  # type: ignore[attr-defined]
            annotation = info.annotation
            prop = dict(self._pydantic_fields(annotation, seen) if _config._pydantic_model(annotation) else self.type_schema(annotation))
            description = info.description or _text(info.metadata)
            if description:
                prop["description"] = description
            if info.is_required():
                required.append(name)
            else:
                ok, value = _json_value(info.get_default(call_default_factory=True))
                if ok:
                    prop["default"] = value
            properties[info.alias or name] = prop
        schema = _closed_object(properties, required)
        if model.model_config.get("extra") == "allow":  # type: ignore[attr-defined]
            schema["additionalProperties"] = True
        return schema


def _config_doc(cls: type) -> str | None:
    doc = own_doc(cls)
    if doc is not None and dataclasses.is_dataclass(cls):
        # Without a docstring, @dataclass writes one: "Name(field: type = default, ...)".
        try:
            if doc == cls.__name__ + str(inspect.signature(cls)).replace(" -> None", ""):
                return None
        except (TypeError, ValueError):
            pass
    return doc


def _attribute_docs(cls: type) -> dict[str, str]:
    """``{field: docstring}`` from string literals right after annotated fields, bases first."""
    docs: dict[str, str] = {}
    for klass in reversed(cls.__mro__[:-1]):
        try:
            tree = ast.parse(textwrap.dedent(inspect.getsource(klass)))
        except (OSError, TypeError, SyntaxError, ValueError):  # no source (REPL, C), or it changed
            continue
        body = next((node.body for node in tree.body if isinstance(node, ast.ClassDef)), [])
        for statement, following in zip(body, body[1:]):
            if (
                isinstance(statement, ast.AnnAssign)
                and isinstance(statement.target, ast.Name)
                and isinstance(following, ast.Expr)
                and isinstance(following.value, ast.Constant)
                and isinstance(following.value.value, str)
            ):
                docs[statement.target.id] = inspect.cleandoc(following.value.value)
    return docs


def _inline(node: Any, defs: dict[str, Any], open_refs: frozenset[str], sink: dict[str, Any]) -> Any:
    """Replace ``{"$ref": "#/$defs/X"}`` by X's schema (the referring node's own keys win).

    A reference to a definition being inlined (a recursive model) stays a reference; its
    definition is then inlined once more into ``sink``, which becomes the top-level ``$defs``.
    """
    if isinstance(node, list):
        return [_inline(item, defs, open_refs, sink) for item in node]
    if not isinstance(node, dict):
        return node
    own = {key: _inline(value, defs, open_refs, sink) for key, value in node.items() if key not in ("$ref", "$defs")}
    ref = node.get("$ref")
    if not (isinstance(ref, str) and ref.startswith(_DEFS_REF) and ref[len(_DEFS_REF) :] in defs):
        return {"$ref": ref, **own} if ref is not None else own
    name = ref[len(_DEFS_REF) :]
    if name in open_refs:
        if name not in sink:
            sink[name] = {}  # claimed first, so that the definition's own self-references stop here
            sink[name] = _inline(defs[name], defs, frozenset({name}), sink)
        return {"$ref": ref, **own}
    return {**_inline(defs[name], defs, open_refs | {name}, sink), **own}


def _model_in(annotation: Any) -> type | None:
    """The one pydantic model an annotation holds directly or as ``Optional``; else None."""
    if get_origin(annotation) is typing.Annotated:
        annotation = get_args(annotation)[0]
    arms = get_args(annotation) if get_origin(annotation) in (Union, types.UnionType) else (annotation,)
    models = [arm for arm in arms if _config._pydantic_model(arm)]
    return models[0] if len(models) == 1 else None


def _object_arm(schema: dict[str, Any]) -> dict[str, Any] | None:
    if "properties" in schema:
        return schema
    arms = [arm for arm in schema.get("anyOf", ()) if isinstance(arm, dict) and "properties" in arm]
    return arms[0] if len(arms) == 1 else None


def _complete(model: type, schema: dict[str, Any], seen: set[type]) -> None:
    """Add what ``model_json_schema`` leaves out: ``Annotated`` text and factory defaults."""
    properties = schema.get("properties")
    if model in seen or not isinstance(properties, dict):
        return
    seen = seen | {model}
    for name, info in model.model_fields.items():  # type: ignore[attr-defined]
        keys = [info.alias, info.validation_alias if isinstance(info.validation_alias, str) else None, name]
        prop = next((properties[key] for key in keys if key and isinstance(properties.get(key), dict)), None)
        if prop is None:
            continue
        if "description" not in prop:
            description = _text(info.metadata)
            if description:
                prop["description"] = description
        if "default" not in prop and not info.is_required():
            try:
                ok, value = _json_value(info.get_default(call_default_factory=True))
            except Exception:  # a factory that fails
                ok, value = False, None
            if ok:
                prop["default"] = value
        nested = _model_in(info.annotation)
        target = _object_arm(prop) if nested is not None else None
        if nested is not None and target is not None:
            _complete(nested, target, seen)


def _close(node: Any) -> None:
    """``additionalProperties: false`` on every model object that does not say otherwise."""
    if isinstance(node, list):
        for item in node:
            _close(item)
    elif isinstance(node, dict):
        if node.get("type") == "object" and isinstance(node.get("properties"), dict) and "additionalProperties" not in node:
            node["additionalProperties"] = False
        for value in node.values():
            _close(value)
