"""What every handler of the worker shares: the refusal that becomes an ``error`` frame, the
checks of a request's fields, and the worker's diagnostics (stderr, forwarded to the gateway log).

Frame shapes and error codes are those of packages/server/src/kernel/README.md.
"""

from __future__ import annotations

import sys
from typing import Any

from .. import config as _config


def log(message: str) -> None:
    """Worker diagnostics go to stderr, which the gateway forwards to its log."""
    try:
        stream = sys.__stderr__ or sys.stderr  # the worker's own stderr, never a call's output
        stream.write(f"portico.worker: {message}\n")
        stream.flush()
    except (OSError, ValueError):
        pass


class Refusal(Exception):
    """A request that ends in an ``error`` frame with this code."""

    def __init__(self, code: str, message: str, **extra: Any) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.extra = extra


def error_header(request_id: Any, refusal: Refusal) -> dict[str, Any]:
    """The ``error`` frame answering ``request_id`` with ``refusal``."""
    header = {"op": "error", "id": request_id, "code": refusal.code, "message": refusal.message}
    header.update(refusal.extra)
    return header


def is_request_id(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def field(header: dict[str, Any], name: str, kind: type | tuple[type, ...], default: Any = ...) -> Any:
    """``header[name]`` when it has type ``kind`` (``default`` when absent or null); else ``bad_request``."""
    value = header.get(name)
    if value is None:  # absent or null: the default, if the field has one
        value = default
    if value is ... or not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise Refusal("bad_request", f"{header.get('op')}: field {name!r} is missing or has the wrong type")
    return value


def request_id(header: dict[str, Any]) -> Any:
    """The request's numeric ``id``; else ``bad_request``."""
    found = header.get("id")
    if not is_request_id(found):
        raise Refusal("bad_request", f"{header.get('op')}: field 'id' must be a number")
    return found


def instance_fields(header: dict[str, Any]) -> tuple[Any, str, str, dict[str, Any]]:
    """``id``, ``uuid``, ``module`` and ``config`` of a request addressed to an instance."""
    return request_id(header), field(header, "uuid", str), field(header, "module", str), field(header, "config", dict, {})


def call_fields(header: dict[str, Any]) -> tuple[Any, str, str, dict[str, Any], str, list[Any], dict[str, Any], bool]:
    """``id``, ``uuid``, ``module``, ``config``, ``method``, ``args``, ``kwargs`` and ``stream`` of
    a ``call``; else ``bad_request``. Every field there with its exact type (what the gateway
    always sends) passes the checks of ``checked_call_fields`` as it is, so they are skipped then
    (test_worker_calls.py compares the two on generated headers)."""
    get = header.get
    request_id, uuid, module, config = get("id"), get("uuid"), get("module"), get("config")
    method, args, kwargs, stream = get("method"), get("args"), get("kwargs"), get("stream")
    if (
        type(request_id) is int
        and type(uuid) is str
        and type(module) is str
        and type(config) is dict
        and type(method) is str
        and type(args) is list
        and type(kwargs) is dict
        and type(stream) is bool
    ):
        return request_id, uuid, module, config, method, args, kwargs, stream
    return checked_call_fields(header)


def checked_call_fields(header: dict[str, Any]) -> tuple[Any, str, str, dict[str, Any], str, list[Any], dict[str, Any], bool]:
    """``call_fields`` with every field checked one by one (absent and null fields take their defaults)."""
    return (
        *instance_fields(header),
        field(header, "method", str),
        field(header, "args", list, []),
        field(header, "kwargs", dict, {}),
        field(header, "stream", bool, False),
    )


def described(exc: BaseException) -> str:
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def invalid_config(label: str, issues: list[_config.Issue]) -> Refusal:
    problems = "; ".join(f"{issue['path']}: {issue['message']}" if issue["path"] else issue["message"] for issue in issues)
    return Refusal("invalid_config", f"Invalid config for {label}: {problems}", issues=issues)
