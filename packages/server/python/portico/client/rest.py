"""REST plumbing: one JSON request to the gateway, and the request bodies its operations take.

Turns Python-friendly arguments (a lone version string, ``{"step": ("gte", 10)}`` filters,
``"-created_at"`` sort keys, ``("counter", ["~big"])`` references) into the gateway's shapes.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from typing import Any, Mapping

from .._json import dumps
from .errors import GatewayError


def request(
    base: str,
    token: str | None,
    service_headers: Mapping[str, str],
    timeout: float | None,
    method: str,
    path: str,
    body: Any = None,
    query: Mapping[str, Any] | None = None,
) -> Any:
    """One REST request to the gateway at ``base``: ``body`` sent as JSON, the JSON answer
    returned (None for 204); what ``Gateway.request`` does with the gateway's settings.

    ``path`` starts with ``/v1``. Query values of None are left out; booleans become
    ``true``/``false``. Failures raise :class:`GatewayError`.
    """
    raw, _ = fetch(base, token, service_headers, timeout, method, path, body, query)
    if not raw:
        return None
    return json.loads(raw.decode("utf-8"))


def fetch(
    base: str,
    token: str | None,
    service_headers: Mapping[str, str],
    timeout: float | None,
    method: str,
    path: str,
    body: Any = None,
    query: Mapping[str, Any] | None = None,
    accept: str = "application/json",
) -> tuple[bytes, Mapping[str, str]]:
    """``request``'s exchange: the answer's bytes and headers, whatever its type (a widget's ES
    module, a file). Failures raise :class:`GatewayError`."""
    url = base + path
    if query:
        pairs = {k: ("true" if v is True else "false" if v is False else v) for k, v in query.items() if v is not None}
        if pairs:
            url += "?" + urllib.parse.urlencode(pairs)
    headers = {"Accept": accept, **service_headers}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    data = None
    if body is not None:
        data = dumps(body).encode("utf-8")  # numpy values, NaN, dates as the worker writes them (_json)
        headers["Content-Type"] = "application/json"
    elif method.upper() in ("POST", "PUT", "PATCH"):
        data = b""
    req = urllib.request.Request(url, data=data, headers=headers, method=method.upper())
    try:
        with urllib.request.urlopen(req, timeout=timeout) as response:
            return response.read(), response.headers
    except urllib.error.HTTPError as err:
        raw = err.read()
        raise GatewayError.from_response(err.code, raw) from None
    except urllib.error.URLError as err:
        raise GatewayError("unreachable", None, f"cannot reach {base}: {err.reason}") from None
    except (OSError, TimeoutError) as err:
        raise GatewayError("unreachable", None, f"{method} {path} failed: {err}") from None


def version_list(version: Any) -> list[Any] | None:
    """A version as the gateway wants it: None, or a list (a lone string or dict becomes one item)."""
    if version is None:
        return None
    if isinstance(version, (str, Mapping)):
        return [version]
    return list(version)


def filter_list(where: Any) -> list[dict[str, Any]]:
    """``{"a.b": 3, "c": ("gte", 2)}`` or ``[("a.b", "in", [1, 2]), {...}]`` → a list of Filter objects."""
    if where is None:
        return []
    filters: list[dict[str, Any]] = []
    if isinstance(where, Mapping):
        for path, condition in where.items():
            if isinstance(condition, tuple) and len(condition) == 2 and isinstance(condition[0], str):
                filters.append({"path": path, "op": condition[0], "value": condition[1]})
            else:
                filters.append({"path": path, "op": "eq", "value": condition})
        return filters
    for item in where:
        if isinstance(item, Mapping):
            filters.append(dict(item))
        elif isinstance(item, tuple) and len(item) == 3:
            filters.append({"path": item[0], "op": item[1], "value": item[2]})
        elif isinstance(item, tuple) and len(item) == 2:
            filters.append({"path": item[0], "op": "eq", "value": item[1]})
        else:
            raise TypeError(f"a filter is a dict, (path, value) or (path, op, value), not {item!r}")
    return filters


def sort_list(sort: Any) -> list[dict[str, Any]]:
    """``"-created_at"`` / ``("config.step", "asc")`` / a dict, or a list of them → SortSpec objects."""
    if sort is None:
        return []
    items = [sort] if isinstance(sort, (str, tuple, Mapping)) else list(sort)
    specs: list[dict[str, Any]] = []
    for item in items:
        if isinstance(item, Mapping):
            specs.append(dict(item))
        elif isinstance(item, tuple) and len(item) == 2:
            specs.append({"by": item[0], "direction": item[1]})
        elif isinstance(item, str):
            descending = item.startswith("-")
            specs.append({"by": item.lstrip("+-"), "direction": "desc" if descending else "asc"})
        else:
            raise TypeError(f"a sort key is 'path', '-path', (path, direction) or a dict, not {item!r}")
    return specs


def interface_ref(item: Any) -> dict[str, Any]:
    """A context entry: ``"counter"``, ``("counter", ["~big"])`` or ``{"target": …, "version": …}``."""
    if isinstance(item, str):
        return {"target": item}
    if isinstance(item, tuple) and len(item) == 2:
        ref: dict[str, Any] = {"target": item[0]}
        version = version_list(item[1])
        if version is not None:
            ref["version"] = version
        return ref
    if isinstance(item, Mapping):
        return dict(item)
    raise TypeError(f"an interface reference is a target, (target, version) or a dict, not {item!r}")
