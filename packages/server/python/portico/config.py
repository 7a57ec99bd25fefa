"""Config schemas and version resolution.

Owns: reading a ``Config`` declaration (plain annotated class, ``@dataclass`` or pydantic model),
validation that reports every problem as an issue ``{"path": "a.b" | None, "message": ...}``, and
the entry points ``resolve`` / ``check_config``. The version grammar (dicts, ``"~name(args)"``,
``"a.b=3"``) and deep merging are _versions.py's; their public names are exported here too.
"""

from __future__ import annotations

import collections.abc
import copy
import dataclasses
import json
import sys
import types
import typing
from dataclasses import dataclass, field
from typing import Any, Literal, Union, get_args, get_origin

from ._json import strict_dumps
from ._versions import Issue, add_issue, deep_merge, normalize_version, parse_arguments, unflatten, version_patch  # noqa: F401  (re-exported)

__all__ = [
    "Issue",
    "Resolved",
    "check_config",
    "deep_merge",
    "normalize_version",
    "parse_arguments",
    "resolve",
    "unflatten",
]


@dataclass
class Resolved:
    """The outcome of ``resolve``: a config is only usable when ``issues`` is empty."""

    config: dict[str, Any]
    version: list[Any]
    issues: list[Issue] = field(default_factory=list)


# ---------------------------------------------------------------------------------------------
# Schemas

_MISSING: Any = object()  # required field
_NESTED: Any = object()  # nested config without an explicit default: its own defaults apply


def _pydantic_model(tp: Any) -> bool:
    # Look pydantic up instead of importing it: a model class implies it is already imported.
    pydantic = sys.modules.get("pydantic")
    return pydantic is not None and isinstance(tp, type) and issubclass(tp, pydantic.BaseModel)


def _is_config_class(tp: Any) -> bool:
    """Whether an annotation names a nested config declaration rather than a value type."""
    if not isinstance(tp, type) or tp.__module__ in ("builtins", "typing", "collections.abc"):
        return False
    if dataclasses.is_dataclass(tp) or _pydantic_model(tp):
        return True
    if issubclass(tp, (int, float, str, bytes, list, tuple, dict, set, frozenset)):
        return False
    return any(vars(klass).get("__annotations__") for klass in tp.__mro__[:-1])


@dataclass
class _Field:
    annotation: Any
    default: Any  # JSON form, _MISSING or _NESTED
    default_error: str | None = None


@dataclass
class _Schema:
    owner: str
    fields: dict[str, _Field]
    model: type | None = None  # a pydantic model: it validates itself


_SCHEMAS: dict[Any, _Schema] = {}


def _type_hints(cls: type, extras: bool = False) -> dict[str, Any]:
    """Resolved field annotations; ``extras`` keeps ``Annotated[...]`` (the schema reads its text)."""
    try:
        return typing.get_type_hints(cls, include_extras=extras)
    except Exception:  # unresolvable forward references: keep what we can, strings mean "any"
        hints: dict[str, Any] = {}
        for klass in reversed(cls.__mro__):
            hints.update(vars(klass).get("__annotations__", {}))
        return hints


def _json_default(value: Any) -> tuple[Any, str | None]:
    try:
        return json.loads(strict_dumps(value)), None
    except (TypeError, ValueError) as exc:
        return _MISSING, f"default is not JSON-serializable: {exc}"


def _make_field(annotation: Any, default: Any) -> _Field:
    if default is _MISSING:
        return _Field(annotation, _NESTED if _is_config_class(annotation) else _MISSING)
    value, error = _json_default(default)
    return _Field(annotation, value, error)


def _schema(config_cls: Any) -> _Schema:
    """The fields of a Config declaration, cached per class."""
    cached = _SCHEMAS.get(config_cls)
    if cached is not None:
        return cached
    if config_cls is None:
        schema = _Schema("", {})
    elif _pydantic_model(config_cls):
        schema = _Schema(config_cls.__qualname__, {}, model=config_cls)
    else:
        hints = _type_hints(config_cls)
        fields: dict[str, _Field] = {}
        if dataclasses.is_dataclass(config_cls):
            for f in dataclasses.fields(config_cls):
                if f.name.startswith("_"):
                    continue
                if f.default is not dataclasses.MISSING:
                    default = f.default
                elif f.default_factory is not dataclasses.MISSING:
                    default = f.default_factory()
                else:
                    default = _MISSING
                fields[f.name] = _make_field(hints.get(f.name, Any), default)
        else:
            # Only annotated names are fields; plain class attributes are helpers, not config.
            for name, annotation in hints.items():
                if name.startswith("_") or get_origin(annotation) is typing.ClassVar:
                    continue
                fields[name] = _make_field(annotation, getattr(config_cls, name, _MISSING))
        schema = _Schema(config_cls.__qualname__, fields)
    _SCHEMAS[config_cls] = schema
    return schema


def _defaults(schema: _Schema) -> dict[str, Any]:
    """The default values a version list is applied to (required fields are absent)."""
    if schema.model is not None:
        out: dict[str, Any] = {}
        for name, info in schema.model.model_fields.items():
            if info.is_required():
                continue
            value, error = _json_default(info.get_default(call_default_factory=True))
            if error is None:
                out[name] = value
        return out
    out = {}
    for name, f in schema.fields.items():
        if f.default is _NESTED:
            out[name] = _defaults(_schema(f.annotation))
        elif f.default is not _MISSING:
            out[name] = copy.deepcopy(f.default)
    return out


# ---------------------------------------------------------------------------------------------
# Validation


def _join(prefix: str, name: Any) -> str:
    return f"{prefix}.{name}" if prefix else str(name)


def _type_name(tp: Any) -> str:
    if tp is None or tp is type(None):
        return "None"
    origin = get_origin(tp)
    if origin in (Union, types.UnionType):
        return " | ".join(_type_name(arm) for arm in get_args(tp))
    if isinstance(tp, type) and origin is None:
        return tp.__name__
    return repr(tp).replace("typing.", "")


def _value_type(value: Any) -> str:
    return "None" if value is None else type(value).__name__


def _unknown_key(issues: list[Issue], path: str, key: str, declared: list[str]) -> None:
    listed = f"declared fields: {', '.join(declared)}" if declared else "no config fields are declared"
    add_issue(issues, path, f"Unknown config key {key!r} ({listed})")


def _validate(schema: _Schema, value: dict[str, Any], prefix: str, issues: list[Issue]) -> dict[str, Any]:
    if schema.model is not None:
        return _validate_pydantic(schema.model, value, prefix, issues)
    fields = schema.fields
    for key in value:
        if key not in fields:
            _unknown_key(issues, _join(prefix, key), key, list(fields))
    out: dict[str, Any] = {}
    for name, f in fields.items():
        path = _join(prefix, name)
        if name in value:
            given = value[name]
            # An unchanged default is the author's choice (`x: int = None`): do not second-guess it.
            if f.default is not _MISSING and f.default is not _NESTED and type(given) is type(f.default) and given == f.default:
                out[name] = given
            else:
                out[name] = _check(given, f.annotation, path, issues)
        elif f.default_error is not None:
            add_issue(issues, path, f.default_error)
        elif f.default is _NESTED:
            out[name] = _validate(_schema(f.annotation), {}, path, issues)
        elif f.default is _MISSING:
            add_issue(issues, path, f"Missing required field {name!r}")
        else:
            out[name] = copy.deepcopy(f.default)
    return out


_SEQUENCES = (list, set, frozenset, collections.abc.Sequence, collections.abc.MutableSequence, collections.abc.Set)
_MAPPINGS = (dict, collections.abc.Mapping, collections.abc.MutableMapping)


def _check(value: Any, tp: Any, path: str, issues: list[Issue]) -> Any:
    """Check one value against an annotation; returns the value in JSON form (tuples → lists)."""
    origin = get_origin(tp)
    if origin is typing.Annotated:
        return _check(value, get_args(tp)[0], path, issues)
    if hasattr(tp, "__supertype__"):  # typing.NewType
        return _check(value, tp.__supertype__, path, issues)

    def wrong() -> Any:
        add_issue(issues, path, f"expected {_type_name(tp)}, got {_value_type(value)}")
        return value

    if tp is Any or tp is object or isinstance(tp, (str, typing.ForwardRef, typing.TypeVar)):
        return value
    if tp is None or tp is type(None):
        return value if value is None else wrong()
    if origin is Literal:
        choices = get_args(tp)
        if any(type(value) is type(choice) and value == choice for choice in choices):
            return value
        add_issue(issues, path, f"expected one of {', '.join(map(repr, choices))}, got {value!r}")
        return value
    if origin in (Union, types.UnionType):
        for arm in get_args(tp):
            scratch: list[Issue] = []
            checked = _check(value, arm, path, scratch)
            if not scratch:
                return checked
        return wrong()
    if tp is bool:
        return value if isinstance(value, bool) else wrong()
    if tp is int:
        return value if isinstance(value, int) and not isinstance(value, bool) else wrong()
    if tp is float:
        return value if isinstance(value, (int, float)) and not isinstance(value, bool) else wrong()
    if tp is str:
        return value if isinstance(value, str) else wrong()
    if tp is tuple or origin is tuple:
        if not isinstance(value, (list, tuple)):
            return wrong()
        args = get_args(tp)
        if not args:
            return list(value)
        if len(args) == 2 and args[1] is Ellipsis:
            return [_check(item, args[0], _join(path, i), issues) for i, item in enumerate(value)]
        if args == ((),):
            args = ()
        if len(value) != len(args):
            add_issue(issues, path, f"expected {len(args)} items, got {len(value)}")
            return list(value)
        return [_check(item, arm, _join(path, i), issues) for i, (item, arm) in enumerate(zip(value, args))]
    if tp in _SEQUENCES or origin in _SEQUENCES:
        if not isinstance(value, (list, tuple)):
            return wrong()
        (item_type,) = get_args(tp) or (Any,)
        return [_check(item, item_type, _join(path, i), issues) for i, item in enumerate(value)]
    if tp in _MAPPINGS or origin in _MAPPINGS:
        if not isinstance(value, dict):
            return wrong()
        args = get_args(tp)
        value_type = args[1] if len(args) == 2 else Any
        out = {}
        for key, item in value.items():
            if not isinstance(key, str):
                add_issue(issues, _join(path, key), f"keys must be strings, got {_value_type(key)}")
            out[key] = _check(item, value_type, _join(path, key), issues)
        return out
    if _is_config_class(tp):
        if not isinstance(value, dict):
            return wrong()
        return _validate(_schema(tp), value, path, issues)
    return value  # an annotation we do not check (datetime, custom classes, ...)


def _pydantic_unknown_keys(model: type, value: dict[str, Any], prefix: str, issues: list[Issue]) -> None:
    """pydantic ignores unknown keys by default; a config typo must be an error instead."""
    if model.model_config.get("extra") in ("allow", "forbid"):  # allowed, or pydantic reports it
        return
    fields = model.model_fields
    names = set(fields) | {info.alias for info in fields.values() if info.alias}
    for key in value:
        if key not in names:
            _unknown_key(issues, _join(prefix, key), key, list(fields))
    for name, info in fields.items():
        nested = value.get(name)
        if not isinstance(nested, dict):
            continue
        annotation = info.annotation
        arms = get_args(annotation) if get_origin(annotation) in (Union, types.UnionType) else (annotation,)
        models = [arm for arm in arms if _pydantic_model(arm)]
        if len(models) == 1:
            _pydantic_unknown_keys(models[0], nested, _join(prefix, name), issues)


def _validate_pydantic(model: type, value: dict[str, Any], prefix: str, issues: list[Issue]) -> dict[str, Any]:
    pydantic = sys.modules["pydantic"]
    _pydantic_unknown_keys(model, value, prefix, issues)
    try:
        instance = model.model_validate(value)
    except pydantic.ValidationError as exc:
        for error in exc.errors():
            loc = ".".join(str(part) for part in error.get("loc", ()))
            add_issue(issues, _join(prefix, loc) if loc else prefix, error.get("msg", "invalid value"))
        return value
    except Exception as exc:  # e.g. a model with unresolved forward references
        add_issue(issues, prefix, f"{model.__qualname__} cannot validate: {type(exc).__name__}: {exc}")
        return value
    return instance.model_dump(mode="json")


def _finish(schema: _Schema, merged: dict[str, Any], issues: list[Issue]) -> dict[str, Any]:
    config = _validate(schema, merged, "", issues)
    try:
        return json.loads(strict_dumps(config))
    except (TypeError, ValueError) as exc:
        add_issue(issues, None, f"Resolved config is not JSON-serializable: {exc}")
        return config


# ---------------------------------------------------------------------------------------------
# Entry points


def resolve(cls: type, version: Any) -> Resolved:
    """Apply ``version`` (left to right, deep-merged) to the defaults of ``cls.Config`` and validate.

    Every problem becomes an issue; processing continues so that one response lists them all.
    """
    schema = _schema(getattr(cls, "Config", None))
    items = normalize_version(version)
    issues: list[Issue] = []
    merged = _defaults(schema)
    for item in items:
        patch = version_patch(cls, item, merged, issues)
        if patch:
            merged = deep_merge(merged, patch)
    return Resolved(_finish(schema, merged, issues), items, issues)


def check_config(cls: type, config: dict[str, Any]) -> tuple[dict[str, Any], list[Issue]]:
    """Validate an already resolved config (sent with every call) against ``cls.Config``.

    Unlike version dicts, keys are taken literally (no dotted-key unflattening).
    """
    schema = _schema(getattr(cls, "Config", None))
    issues: list[Issue] = []
    return _finish(schema, deep_merge(_defaults(schema), config), issues), issues
