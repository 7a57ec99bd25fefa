"""Drive a Portico gateway from Python — notebooks, scripts — with the standard library only.

Put ``packages/server/python`` on ``sys.path`` and::

    from portico.client import Gateway

    g = Gateway("http://127.0.0.1:8000", token=None)          # token: the gateway's --api-token
    counter = g.interface("counter", ["~big"])                  # one WebSocket, opened on first use
    counter.add(2)                                              # → 20 (a call, answered by its result)
    for tick in g.interface("streamer").ticks(3):               # a generator method: an iterator
        print(tick)
    counter.on_event(print)                                     # emit() payloads, on a callback thread

    g.search(module="counter", where={"step": ("gte", 10)}, sort="-created_at")
    run = g.dispatch("trainer", [{"epochs": 3}])
    for text in run.follow():                                   # the run's output as it grows
        print(text, end="")

Errors raise :class:`GatewayError` with the gateway's stable ``code`` (``not_found``,
``call_failed``, ``invalid_config``, …; see the README's error table). Two codes come from this
client itself: ``unreachable`` (no connection to the gateway) and ``connection_closed`` (the
WebSocket went away while something was waiting on it; the next use of the proxy reconnects).

The token is sent as ``Authorization: Bearer`` on REST requests and as the WebSocket subprotocol
``bearer, <token>`` (or the ``Authorization`` header when the token has characters a subprotocol
cannot carry). It never appears in a proxy's repr or MIME bundle: notebooks are saved and shared.
"""

from __future__ import annotations

import html
import itertools
import json
import logging
import os
import queue
import re
import stat
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
import weakref
from typing import Any, BinaryIO, Callable, Iterable, Iterator, Mapping

from . import _ws_client

__all__ = ["Execution", "Gateway", "GatewayError", "InterfaceProxy", "WIDGET_MIME_TYPE"]

log = logging.getLogger("portico.client")

#: The MIME type JupyterLab's Portico extension renders as a live widget.
WIDGET_MIME_TYPE = "application/vnd.portico.widget+json"

#: WebSocket path of the interface protocol.
INTERFACES_WS = "/v1/interfaces/ws"
#: Binary frames of a read held in memory at most, per transfer, before the socket stops reading.
READ_QUEUE_FRAMES = 8
#: Window asked of /v1/executions/{uuid}/output while following (the gateway's cap).
FOLLOW_WINDOW = 256 * 1024
#: Run statuses after which nothing changes any more.
ENDED_STATUSES = frozenset({"finished", "failed", "interrupted"})

# RFC 7230 token characters: what a Sec-WebSocket-Protocol value may hold.
_TOKEN_CHARS = re.compile(r"^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$")


class GatewayError(Exception):
    """A failure reported by the gateway (or met on the way to it).

    ``code`` is the stable error code, ``status`` the HTTP status (None over the WebSocket and for
    client-side failures), ``message`` the text, ``issues`` a list of ``{"path", "message"}`` (per
    config field or request location), ``exception`` the Python exception class for
    ``call_failed``.
    """

    def __init__(
        self,
        code: str,
        status: int | None,
        message: str,
        issues: list[dict[str, Any]] | None = None,
        exception: str | None = None,
    ) -> None:
        self.code = code
        self.status = status
        self.message = message
        self.issues = list(issues or [])
        self.exception = exception
        text = f"{code}: {message}"
        for issue in self.issues[:10]:
            path = issue.get("path") if isinstance(issue, Mapping) else None
            text += f"\n  {path or '(root)'}: {issue.get('message') if isinstance(issue, Mapping) else issue}"
        super().__init__(text)

    @classmethod
    def from_detail(cls, detail: Mapping[str, Any], status: int | None = None) -> GatewayError:
        """Builds the error from an ErrorDetail object (REST ``detail`` or an error frame's payload)."""
        return cls(
            str(detail.get("code") or "error"),
            status,
            str(detail.get("message") or ""),
            detail.get("issues") if isinstance(detail.get("issues"), list) else None,
            detail.get("exception") if isinstance(detail.get("exception"), str) else None,
        )

    @classmethod
    def from_response(cls, status: int, body: bytes) -> GatewayError:
        """Builds the error from an HTTP error response (``{"detail": …}``, or a 422 validation list)."""
        try:
            parsed = json.loads(body.decode("utf-8")) if body else None
        except (UnicodeDecodeError, ValueError):
            parsed = None
        detail = parsed.get("detail") if isinstance(parsed, dict) else None
        if isinstance(detail, Mapping):
            return cls.from_detail(detail, status)
        if isinstance(detail, list):  # HTTPValidationError: [{loc, msg, type}]
            issues = [
                {"path": ".".join(str(part) for part in item.get("loc", [])) or None, "message": str(item.get("msg", ""))}
                for item in detail
                if isinstance(item, Mapping)
            ]
            message = "; ".join(f"{i['path']}: {i['message']}" if i["path"] else i["message"] for i in issues)
            return cls("validation_error", status, message or "validation failed", issues)
        text = body.decode("utf-8", "replace").strip()[:500]
        return cls(f"http_{status}", status, text or f"HTTP {status}")


def _closed_error(reason: str) -> GatewayError:
    return GatewayError("connection_closed", None, reason)


def _version_list(version: Any) -> list[Any] | None:
    """A version as the gateway wants it: None, or a list (a lone string or dict becomes one item)."""
    if version is None:
        return None
    if isinstance(version, (str, Mapping)):
        return [version]
    return list(version)


def _filter_list(where: Any) -> list[dict[str, Any]]:
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


def _sort_list(sort: Any) -> list[dict[str, Any]]:
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


def _interface_ref(item: Any) -> dict[str, Any]:
    """A context entry: ``"counter"``, ``("counter", ["~big"])`` or ``{"target": …, "version": …}``."""
    if isinstance(item, str):
        return {"target": item}
    if isinstance(item, tuple) and len(item) == 2:
        ref: dict[str, Any] = {"target": item[0]}
        version = _version_list(item[1])
        if version is not None:
            ref["version"] = version
        return ref
    if isinstance(item, Mapping):
        return dict(item)
    raise TypeError(f"an interface reference is a target, (target, version) or a dict, not {item!r}")


class Gateway:
    """A Portico gateway at ``url`` (``http://host:port``), seen as one project, user and interpreter.

    ``token`` is the gateway's API token (or a session token); ``project``, ``user`` and
    ``python`` go out as ``X-Service-Project``, ``X-Service-User`` and ``X-Service-Python`` on every
    request and WebSocket upgrade (None: the gateway's defaults). ``timeout`` bounds each REST
    request and each WebSocket connect, in seconds (None: no bound; calls may run up to the
    gateway's own limit).

    Usable as a context manager: leaving it closes every interface proxy it made.
    """

    def __init__(
        self,
        url: str,
        token: str | None = None,
        project: str | None = None,
        user: str | None = None,
        python: str | None = None,
        *,
        timeout: float | None = None,
    ) -> None:
        parts = urllib.parse.urlsplit(url.strip())
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ValueError(f"the gateway URL must be http(s)://host[:port], not {url!r}")
        path = parts.path.rstrip("/")
        if path.endswith("/v1"):
            path = path[: -len("/v1")]
        #: Base URL of the gateway, without a trailing slash or ``/v1``.
        self.url = urllib.parse.urlunsplit((parts.scheme, parts.netloc, path, "", ""))
        self.token = token
        self.project = project
        self.user = user
        self.python = python
        self.timeout = timeout
        self._proxies: weakref.WeakSet[InterfaceProxy] = weakref.WeakSet()

    def __repr__(self) -> str:  # never shows the token
        project = f" project={self.project!r}" if self.project else ""
        return f"<portico.client.Gateway {self.url}{project}>"

    def __enter__(self) -> Gateway:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        """Closes every interface proxy made by this gateway object."""
        for proxy in list(self._proxies):
            proxy.close()

    # ------------------------------------------------------------------ REST

    def _service_headers(self) -> dict[str, str]:
        headers = {}
        if self.project:
            headers["X-Service-Project"] = self.project
        if self.user:
            headers["X-Service-User"] = self.user
        if self.python:
            headers["X-Service-Python"] = self.python
        return headers

    def request(self, method: str, path: str, body: Any = None, query: Mapping[str, Any] | None = None) -> Any:
        """One REST request: ``body`` sent as JSON, the JSON answer returned (None for 204).

        ``path`` starts with ``/v1``. Query values of None are left out; booleans become
        ``true``/``false``. Failures raise :class:`GatewayError`.
        """
        url = self.url + path
        if query:
            pairs = {k: ("true" if v is True else "false" if v is False else v) for k, v in query.items() if v is not None}
            if pairs:
                url += "?" + urllib.parse.urlencode(pairs)
        headers = {"Accept": "application/json", **self._service_headers()}
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        data = None
        if body is not None:
            data = json.dumps(body).encode("utf-8")
            headers["Content-Type"] = "application/json"
        elif method.upper() in ("POST", "PUT", "PATCH"):
            data = b""
        req = urllib.request.Request(url, data=data, headers=headers, method=method.upper())
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as response:
                raw = response.read()
        except urllib.error.HTTPError as err:
            raw = err.read()
            raise GatewayError.from_response(err.code, raw) from None
        except urllib.error.URLError as err:
            raise GatewayError("unreachable", None, f"cannot reach {self.url}: {err.reason}") from None
        except (OSError, TimeoutError) as err:
            raise GatewayError("unreachable", None, f"{method} {path} failed: {err}") from None
        if not raw:
            return None
        return json.loads(raw.decode("utf-8"))

    def health(self) -> dict[str, Any]:
        """``GET /v1/health``: status, version, project, active executions, workers."""
        return self.request("GET", "/v1/health")

    def create(
        self,
        target: str,
        version: Any = None,
        *,
        uuid: str | None = None,
        label: str | None = None,
        meta: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Creates (or finds) an interface without connecting to it; returns its InterfaceInfo."""
        body: dict[str, Any] = {"target": target}
        if version is not None:
            body["version"] = _version_list(version)
        if uuid is not None:
            body["uuid"] = uuid
        if label is not None:
            body["label"] = label
        if meta is not None:
            body["meta"] = dict(meta)
        return self.request("POST", "/v1/interfaces", body)

    def get(self, uuid: str) -> dict[str, Any]:
        """The InterfaceInfo of ``uuid`` (``not_found`` when there is none)."""
        return self.request("GET", f"/v1/interfaces/{urllib.parse.quote(uuid, safe='')}")

    def label(self, uuid: str, label: str | None) -> dict[str, Any]:
        """Sets (None: clears) the mutable label of ``uuid``; returns the updated InterfaceInfo."""
        return self.request("PATCH", f"/v1/interfaces/{urllib.parse.quote(uuid, safe='')}/label", {"label": label})

    def archive(self, uuid: str, restore: bool = False) -> dict[str, Any]:
        """Archives ``uuid`` (hidden from search), or restores it with ``restore=True``."""
        return self.request("POST", f"/v1/interfaces/{urllib.parse.quote(uuid, safe='')}/archive", query={"restore": restore})

    def search(
        self,
        module: str | None = None,
        label: str | None = None,
        created_by: str | None = None,
        where: Any = None,
        sort: Any = None,
        limit: int | None = None,
        *,
        kind: str | None = None,
        filters: Any = None,
        include_archived: bool | None = None,
        offset: int | None = None,
        cursor: str | None = None,
    ) -> dict[str, Any]:
        """``POST /v1/interfaces/search``; returns ``{"items": [InterfaceInfo…], "total", "next_cursor"}``.

        - ``module``, ``label``, ``created_by``, ``kind``: exact matches.
        - ``where``: filters on paths inside the config, as ``{"step": 10}`` (eq),
          ``{"step": ("gte", 10)}``, or a list of ``(path, op, value)`` / ``(path, value)`` /
          ``{"path", "op", "value"}``. Operators: eq ne lt lte gt gte in nin contains exists.
        - ``filters``: the same forms, on record paths (``config.…``, ``uuid``, ``label``,
          ``created_at``, ``archived``, …).
        - ``sort``: ``"config.step"`` (ascending), ``"-created_at"`` (descending),
          ``(path, "asc"|"desc")``, a dict, or a list of them. Default: newest first.
        - ``limit`` (1–1000), ``offset``, or ``cursor`` (a previous answer's ``next_cursor``).
        """
        body: dict[str, Any] = {}
        for key, value in (("module", module), ("label", label), ("created_by", created_by), ("kind", kind)):
            if value is not None:
                body[key] = value
        if where is not None:
            body["config"] = {"filters": _filter_list(where)}
        if filters is not None:
            body["filters"] = _filter_list(filters)
        if sort is not None:
            body["sort"] = _sort_list(sort)
        for key, value in (("limit", limit), ("offset", offset), ("cursor", cursor), ("include_archived", include_archived)):
            if value is not None:
                body[key] = value
        return self.request("POST", "/v1/interfaces/search", body)

    def call(self, target: str, method: str, /, *args: Any, version: Any = None, **kwargs: Any) -> Any:
        """Calls ``method`` on ``target`` (module or uuid) over REST and returns its result.

        One request, no socket: fine for a single call. Generator methods answer
        ``streaming_unsupported``; use :meth:`interface` for them. (``version`` is this call's
        own keyword: a method argument of that name goes through ``interface(...).call``.)
        """
        body: dict[str, Any] = {"target": target, "method": method, "args": list(args), "kwargs": kwargs}
        if version is not None:
            body["version"] = _version_list(version)
        return self.request("POST", "/v1/interfaces/call", body)["payload"]

    def dispatch(self, target: str, version: Any = None, context: Iterable[Any] | None = None) -> Execution:
        """Runs ``target``'s ``__call__`` in a run process of its own; returns the :class:`Execution`.

        ``context``: interfaces entered around the run, each ``"module"``,
        ``("module", version)`` or ``{"target", "version"}``.
        """
        entry: dict[str, Any] = {"target": target}
        if version is not None:
            entry["version"] = _version_list(version)
        if context is not None:
            entry["context"] = [_interface_ref(item) for item in context]
        return Execution(self, self.request("POST", "/v1/executions", {"interfaces": [entry]}))

    def execution(self, uuid: str) -> Execution:
        """A handle on an existing run (``not_found`` when there is none)."""
        return Execution(self, self.request("GET", f"/v1/executions/{urllib.parse.quote(uuid, safe='')}"))

    # ------------------------------------------------------------- WebSocket

    def interface(self, module_or_uuid: str, version: Any = None, *, uuid: str | None = None, label: str | None = None) -> InterfaceProxy:
        """A proxy on one interface: ``module_or_uuid`` with ``version``, over one WebSocket.

        ``uuid`` creates by id (the same id attaches to the existing instance); ``label`` labels a
        newly created instance. Nothing goes over the network until the proxy is first used.
        """
        proxy = InterfaceProxy(self, module_or_uuid, _version_list(version), uuid=uuid, label=label)
        self._proxies.add(proxy)
        return proxy

    def _ws_url(self, path: str) -> str:
        parts = urllib.parse.urlsplit(self.url)
        scheme = "wss" if parts.scheme == "https" else "ws"
        return urllib.parse.urlunsplit((scheme, parts.netloc, parts.path + path, "", ""))

    def _open_socket(self, path: str) -> _ws_client.WebSocket:
        headers = self._service_headers()
        subprotocols = None
        if self.token:
            if _TOKEN_CHARS.match(self.token):
                subprotocols = ["bearer", self.token]
            else:  # a subprotocol cannot carry it: the gateway takes the header too
                headers["Authorization"] = f"Bearer {self.token}"
        try:
            return _ws_client.connect(self._ws_url(path), headers=headers, subprotocols=subprotocols, timeout=self.timeout or 60.0)
        except _ws_client.HandshakeError as err:
            if err.status:
                raise GatewayError.from_response(err.status, err.body) from None
            raise GatewayError("unreachable", None, f"WebSocket handshake with {self.url} failed: {err}") from None
        except OSError as err:
            raise GatewayError("unreachable", None, f"cannot reach {self.url}: {err}") from None


class Execution:
    """A run dispatched with :meth:`Gateway.dispatch`: its status, output and cancel.

    ``info`` is the last ExecutionInfo seen (refreshed by :meth:`status`, :meth:`wait`).
    """

    def __init__(self, gateway: Gateway, info: Mapping[str, Any]) -> None:
        self.gateway = gateway
        self.info: dict[str, Any] = dict(info)
        self.uuid: str = self.info["uuid"]

    def __repr__(self) -> str:
        return f"<portico.client.Execution {self.uuid} {self.info.get('status')}>"

    def _path(self, suffix: str = "") -> str:
        return f"/v1/executions/{urllib.parse.quote(self.uuid, safe='')}{suffix}"

    def status(self) -> dict[str, Any]:
        """The current ExecutionInfo (``status``: pending, running, finished, failed, interrupted)."""
        self.info = self.gateway.request("GET", self._path())
        return self.info

    @property
    def ended(self) -> bool:
        """Whether the last ExecutionInfo seen says the run is over (call :meth:`status` to refresh)."""
        return self.info.get("status") in ENDED_STATUSES and not self.info.get("is_active")

    def output(self, offset: int | None = None, tail: int | None = None, limit: int | None = None) -> dict[str, Any]:
        """A window of the run's output: ``{"output", "offset", "size", "limit"}``.

        ``offset`` reads forward from a byte; ``tail`` reads the last bytes; neither: the last
        ``limit`` bytes. Poll with ``offset=size`` for only what was appended.
        """
        return self.gateway.request("GET", self._path("/output"), query={"offset": offset, "tail": tail, "limit": limit})

    def follow(self, offset: int = 0, poll: float = 0.2) -> Iterator[str]:
        """Yields the run's output text as it grows, from byte ``offset``, until the run ends.

        Polls the output window every ``poll`` seconds while nothing is new; after the run ended,
        reads whatever was still unread and stops.
        """
        ended = False
        while True:
            window = self.output(offset=offset, limit=FOLLOW_WINDOW)
            start, size = int(window["offset"]), int(window["size"])
            read = min(int(window["limit"]), max(0, size - start))
            offset = start + read
            if window["output"]:
                yield window["output"]
            if offset < size:
                continue  # more already there
            if ended:
                return
            if self.status().get("status") in ENDED_STATUSES and not self.info.get("is_active"):
                ended = True  # one more read: output written before the status
                continue
            time.sleep(poll)

    def cancel(self) -> None:
        """Asks the run to stop (it is interrupted within about a second); idempotent."""
        self.gateway.request("POST", self._path("/cancel"))

    def wait(self, timeout: float | None = None, poll: float = 0.2) -> dict[str, Any]:
        """Waits until the run ended and returns its ExecutionInfo; TimeoutError after ``timeout`` s."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            info = self.status()
            if info.get("status") in ENDED_STATUSES and not info.get("is_active"):
                return info
            if deadline is not None and time.monotonic() >= deadline:
                raise TimeoutError(f"execution {self.uuid} still {info.get('status')} after {timeout} s")
            time.sleep(poll if deadline is None else max(0.0, min(poll, deadline - time.monotonic())))


class _Lost:
    """Put into a waiter's queue when the socket went away."""

    def __init__(self, error: GatewayError) -> None:
        self.error = error


#: Marks a call whose answer nobody waits for any more: its frames are dropped.
_DISCARD = object()
#: Frame types that end the exchange they answer.
_TERMINAL = frozenset({"result", "error", "chunk_done", "connected", "widget_state", "widget_change", "pong"})


def _is_terminal(frame: Mapping[str, Any]) -> bool:
    kind = frame.get("type")
    return kind in _TERMINAL or (kind == "stream" and bool(frame.get("final")))


class _ReadSink:
    """Where the reader thread puts one read's binary frames and its end; bounded for backpressure."""

    def __init__(self, transfer_id: int) -> None:
        self.id = transfer_id
        self.queue: queue.Queue[Any] = queue.Queue(maxsize=READ_QUEUE_FRAMES)
        self.abandoned = False


class _Connection:
    """One WebSocket of a proxy: a reader thread routes frames by id to whoever waits for them."""

    def __init__(self, proxy: InterfaceProxy, ws: _ws_client.WebSocket) -> None:
        # Weak: a proxy nobody holds any more is collected, and its finalizer closes this socket.
        self.proxy = weakref.ref(proxy)
        self.ws = ws
        self.ids = itertools.count(1)
        self.lock = threading.Lock()
        self.pending: dict[Any, Any] = {}
        #: One binary transfer per socket at a time (binary frames carry no id).
        self.transfer_lock = threading.Lock()
        self.read_sink: _ReadSink | None = None
        self.upload_id: int | None = None
        self.dead: GatewayError | None = None
        self.info: dict[str, Any] = {}
        self.reader = threading.Thread(target=self._read_loop, name="portico-client-reader", daemon=True)

    # --------------------------------------------------------------- sending

    def send(self, frame: Mapping[str, Any]) -> None:
        text = json.dumps(frame, separators=(",", ":"), allow_nan=False)
        self._send(lambda: self.ws.send_text(text))

    def send_binary(self, data: bytes | memoryview) -> None:
        self._send(lambda: self.ws.send_binary(data))

    def _send(self, action: Callable[[], None]) -> None:
        if self.dead:
            raise self.dead
        try:
            action()
        except _ws_client.ConnectionClosed as err:
            raise self.dead or _closed_error(f"the WebSocket is closed ({err.code} {err.reason})".strip()) from None

    def register(self, waiter: Any) -> int:
        frame_id = next(self.ids)
        with self.lock:
            if self.dead:
                raise self.dead
            self.pending[frame_id] = waiter
        return frame_id

    def forget(self, frame_id: Any) -> None:
        with self.lock:
            self.pending.pop(frame_id, None)

    def exchange(self, frame: dict[str, Any], timeout: float | None = None) -> dict[str, Any]:
        """Sends ``frame`` with a fresh id; returns the frame answering it (an error raises)."""
        waiter: queue.SimpleQueue[Any] = queue.SimpleQueue()
        frame_id = self.register(waiter)
        try:
            self.send({**frame, "id": frame_id})
            answer = self.next(waiter, timeout)
        finally:
            self.forget(frame_id)
        return answer

    def next(self, waiter: Any, timeout: float | None = None) -> dict[str, Any]:
        """The next frame for ``waiter``; raises GatewayError for an error frame or a lost socket."""
        try:
            item = waiter.get(timeout=timeout)
        except queue.Empty:
            raise GatewayError("timeout", None, f"no answer from the gateway within {timeout} s") from None
        if isinstance(item, _Lost):
            raise item.error
        if item.get("type") == "error":
            raise GatewayError.from_detail(item.get("payload") or {})
        return item

    def abandon(self, frame_id: Any) -> None:
        """Nobody waits for ``frame_id`` any more (a stream left early, an interrupted wait).

        When nothing else depends on this socket, it is closed, which makes the gateway cancel
        the call (the proxy reconnects on next use); otherwise the call's frames are dropped.
        """
        with self.lock:
            if frame_id not in self.pending:
                return
            others = [k for k, v in self.pending.items() if k != frame_id and v is not _DISCARD]
            proxy = self.proxy()
            listened = proxy is not None and proxy._has_listeners()
            alone = not others and self.read_sink is None and self.upload_id is None and not listened
            self.pending[frame_id] = _DISCARD
        if alone:
            self.shutdown(wait=False)

    # --------------------------------------------------------------- reading

    def _read_loop(self) -> None:
        error: GatewayError | None = None
        try:
            while True:
                message = self.ws.recv()
                if isinstance(message, bytes):
                    self._route_binary(message)
                    continue
                try:
                    frame = json.loads(message)
                except ValueError:
                    log.warning("portico.client: ignoring a text frame that is not JSON: %.200r", message)
                    continue
                if isinstance(frame, dict):
                    self._route(frame)
        except _ws_client.ConnectionClosed as err:
            error = _closed_error(f"the WebSocket closed ({err.code}{' ' + err.reason if err.reason else ''})")
        except BaseException as err:  # a bug here must not leave waiters hanging
            log.exception("portico.client: the reader thread failed")
            error = _closed_error(f"the reader thread failed: {err!r}")
            self.ws.abort()
        finally:
            self._die(error or _closed_error("the WebSocket closed"))

    def _die(self, error: GatewayError) -> None:
        with self.lock:
            if self.dead is None:
                self.dead = error
            waiters = list(self.pending.values())
            self.pending.clear()
            sink, self.read_sink = self.read_sink, None
        if sink is not None and sink not in waiters:
            waiters.append(sink)
        lost = _Lost(self.dead)
        for waiter in waiters:
            if waiter is _DISCARD:
                continue
            target = waiter.queue if isinstance(waiter, _ReadSink) else waiter
            try:
                target.put_nowait(lost)
            except queue.Full:
                pass  # the read's consumer checks `dead` while it waits

    def _route_binary(self, data: bytes) -> None:
        sink = self.read_sink
        if sink is None or sink.abandoned:
            if sink is None:
                log.warning("portico.client: dropping a binary frame that belongs to no read")
            return
        while not sink.abandoned:
            try:
                sink.queue.put(data, timeout=0.5)  # blocks while the consumer is behind: backpressure
                return
            except queue.Full:
                continue

    def _route(self, frame: dict[str, Any]) -> None:
        kind = frame.get("type")
        frame_id = frame.get("id")
        if kind == "event":
            self._dispatch("event", frame.get("payload"))
            return
        with self.lock:
            waiter = self.pending.get(frame_id) if frame_id is not None else None
            if waiter is None and kind == "error" and frame_id is None:
                # A socket-level error during a transfer belongs to that transfer.
                transfer = self.read_sink.id if self.read_sink else self.upload_id
                waiter = self.pending.get(transfer) if transfer is not None else None
            if waiter is not None and _is_terminal(frame):
                if waiter is _DISCARD:
                    self.pending.pop(frame_id, None)
                if self.read_sink is not None and frame_id == self.read_sink.id:
                    self.read_sink = None
        if waiter is None:
            if kind == "widget_change":
                self._dispatch("widget_change", (frame.get("payload") or {}).get("changes", {}))
            elif kind == "error":
                detail = frame.get("payload") or {}
                log.warning("portico.client: gateway error on the socket: %s: %s", detail.get("code"), detail.get("message"))
            elif kind not in ("pong", "widget_msg"):
                log.debug("portico.client: unrouted frame %.200r", frame)
            return
        if waiter is _DISCARD:
            return
        if isinstance(waiter, _ReadSink):
            if not waiter.abandoned:
                while not waiter.abandoned:
                    try:
                        waiter.queue.put(frame, timeout=0.5)
                        return
                    except queue.Full:
                        continue
            return
        waiter.put(frame)

    def _dispatch(self, kind: str, value: Any) -> None:
        proxy = self.proxy()
        if proxy is not None:
            proxy._dispatch(kind, value)

    # --------------------------------------------------------------- closing

    def shutdown(self, wait: bool = True) -> None:
        """Sends ``close`` (the gateway cancels this socket's calls and closes), then closes."""
        with self.lock:
            if self.dead is None:
                self.dead = _closed_error("the proxy was closed")
        try:
            self.ws.send_text(json.dumps({"type": "close"}))
        except _ws_client.ConnectionClosed:
            pass
        self.ws.close(1000, "", timeout=1.0)
        if wait and threading.current_thread() is not self.reader:
            self.reader.join(2.0)
            if self.reader.is_alive():
                self.ws.abort()
                self.reader.join(1.0)

    def abort(self, reason: str) -> None:
        """Drops the socket at once (a transfer cut off on the client side)."""
        with self.lock:
            if self.dead is None:
                self.dead = _closed_error(reason)
            sink = self.read_sink
        if sink is not None:
            sink.abandoned = True
        self.ws.abort()


class _Callbacks:
    """Runs listener callbacks on one thread of their own, in order, so that a slow or calling
    callback never stalls the socket's reader."""

    def __init__(self) -> None:
        self.queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self.thread: threading.Thread | None = None
        self.lock = threading.Lock()

    def submit(self, callbacks: list[Callable[[Any], Any]], value: Any) -> None:
        if not callbacks:
            return
        with self.lock:
            if self.thread is None or not self.thread.is_alive():
                self.thread = threading.Thread(target=self._run, name="portico-client-callbacks", daemon=True)
                self.thread.start()
        self.queue.put((callbacks, value))

    def stop(self) -> None:
        with self.lock:
            if self.thread is not None:
                self.queue.put(None)
                self.thread = None

    def _run(self) -> None:
        while True:
            item = self.queue.get()
            if item is None:
                return
            callbacks, value = item
            for callback in callbacks:
                try:
                    callback(value)
                except Exception:
                    log.exception("portico.client: a listener callback raised")


class _Slot:
    """What a proxy's finalizer needs: its current connection and its callback thread."""

    def __init__(self) -> None:
        self.conn: _Connection | None = None
        self.callbacks = _Callbacks()

    def release(self) -> None:
        conn, self.conn = self.conn, None
        if conn is not None:
            conn.shutdown(wait=False)
        self.callbacks.stop()


class _Method:
    """``proxy.name``: calling it calls the remote method ``name``."""

    __slots__ = ("_proxy", "_name")

    def __init__(self, proxy: InterfaceProxy, name: str) -> None:
        self._proxy = proxy
        self._name = name

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._proxy.call(self._name, *args, **kwargs)

    def __repr__(self) -> str:
        return f"<remote method {self._name} of {self._proxy!r}>"


class InterfaceProxy:
    """One interface, driven over one WebSocket (``/v1/interfaces/ws``), opened on first use.

    ``proxy.add(2)`` calls the remote ``add`` and returns its result; a generator method returns an
    iterator of its items as they arrive (``for x in proxy.ticks(5)``). Calls from several threads
    may be in flight at once. Use :meth:`call` for a method whose name is taken by the proxy
    (``call``, ``close``, ``upload``, ``read``, …). If the socket drops, what waited on it raises
    ``GatewayError("connection_closed")`` and the next use reconnects.
    """

    def __init__(self, gateway: Gateway, target: str, version: list[Any] | None, *, uuid: str | None = None, label: str | None = None) -> None:
        self._gateway = gateway
        self._target = target
        self._version = version
        self._uuid_arg = uuid
        self._label = label
        self._lock = threading.Lock()
        self._slot = _Slot()
        # Closes the socket of a proxy nobody holds any more (and stops its callback thread).
        weakref.finalize(self, _Slot.release, self._slot)
        self._closed = False
        self._info: dict[str, Any] | None = None
        self._listeners: dict[str, list[Callable[[Any], Any]]] = {"event": [], "widget_change": []}

    # ------------------------------------------------------------ connection

    def _connection(self) -> _Connection:
        with self._lock:
            if self._closed:
                raise GatewayError("connection_closed", None, "this proxy is closed")
            conn = self._slot.conn
            if conn is not None and conn.dead is None:
                return conn
            conn = _Connection(self, self._gateway._open_socket(INTERFACES_WS))
            conn.reader.start()
            frame: dict[str, Any] = {"type": "connect", "target": self._target}
            if self._version is not None:
                frame["version"] = self._version
            if self._uuid_arg is not None:
                frame["uuid"] = self._uuid_arg
            if self._label is not None:
                frame["label"] = self._label
            try:
                answer = conn.exchange(frame, timeout=self._gateway.timeout)
            except BaseException:
                conn.shutdown(wait=False)
                raise
            conn.info = self._info = dict(answer.get("payload") or {})
            self._slot.conn = conn
            return conn

    @property
    def _conn(self) -> _Connection | None:
        """The current connection, if any (for tests and debugging)."""
        return self._slot.conn

    @property
    def info(self) -> dict[str, Any]:
        """The InterfaceInfo the gateway answered the connect with (uuid, module, config, label, …)."""
        self._connection()
        return dict(self._info or {})

    @property
    def uuid(self) -> str:
        """The interface's uuid (connects if needed)."""
        return self.info["uuid"]

    def close(self) -> None:
        """Closes the socket (the gateway cancels this proxy's calls in flight); idempotent."""
        with self._lock:
            self._closed = True
            conn, self._slot.conn = self._slot.conn, None
        if conn is not None:
            conn.shutdown()
        self._slot.callbacks.stop()

    def __enter__(self) -> InterfaceProxy:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:  # never goes to the network, never shows the token
        uuid = (self._info or {}).get("uuid") or self._uuid_arg
        version = f" {self._version!r}" if self._version else ""
        return f"<portico.client.InterfaceProxy {self._target}{version}{' ' + uuid if uuid else ''} at {self._gateway.url}>"

    # ----------------------------------------------------------------- calls

    def __getattr__(self, name: str) -> _Method:
        if name.startswith("_"):
            raise AttributeError(name)
        return _Method(self, name)

    def call(self, method: str, /, *args: Any, **kwargs: Any) -> Any:
        """Calls ``method`` remotely: returns its result, or an iterator over the items it yields.

        The first frame answering the call decides: ``result`` → its value; ``stream`` → an
        iterator that yields each item as it arrives (leaving it early stops the call when
        nothing else uses the socket, otherwise drops the rest). Errors raise GatewayError.
        """
        conn = self._connection()
        waiter: queue.SimpleQueue[Any] = queue.SimpleQueue()
        call_id = conn.register(waiter)
        frame: dict[str, Any] = {"type": "call", "id": call_id, "method": method}
        if args:
            frame["args"] = list(args)
        if kwargs:
            frame["kwargs"] = kwargs
        try:
            conn.send(frame)
            first = conn.next(waiter)
        except GatewayError:
            conn.forget(call_id)
            raise
        except BaseException:  # KeyboardInterrupt while waiting, a non-JSON argument
            conn.abandon(call_id)
            raise
        if first.get("type") == "stream":
            return self._stream(conn, call_id, waiter, first)
        conn.forget(call_id)
        return first.get("payload")

    @staticmethod
    def _stream(conn: _Connection, call_id: int, waiter: Any, first: dict[str, Any]) -> Iterator[Any]:
        frame = first
        finished = False
        try:
            while True:
                if frame.get("type") != "stream":
                    raise GatewayError("invalid_frame", None, f"unexpected {frame.get('type')!r} frame in a stream")
                if frame.get("final"):
                    finished = True
                    return
                yield frame.get("payload")
                frame = conn.next(waiter)
        except GatewayError:
            finished = True
            raise
        finally:
            if finished:
                conn.forget(call_id)
            else:
                conn.abandon(call_id)

    # ------------------------------------------------------------- listeners

    def on_event(self, callback: Callable[[Any], Any]) -> Callable[[Any], Any]:
        """Calls ``callback(payload)`` for every ``event`` the interface emits (connects now).

        Callbacks run in order on one thread of the proxy's own; they may call the proxy.
        Returns ``callback``, so this works as a decorator.
        """
        self._listeners["event"].append(callback)
        self._connection()
        return callback

    def off_event(self, callback: Callable[[Any], Any]) -> None:
        """Stops calling ``callback`` for events."""
        if callback in self._listeners["event"]:
            self._listeners["event"].remove(callback)

    def on_widget_change(self, callback: Callable[[dict[str, Any]], Any]) -> Callable[[dict[str, Any]], Any]:
        """Calls ``callback(changes)`` for widget state pushed by the gateway: changes another
        client made, or the interface's ``push_widget_change`` (this proxy's own
        :meth:`widget_set` returns its changes instead). Connects now; returns ``callback``."""
        self._listeners["widget_change"].append(callback)
        self._connection()
        return callback

    def off_widget_change(self, callback: Callable[[dict[str, Any]], Any]) -> None:
        """Stops calling ``callback`` for widget changes."""
        if callback in self._listeners["widget_change"]:
            self._listeners["widget_change"].remove(callback)

    def _has_listeners(self) -> bool:
        return any(self._listeners.values())

    def _dispatch(self, kind: str, value: Any) -> None:
        self._slot.callbacks.submit(list(self._listeners[kind]), value)

    # ---------------------------------------------------------------- widget

    def widget_state(self) -> dict[str, Any]:
        """The widget's full synced state (``widget_get`` → ``widget_state``)."""
        answer = self._connection().exchange({"type": "widget_get"})
        return dict((answer.get("payload") or {}).get("state") or {})

    def widget_set(self, **changes: Any) -> dict[str, Any]:
        """Applies ``changes`` through the interface's ``widget_update``; returns the normalized
        changes every attached client receives (``widget_set`` → ``widget_change``)."""
        answer = self._connection().exchange({"type": "widget_set", "changes": changes})
        return dict((answer.get("payload") or {}).get("changes") or {})

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        """The live widget for JupyterLab (with the Portico extension), with HTML and text fallbacks.

        The bundle names the gateway, the interface and the project, never the token: the front
        end takes its credentials from its own settings.
        """
        try:
            info = self.info
        except GatewayError as err:
            return {"text/plain": f"{self!r} (not connected: {err})"}
        uuid, module = info.get("uuid"), info.get("module") or self._target
        url = self._gateway.url
        bundle: dict[str, Any] = {
            WIDGET_MIME_TYPE: {"url": url, "uuid": uuid, "module": module, "project": self._gateway.project, "version": 1},
            "text/html": (
                '<div class="portico-widget-fallback">'
                f"Portico interface <b>{html.escape(str(module))}</b> <code>{html.escape(str(uuid))}</code>, "
                f'served by <a href="{html.escape(url)}/docs" target="_blank" rel="noopener">{html.escape(url)}</a>. '
                "The live widget shows in JupyterLab with the Portico extension."
                "</div>"
            ),
            "text/plain": repr(self),
        }
        if include:
            bundle = {k: v for k, v in bundle.items() if k in include}
        if exclude:
            bundle = {k: v for k, v in bundle.items() if k not in exclude}
        return bundle

    # ---------------------------------------------------------------- binary

    def upload(
        self,
        path: str,
        data: bytes | bytearray | memoryview | str | os.PathLike[str] | BinaryIO,
        mode: str = "write",
        progress: Callable[[int, int | None], Any] | None = None,
        block: int = 1 << 20,
    ) -> dict[str, Any]:
        """Streams bytes to ``path`` inside the interface's folder; returns the ``chunk_done``
        payload (``{"path", "bytes_written", "mode"}``) once they are durable.

        ``data``: bytes-like, a local file path (``str`` or path-like), or a binary file object
        (read in ``block``-byte pieces, never all at once). ``mode``: ``"write"`` replaces the
        file, ``"append"`` adds to it. ``progress(bytes_sent, total)`` is called after each block
        (``total`` is None for a file object of unknown size). If the upload is cut off on this
        side, the socket is dropped, so the gateway leaves the target as it was.
        """
        if mode not in ("write", "append"):
            raise ValueError(f"mode is 'write' or 'append', not {mode!r}")
        if block < 1:
            raise ValueError("block must be positive")
        opened: BinaryIO | None = None
        if isinstance(data, (str, os.PathLike)):
            opened = open(data, "rb")  # noqa: SIM115 - closed below
            source: Any = opened
        else:
            source = data
        try:
            pieces, total = _pieces(source, block)
            return self._upload(path, pieces, total, mode, progress)
        finally:
            if opened is not None:
                opened.close()

    def _upload(self, path: str, pieces: Iterator[bytes | memoryview], total: int | None, mode: str, progress: Any) -> dict[str, Any]:
        conn = self._connection()
        with conn.transfer_lock:
            waiter: queue.SimpleQueue[Any] = queue.SimpleQueue()
            transfer_id = conn.register(waiter)
            conn.upload_id = transfer_id
            done = False
            try:
                conn.send({"type": "chunk_start", "id": transfer_id, "mode": mode, "path": path})
                sent = 0
                early: dict[str, Any] | None = None
                for piece in pieces:
                    if not waiter.empty():  # the gateway refused the upload already: stop sending
                        early = waiter.get()
                        break
                    conn.send_binary(piece)
                    sent += len(piece)
                    if progress is not None:
                        progress(sent, total)
                if sent == 0 and early is None and progress is not None:
                    progress(0, total)
                conn.send({"type": "chunk_end", "id": transfer_id})
                if early is not None:
                    waiter.put(early)
                answer = conn.next(waiter)
                done = True
                if answer.get("type") != "chunk_done":
                    raise GatewayError("invalid_frame", None, f"unexpected {answer.get('type')!r} frame answering an upload")
                return dict(answer.get("payload") or {})
            except GatewayError:
                done = True  # answered by the gateway, or the socket is gone already
                raise
            finally:
                conn.upload_id = None
                conn.forget(transfer_id)
                if not done:
                    conn.abort("an upload was cut off on the client side")

    def read(self, params: Mapping[str, Any] | None = None, progress: Callable[[int, None], Any] | None = None) -> bytes:
        """The bytes the interface's ``read(params)`` hook serves (``chunk_start`` mode read).

        ``progress(bytes_so_far, None)`` is called per received frame. For large data use
        :meth:`read_to`, which never holds it all.
        """
        parts: list[bytes] = []
        self._read(params, parts.append, progress)
        return b"".join(parts)

    def read_to(
        self,
        params: Mapping[str, Any] | None,
        file: str | os.PathLike[str] | BinaryIO,
        progress: Callable[[int, None], Any] | None = None,
    ) -> int:
        """Streams what ``read(params)`` serves into ``file`` (a path, or a binary file object),
        a frame at a time; returns the number of bytes written. The socket stops reading while
        the file is behind, so memory stays bounded."""
        if isinstance(file, (str, os.PathLike)):
            with open(file, "wb") as handle:
                return self._read(params, handle.write, progress)
        return self._read(params, file.write, progress)

    def _read(self, params: Mapping[str, Any] | None, write: Callable[[bytes], Any], progress: Any) -> int:
        conn = self._connection()
        with conn.transfer_lock:
            transfer_id = next(conn.ids)
            sink = _ReadSink(transfer_id)
            with conn.lock:
                if conn.dead:
                    raise conn.dead
                conn.pending[transfer_id] = sink
                conn.read_sink = sink
            received = 0
            done = False
            try:
                conn.send({"type": "chunk_start", "id": transfer_id, "mode": "read", "params": dict(params or {})})
                while True:
                    try:
                        item = sink.queue.get(timeout=0.5)
                    except queue.Empty:
                        if conn.dead:
                            done = True
                            raise conn.dead from None
                        continue
                    if isinstance(item, (bytes, bytearray)):
                        write(item)
                        received += len(item)
                        if progress is not None:
                            progress(received, None)
                        continue
                    done = True
                    if isinstance(item, _Lost):
                        raise item.error
                    if item.get("type") == "error":
                        raise GatewayError.from_detail(item.get("payload") or {})
                    if item.get("type") != "chunk_done":
                        raise GatewayError("invalid_frame", None, f"unexpected {item.get('type')!r} frame answering a read")
                    return received
            finally:
                with conn.lock:
                    conn.pending.pop(transfer_id, None)
                    if conn.read_sink is sink:
                        conn.read_sink = None
                if not done:
                    conn.abort("a read was cut off on the client side")


def _pieces(source: Any, block: int) -> tuple[Iterator[bytes | memoryview], int | None]:
    """The upload's pieces of at most ``block`` bytes, and its total size when it is known."""
    if isinstance(source, (bytes, bytearray, memoryview)):
        view = memoryview(source).cast("B")
        return (view[i : i + block] for i in range(0, len(view), block)), len(view)
    if not hasattr(source, "read"):
        raise TypeError(f"upload data is bytes, a file path or a binary file object, not {type(source).__name__}")
    total: int | None = None
    try:
        info = os.fstat(source.fileno())
        if stat.S_ISREG(info.st_mode):
            total = max(0, info.st_size - source.tell())
    except (AttributeError, OSError, ValueError):
        total = None

    def blocks() -> Iterator[bytes]:
        while True:
            piece = source.read(block)
            if not piece:
                return
            if isinstance(piece, str):
                raise TypeError("upload needs a binary file object (opened with 'rb'), not a text one")
            yield piece

    return blocks(), total
