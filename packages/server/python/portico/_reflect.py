"""Reflection of an interface class for the bridge's ``modules`` and ``schema`` ops.

Owns turning classes, methods and annotations into plain JSON: docstrings, signatures,
parameters, readable annotation strings, widget assets and source locations. Which methods are
remotely callable is the worker's rule (worker.py); the config schema is _jsonschema.py.

Widget assets: a class is a widget when it declares ``_esm`` or when the file
``<module file without .py>.widget.js`` exists beside its module (``pkg/__init__.widget.js`` for a
package ``pkg``); ``_css`` or ``<...>.widget.css`` add a stylesheet.
"""

from __future__ import annotations

import inspect
import os
import types
import typing
from typing import Any, Literal, Union, get_args, get_origin

from . import config as _config

__all__ = [
    "WIDGET_SIBLINGS",
    "describe_callable",
    "has_sibling",
    "module_doc",
    "own_doc",
    "parameters",
    "readable",
    "remote_signature",
    "source_location",
    "version_methods",
    "widget_assets",
]

VERSION_PREFIX = "version_"


def own_doc(cls: type) -> str | None:
    """The docstring written on ``cls`` itself, never one inherited from a base (Interface)."""
    doc = vars(cls).get("__doc__")
    return inspect.cleandoc(doc) if isinstance(doc, str) and doc.strip() else None


def module_doc(module: Any) -> str | None:
    doc = getattr(module, "__doc__", None)
    return inspect.cleandoc(doc) if isinstance(doc, str) and doc.strip() else None


# ---------------------------------------------------------------------------------------------
# Annotations


def _name(tp: Any) -> str:
    if tp is None or tp is type(None):
        return "None"
    if tp is Ellipsis:
        return "..."
    if isinstance(tp, str):
        return tp
    if isinstance(tp, typing.ForwardRef):
        return tp.__forward_arg__
    if isinstance(tp, typing.TypeVar):
        return tp.__name__
    if isinstance(tp, list):  # the parameter list of Callable[[int], str]
        return "[" + ", ".join(_name(item) for item in tp) + "]"
    origin = get_origin(tp)
    if origin is typing.Annotated:
        return _name(get_args(tp)[0])
    if origin in (Union, types.UnionType):
        return " | ".join(_name(arm) for arm in get_args(tp))
    if origin is Literal:
        return "Literal[" + ", ".join(repr(value) for value in get_args(tp)) + "]"
    if origin is not None:
        args = get_args(tp)
        head = getattr(origin, "__name__", None) or getattr(tp, "_name", None) or repr(origin).replace("typing.", "")
        return f"{head}[{', '.join(_name(arg) for arg in args)}]" if args else head
    if hasattr(tp, "__supertype__") and hasattr(tp, "__name__"):  # typing.NewType
        return tp.__name__
    if isinstance(tp, type):
        return tp.__qualname__
    return repr(tp).replace("typing.", "")


def readable(annotation: Any) -> str | None:
    """A short spelling of an annotation: ``int``, ``float | None``, ``list[str]``; None if absent."""
    if annotation is inspect.Parameter.empty:
        return None
    return _name(annotation)


# ---------------------------------------------------------------------------------------------
# Signatures


def remote_signature(cls: type, name: str) -> inspect.Signature | None:
    """The signature of method ``name`` as a caller sees it: without ``self``; annotations
    evaluated when they can be (``from __future__ import annotations``), else left as text."""
    attr = getattr(cls, name)
    try:
        signature = inspect.signature(attr, eval_str=True)
    except Exception:  # a string annotation that does not evaluate here
        try:
            signature = inspect.signature(attr)
        except (TypeError, ValueError):  # builtins without a signature
            return None
    # A plain function in the class body is bound on instances; static and class methods are not
    # (getattr on the class already bound a classmethod).
    if inspect.isfunction(inspect.getattr_static(cls, name)) and signature.parameters:
        signature = signature.replace(parameters=list(signature.parameters.values())[1:])
    return signature


def parameters(signature: inspect.Signature | None) -> list[dict[str, Any]]:
    """``[{name, kind, default?, annotation}]``; ``default`` is absent when there is none or it is
    not JSON."""
    out: list[dict[str, Any]] = []
    for parameter in signature.parameters.values() if signature is not None else ():
        entry: dict[str, Any] = {"name": parameter.name, "kind": parameter.kind.name.lower()}
        if parameter.default is not inspect.Parameter.empty:
            value, error = _config._json_default(parameter.default)
            if error is None:
                entry["default"] = value
        entry["annotation"] = readable(parameter.annotation)
        out.append(entry)
    return out


def describe_callable(cls: type, name: str, returns: bool = False) -> dict[str, Any]:
    """``{name, signature, doc, parameters}`` of method ``name``, and ``returns`` (the readable
    return annotation or None) when asked."""
    signature = remote_signature(cls, name)
    entry = {
        "name": name,
        "signature": str(signature) if signature is not None else "(...)",
        "doc": inspect.getdoc(getattr(cls, name)) or None,
        "parameters": parameters(signature),
    }
    if returns:
        entry["returns"] = readable(signature.return_annotation) if signature is not None else None
    return entry


def version_methods(cls: type) -> list[dict[str, Any]]:
    """Every ``version_<name>`` method, inherited ones included, sorted by name."""
    out = []
    for attr in sorted(dir(cls)):
        if attr.startswith(VERSION_PREFIX) and len(attr) > len(VERSION_PREFIX) and callable(getattr(cls, attr, None)):
            entry = describe_callable(cls, attr)
            entry["name"] = attr[len(VERSION_PREFIX) :]
            out.append(entry)
    return out


# ---------------------------------------------------------------------------------------------
# Files


#: The sibling file that provides each widget asset: ``<module file without .py><suffix>``.
WIDGET_SIBLINGS = {"esm": ".widget.js", "css": ".widget.css"}


def has_sibling(module_file: str | None, asset: str) -> bool:
    """Whether the sibling file of ``asset`` (``"esm"`` or ``"css"``) exists beside the module."""
    if not module_file or not module_file.endswith(".py"):
        return False
    return os.path.isfile(module_file[: -len(".py")] + WIDGET_SIBLINGS[asset])


def widget_assets(cls: type, module_file: str | None) -> dict[str, bool] | None:
    """``{esm, css}``: whether ``cls`` declares ``_esm`` / ``_css`` or the module's sibling file
    exists; None when neither asset does."""
    assets = {asset: bool(getattr(cls, f"_{asset}", None)) or has_sibling(module_file, asset) for asset in WIDGET_SIBLINGS}
    return assets if any(assets.values()) else None


def source_location(cls: type, project: str) -> tuple[str | None, int | None]:
    """``(path relative to the project with '/', 1-based line)`` of the class, or Nones when it
    is defined outside the project (or nowhere, like a class made by ``type()``)."""
    try:
        path = inspect.getsourcefile(cls) or inspect.getfile(cls)
    except (OSError, TypeError):
        return None, None
    real, root = os.path.realpath(path), os.path.realpath(project)
    try:
        inside = os.path.commonpath([real, root]) == root
    except ValueError:  # another drive
        inside = False
    if not inside:
        return None, None
    try:
        line: int | None = inspect.getsourcelines(cls)[1]
    except (OSError, TypeError):
        line = None
    return os.path.relpath(real, root).replace(os.sep, "/"), line
