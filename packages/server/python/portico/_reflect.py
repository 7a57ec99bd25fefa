"""Reflection of an interface class for the bridge's ``modules`` and ``schema`` ops.

Owns turning classes, methods and annotations into plain JSON: docstrings, signatures,
parameters, readable annotation strings, widget assets and source locations. Which methods are
remotely callable is the worker's rule (worker/methods.py); the config schema is _jsonschema.py.

Widget assets (``widget_asset``, the one rule for the ``widget_assets`` op and the ``widget``
flags of ``modules`` and ``schema``): a class is a widget when it declares ``_esm`` or when the
file ``<module file without .py>.widget.js`` exists beside its module (``pkg/__init__.widget.js``
for a package ``pkg``); ``_css`` or ``<...>.widget.css`` add a stylesheet. A declared asset is a
non-empty ``str`` or a ``pathlib.PurePath``; other values count as not declared.
"""

from __future__ import annotations

import inspect
import os
import pathlib
import sys
import types
import typing
from typing import Any, Literal, Union, get_args, get_origin

from . import config as _config

__all__ = [
    "WIDGET_SIBLINGS",
    "declared_asset",
    "defines",
    "describe_callable",
    "has_sibling",
    "module_doc",
    "own_doc",
    "parameters",
    "readable",
    "remote_signature",
    "source_location",
    "version_methods",
    "widget_asset",
    "widget_info",
]

VERSION_PREFIX = "version_"


def defines(cls: type, name: str) -> bool:
    """Whether instances of ``cls`` have ``name`` from a class (not from the metaclass, as
    ``getattr(cls, "__call__")`` would report): ``defines(cls, "__call__")`` is whether it can run
    as an execution."""
    return any(name in vars(klass) for klass in cls.__mro__ if klass is not object)


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


def _source_line(obj: Any) -> int | None:
    try:
        return inspect.getsourcelines(inspect.unwrap(obj))[1]
    except (OSError, TypeError):  # built at run time, or no source file
        return None


def version_methods(cls: type) -> list[dict[str, Any]]:
    """Every ``version_<name>`` method, inherited ones included, sorted by name: ``{name,
    signature, doc, parameters, source_line}`` (1-based line, None when there is no source)."""
    out = []
    for attr in sorted(dir(cls)):
        if attr.startswith(VERSION_PREFIX) and len(attr) > len(VERSION_PREFIX) and callable(getattr(cls, attr, None)):
            entry = describe_callable(cls, attr)
            entry["name"] = attr[len(VERSION_PREFIX) :]
            entry["source_line"] = _source_line(getattr(cls, attr))
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


#: A declared asset string names a file when it is one line ending in one of these and the file
#: exists (relative to the folder of the module that declares it); otherwise it is source text.
ASSET_FILE_SUFFIXES = (".js", ".mjs", ".css")


def declared_asset(cls: type, asset: str) -> str | pathlib.PurePath | None:
    """The class attribute ``_esm`` / ``_css`` (inherited ones too) when it declares an asset:
    a non-empty string or a path; None otherwise."""
    value = getattr(cls, f"_{asset}", None)
    if isinstance(value, pathlib.PurePath) or (isinstance(value, str) and value):
        return value
    return None


def _declaring_file(cls: type, attribute: str, fallback: str | None) -> str | None:
    """The file of the module whose class (in ``cls``'s MRO) sets ``attribute``."""
    for klass in cls.__mro__:
        if attribute in vars(klass):
            return getattr(sys.modules.get(klass.__module__), "__file__", None) or fallback
    return fallback


def widget_asset(cls: type, module_file: str | None, asset: str) -> tuple[Literal["inline", "path"], str] | None:
    """Where the widget asset ``asset`` (``"esm"`` or ``"css"``) of ``cls`` comes from.

    ``("inline", source)``, ``("path", absolute path)`` or None (no such asset):

    - ``_<asset>`` a ``pathlib.PurePath``: that file, relative to the folder of the module that
      declares the attribute when relative (it may not exist: the caller checks);
    - ``_<asset>`` a string of one line ending in .js, .mjs or .css that names an existing file
      relative to that folder: the file; any other string: the source itself;
    - no declared asset: the sibling ``<module_file without .py>.widget.js`` / ``.widget.css`` if
      it exists.

    Paths are absolute, not resolved: the caller decides whether a symlink may lead elsewhere.
    """
    value = declared_asset(cls, asset)
    if value is None:
        if has_sibling(module_file, asset):
            assert module_file is not None
            return "path", os.path.abspath(module_file[: -len(".py")] + WIDGET_SIBLINGS[asset])
        return None
    declaring = _declaring_file(cls, f"_{asset}", module_file)
    folder = os.path.dirname(os.path.abspath(declaring)) if declaring else os.getcwd()
    if isinstance(value, pathlib.PurePath):
        return "path", os.path.abspath(os.path.join(folder, value))
    if "\n" not in value and "\r" not in value and value.endswith(ASSET_FILE_SUFFIXES):
        candidate = os.path.join(folder, value)
        if os.path.isfile(candidate):
            return "path", os.path.abspath(candidate)
    return "inline", value


def widget_info(cls: type, module_file: str | None) -> dict[str, Any] | None:
    """``{esm, css, meta}``: whether ``cls`` has each asset (``widget_asset``) and its opaque
    ``_widget_meta`` mapping (``{}`` without one); None when it has no asset."""
    assets: dict[str, Any] = {asset: widget_asset(cls, module_file, asset) is not None for asset in WIDGET_SIBLINGS}
    if not any(assets.values()):
        return None
    meta = getattr(cls, "_widget_meta", None)
    assets["meta"] = dict(meta) if isinstance(meta, dict) else {}
    return assets


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
