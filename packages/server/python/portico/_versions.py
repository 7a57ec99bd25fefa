"""Version lists: the grammar a client uses to pick a config, turned into dict patches.

Owns normalizing a version list (dicts, ``"~name"`` / ``"~name(args)"`` calling ``version_name``,
dotted assignments ``"a.b=3"``), parsing arguments as Python literals (``ast.literal_eval``, never
``eval``: versions arrive from remote clients), deep merging, and reporting every problem as an
issue ``{"path": "a.b" | None, "message": ...}``. Validation against ``Config`` is config.py's.
"""

from __future__ import annotations

import ast
import collections.abc
import inspect
import io
import re
import tokenize
from typing import Any

from ._view import ConfigView
from .interface import Binding, attach

Issue = dict[str, Any]  # {"path": str | None, "message": str}


def deep_merge(base: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
    """A new dict: ``patch`` over ``base``, merging nested dicts, replacing everything else."""
    out = dict(base)
    for key, value in patch.items():
        current = out.get(key)
        if isinstance(value, dict) and isinstance(current, dict):
            out[key] = deep_merge(current, value)
        else:
            out[key] = value
    return out


def unflatten(data: dict[str, Any]) -> dict[str, Any]:
    """Turn dotted keys into nesting, at every level: ``{"a.b": 1}`` → ``{"a": {"b": 1}}``."""
    out: dict[str, Any] = {}
    for key, value in data.items():
        if isinstance(value, dict):
            value = unflatten(value)
        if isinstance(key, str) and "." in key:
            head, *rest = key.split(".")
            for part in reversed(rest):
                value = {part: value}
            key = head
        out = deep_merge(out, {key: value})
    return out


def _respell(text: str) -> str:
    """``"~ big ( step = 5 )"`` → ``"~big(step=5)"``: drop whitespace between tokens only, so
    string literals keep their spaces. Text the tokenizer rejects is only stripped."""
    try:
        tokens = [
            tok
            for tok in tokenize.generate_tokens(io.StringIO(text[1:]).readline)
            if tok.type not in (tokenize.NEWLINE, tokenize.NL, tokenize.ENDMARKER, tokenize.INDENT, tokenize.DEDENT)
        ]
    except (tokenize.TokenError, SyntaxError):
        return text
    out = "~"
    previous: tokenize.TokenInfo | None = None
    for tok in tokens:
        # Two adjacent words or numbers would merge into one ("not x"), so they keep one space.
        if previous is not None and previous.type in (tokenize.NAME, tokenize.NUMBER) and tok.type in (
            tokenize.NAME,
            tokenize.NUMBER,
        ):
            out += " "
        out += tok.string
        previous = tok
    return out


def normalize_version(version: Any) -> list[Any]:
    """The canonical spelling of a version list, as echoed back by ``resolve``.

    A single item is wrapped; ``None`` and ``{}`` items are dropped; dict keys are unflattened;
    strings are stripped and ``~`` strings lose the whitespace between their tokens.
    Other items are kept as they are (resolution reports them).
    """
    if version is None:
        return []
    if not isinstance(version, list):
        version = [version]
    out: list[Any] = []
    for item in version:
        if item is None or (isinstance(item, dict) and not item):
            continue
        if isinstance(item, dict):
            out.append(unflatten(item))
        elif isinstance(item, str):
            text = item.strip()
            out.append(_respell(text) if text.startswith("~") else text)
        else:
            out.append(item)
    return out


def _literal(node: ast.AST) -> Any:
    try:
        return ast.literal_eval(node)
    except Exception:
        raise ValueError("arguments must be Python literals") from None


def parse_arguments(text: str) -> tuple[list[Any], dict[str, Any]]:
    """Parse ``"1, step=5"`` into ``([1], {"step": 5})``; every value must be a Python literal.

    Raises ValueError for anything else (names, calls, ``*``/``**``, syntax errors).
    """
    try:
        tree = ast.parse(f"f({text})", mode="eval")
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        raise ValueError("arguments are not valid Python") from None
    call = tree.body
    # "1)(2" or "1), g(2" parse, but not as one call of f: refuse them.
    if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id == "f"):
        raise ValueError("arguments must be Python literals")
    args = [_literal(node) for node in call.args]
    kwargs: dict[str, Any] = {}
    for keyword in call.keywords:
        if keyword.arg is None:
            raise ValueError("arguments must be Python literals")
        kwargs[keyword.arg] = _literal(keyword.value)
    return args, kwargs


_VERSION_CALL = re.compile(r"~\s*(\w+)\s*(?:\((.*)\))?\s*", re.S)


def add_issue(issues: list[Issue], path: str | None, message: str) -> None:
    issues.append({"path": path or None, "message": message})


def _version_call(cls: type, item: str, merged: dict[str, Any], issues: list[Issue]) -> dict[str, Any] | None:
    match = _VERSION_CALL.fullmatch(item)
    if match is None:
        add_issue(issues, None, f"Invalid version {item!r}: expected '~name' or '~name(arguments)'")
        return None
    name, arg_text = match.group(1), match.group(2)
    args: list[Any] = []
    kwargs: dict[str, Any] = {}
    if arg_text is not None:
        try:
            args, kwargs = parse_arguments(arg_text)
        except ValueError as exc:
            add_issue(issues, None, f"Invalid version {item!r}: {exc}")
            return None
    method_name = f"version_{name}"
    if not callable(getattr(cls, method_name, None)):
        add_issue(issues, None, f"{cls.__name__} has no version method {method_name!r}")
        return None
    # A provisional instance: version methods may read the config resolved so far.
    try:
        obj = cls.__new__(cls)
    except Exception as exc:
        add_issue(issues, None, f"Cannot create {cls.__name__} to call {method_name}(): {type(exc).__name__}: {exc}")
        return None
    attach(obj, Binding(uuid=None, config=ConfigView(merged), project=None, emit=lambda uuid, payload: None))
    method = getattr(obj, method_name)
    try:
        inspect.signature(method).bind(*args, **kwargs)
    except TypeError as exc:
        add_issue(issues, None, f"Invalid arguments for {method_name}(): {exc}")
        return None
    except ValueError:  # no introspectable signature: let the call itself decide
        pass
    try:
        result = method(*args, **kwargs)
    except Exception as exc:
        add_issue(issues, None, f"Version method {method_name!r} raised {type(exc).__name__}: {exc}")
        return None
    if result is None:
        return {}
    if not isinstance(result, collections.abc.Mapping):
        add_issue(issues, None, f"Version method {method_name!r} must return a dict, got {type(result).__name__}")
        return None
    return unflatten(dict(result))


def _assignment(item: str, issues: list[Issue]) -> dict[str, Any] | None:
    key, _, raw = item.partition("=")
    parts = [part.strip() for part in key.split(".")]
    if not all(parts):
        add_issue(issues, None, f"Invalid version {item!r}: expected a dotted key before '='")
        return None
    raw = raw.strip()
    try:
        value = ast.literal_eval(raw)
    except Exception:  # not a literal: the text itself is the value ("name=foo" → "foo")
        value = raw
    return unflatten({".".join(parts): value})


def version_patch(cls: type, item: Any, merged: dict[str, Any], issues: list[Issue]) -> dict[str, Any] | None:
    if isinstance(item, dict):
        return item
    if isinstance(item, str):
        if item.startswith("~"):
            return _version_call(cls, item, merged, issues)
        if "=" in item:
            return _assignment(item, issues)
        add_issue(issues, None, f"Invalid version {item!r}: use '~name' for a version method or 'key=value'")
        return None
    add_issue(issues, None, f"Invalid version item {item!r}: expected a dict or a string")
    return None

