"""What is callable remotely, and how each method runs.

Owns the one rule for what ``call`` accepts (``schema`` lists what passes it), the kind of a
method (plain, async, generator, async generator: which decides how it runs and streams) and a
cache of both per (class, name), dropped by ``invalidate``.
"""

from __future__ import annotations

import inspect
import types
import typing
from dataclasses import dataclass
from typing import Any, Callable, Protocol

from .._json import NONFINITE
from ..interface import Interface
from .protocol import Refusal

class Live(Protocol):
    """What methods need of a live instance (``instances.Instance``)."""

    obj: Any
    label: str  # "module.Class", for messages


# Method kinds, decided once per (class, name); also the `kind` of a method in `schema`.
SYNC, ASYNC, GEN, AGEN = "method", "async", "generator", "async_generator"
#: Hooks the worker's own ops invoke; never callable through `call` unless in __api_methods__.
_HOOKS = frozenset({"read", "widget_state", "widget_update", "widget_message"})


@dataclass(slots=True)
class Method:
    kind: str
    signature: inspect.Signature | None
    #: For a signature of plain parameters only (no ``*args``, ``**kwargs``, positional- or
    #: keyword-only ones): their names in order, and how many have no default. ``check`` then
    #: decides most calls without ``Signature.bind``, the largest single cost of a small call
    #: in the worker's profile (test_worker_methods.py compares the two on generated calls).
    plain: tuple[str, ...] | None = None
    required: int = 0
    #: Parameters annotated ``float`` (or a union of float with int or None): the strings that
    #: NaN and infinities travel as (``_json.NONFINITE``) are read back as floats for them.
    floats: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        if self.signature is None:
            return
        params = list(self.signature.parameters.values())
        if all(p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD for p in params):
            self.plain = tuple(p.name for p in params)
            self.required = sum(1 for p in params if p.default is inspect.Parameter.empty)
            # Defaults must come last for the count above to mean "the first `required` names".
            if any(p.default is inspect.Parameter.empty for p in params[self.required :]):
                self.plain = None

    def floats_back(self, args: list[Any], kwargs: dict[str, Any]) -> tuple[list[Any], dict[str, Any]]:
        """``args`` and ``kwargs`` (which bind) with ``"NaN"``, ``"Infinity"`` or ``"-Infinity"``
        given for a parameter in ``floats`` turned into that float; as they are when none is."""
        if not any(type(value) is str and value in NONFINITE for value in (*args, *kwargs.values())):
            return args, kwargs
        assert self.signature is not None  # floats come from it
        bound = self.signature.bind(*args, **kwargs)
        for name in self.floats:
            value = bound.arguments.get(name)
            if type(value) is str and value in NONFINITE:
                bound.arguments[name] = NONFINITE[value]
        return list(bound.args), bound.kwargs

    def check(self, args: list[Any], kwargs: dict[str, Any]) -> None:
        """Raise TypeError (as ``Signature.bind`` would) unless a call with these arguments binds:
        ``Signature.bind`` itself, unless ``plain`` says without it that the call binds."""
        if self.signature is None:
            return
        plain = self.plain
        positional = len(args)
        if plain is not None and not kwargs and self.required <= positional <= len(plain):
            return  # most calls: enough positional arguments, and no more than the parameters
        if plain is None or positional > len(plain) or not all(isinstance(k, str) for k in kwargs):
            self.signature.bind(*args, **kwargs)  # the general case, and its exact message
            return
        for name in kwargs:
            try:
                index = plain.index(name)
            except ValueError:
                index = -1
            if index < 0 or index < positional:
                self.signature.bind(*args, **kwargs)  # unknown or repeated: bind words the error
                return
        if positional < self.required and any(name not in kwargs for name in plain[positional : self.required]):
            self.signature.bind(*args, **kwargs)


class Methods:
    """The checked kind and signature of each (class, method name) called so far."""

    def __init__(self, outdated: Callable[[type], bool] | None = None) -> None:
        #: (class, name) -> its Method, or the refusal's (code, message). Calls reads it
        #: directly for its fast path; only ``get`` and ``forget`` change it.
        self.entries: dict[tuple[type, str], Method | tuple[str, str]] = {}
        #: Whether a class comes from an older import of its module (``Modules.outdated``): a
        #: method missing on it may be one added on disk since, which the refusal then says.
        self._outdated = outdated

    def get(self, instance: Live, name: str) -> Method:
        """``name`` on ``instance``, or the refusal (cached too) for calling it remotely."""
        cls = type(instance.obj)
        entry = self.entries.get((cls, name))
        if type(entry) is Method:  # most calls: a method checked before
            return entry
        if entry is None:
            try:
                entry = self._inspect_method(instance, name)
            except Refusal as refusal:
                entry = (refusal.code, refusal.message)
            self.entries[(cls, name)] = entry
        if isinstance(entry, tuple):
            code, message = entry
            if code == "method_not_found" and self._outdated is not None and self._outdated(cls):
                message += (
                    f"; this live instance was made before {instance.label.rpartition('.')[0]}'s source changed on disk"
                    " and keeps the class it was made with: release it (POST /v1/interfaces/{uuid}/release, or a"
                    " release frame) and its next use makes it from the new code, with its saved widget state;"
                    " `portico serve --reload` does that on every edit"
                )
            raise Refusal(code, message)
        return entry

    def _inspect_method(self, instance: Live, name: str) -> Method:
        _check_remote(type(instance.obj), instance.label, name)
        bound = getattr(instance.obj, name)
        try:
            signature: inspect.Signature | None = inspect.signature(bound)
        except (TypeError, ValueError):  # builtins without a signature: let the call decide
            signature = None
        floats = _float_parameters(bound, signature) if signature is not None else frozenset()
        return Method(method_kind(bound), signature, floats=floats)

    def forget(self, affected: Callable[[str], bool]) -> None:
        """Drop the entries of classes from the modules ``affected`` names (``invalidate``)."""
        for key in [key for key in list(self.entries) if affected(getattr(key[0], "__module__", ""))]:
            self.entries.pop(key, None)


def _check_remote(cls: type, label: str, name: str) -> None:
    """Raise the refusal for calling ``name`` on ``cls`` remotely, unless it is allowed.

    The one rule for what is callable (calls check it; ``schema`` lists what passes it): a public
    name defined by the project's classes, not a version method or Config; or, when the class
    sets ``__api_methods__``, exactly the names listed there. Either way it must be a callable
    attribute of the class that is not a class.
    """
    missing = object()
    attr = getattr(cls, name, missing)
    if name.startswith("_"):
        raise Refusal("method_forbidden", f"Method {name!r} is private on {label}")
    explicit = getattr(cls, "__api_methods__", None)
    if explicit is not None:
        if name not in explicit:
            if attr is missing:
                raise Refusal("method_not_found", f"Method {name!r} not found on {label}")
            raise Refusal("method_forbidden", f"Method {name!r} is not listed in {label}.__api_methods__")
    else:
        if not _defined_below_interface(cls, name):
            if attr is missing:
                raise Refusal("method_not_found", f"Method {name!r} not found on {label}")
            raise Refusal("method_forbidden", f"Method {name!r} of {label} comes from Interface and is not callable remotely")
        if name.startswith("version_") or name == "Config":
            raise Refusal("method_forbidden", f"{name!r} on {label} is not callable remotely (versions and Config are not methods)")
        if name in _HOOKS:
            raise Refusal("method_forbidden", f"{name!r} on {label} is a hook served by its own op, not a remotely callable method")
    if attr is missing or isinstance(attr, type) or not callable(attr):
        raise Refusal("method_not_found", f"Method {name!r} not found on {label}")


def remote_method_names(cls: type) -> list[str]:
    """Every name ``_check_remote`` allows on ``cls``, sorted."""
    explicit = getattr(cls, "__api_methods__", None)
    candidates = explicit if explicit is not None else dir(cls)
    names = set()
    for name in candidates:
        if not isinstance(name, str):
            continue
        try:
            _check_remote(cls, "", name)
        except Refusal:
            continue
        names.add(name)
    return sorted(names)


#: What a float parameter's annotation may name besides float, where a NaN string still means the float.
_NUMERIC = frozenset({float, int, type(None)})


def _float_parameters(fn: Any, signature: inspect.Signature) -> frozenset[str]:
    """The parameters of ``fn`` annotated ``float``, ``float | None`` or ``int | float``; none
    where its annotations do not resolve (a forward reference to a missing name, say)."""
    try:
        hints = typing.get_type_hints(fn)
    except Exception:
        return frozenset()
    names = set()
    for param in signature.parameters.values():
        hint = hints.get(param.name)
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD) or hint is None:
            continue
        if typing.get_origin(hint) in (typing.Union, types.UnionType):
            members = set(typing.get_args(hint))
            if float in members and members <= _NUMERIC:
                names.add(param.name)
        elif hint is float:
            names.add(param.name)
    return frozenset(names)


def method_kind(fn: Any) -> str:
    if inspect.isasyncgenfunction(fn):
        return AGEN
    if inspect.iscoroutinefunction(fn):
        return ASYNC
    if inspect.isgeneratorfunction(fn):
        return GEN
    return SYNC


def _defined_below_interface(cls: type, name: str) -> bool:
    """Whether ``name`` comes from the project's classes rather than from Interface itself."""
    for klass in cls.__mro__:
        if klass is Interface:
            return False
        if name in vars(klass):
            return True
    return False

