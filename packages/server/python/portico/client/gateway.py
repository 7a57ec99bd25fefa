"""``Gateway``: one gateway seen as one project, user and interpreter, and its REST operations.

Owns the settings every request carries (token, ``X-Service-*`` headers, timeout), the REST
operations (create, search, label, release, archive, call, dispatch), and opening a proxy's WebSocket.
"""

from __future__ import annotations

import os
import re
import urllib.parse
import weakref
from typing import Any, Iterable, Mapping

from .. import _ws_client
from . import rest
from .display import Display
from .errors import GatewayError
from .execution import Execution
from .proxy import InterfaceProxy

# RFC 7230 token characters: what a Sec-WebSocket-Protocol value may hold.
_TOKEN_CHARS = re.compile(r"^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$")


class Gateway:
    """A Portico gateway at ``url`` (``http://host:port``), seen as one project, user and interpreter.

    Without ``url``, the environment names it: ``PORTICO_URL``, with ``PORTICO_TOKEN`` as the
    token unless ``token`` is given (a notebook then holds neither). ``token`` is the gateway's API token (or a session token); ``project``, ``user`` and
    ``python`` go out as ``X-Service-Project``, ``X-Service-User`` and ``X-Service-Python`` on every
    request and WebSocket upgrade (None: the gateway's defaults). ``timeout`` bounds each REST
    request and each WebSocket connect, in seconds (None: no bound; calls may run up to the
    gateway's own limit).

    ``progress`` (an attribute too: ``g.progress = False``): in a notebook kernel, a call through
    an interface proxy whose method emits progress events (``{"progress": 0.5, "message": …}``)
    shows one progress bar in the cell, updated in place, and a stream counts its items; False
    shows nothing. Outside a kernel nothing is ever shown.

    Usable as a context manager: leaving it closes every interface proxy it made.
    """

    def __init__(
        self,
        url: str | None = None,
        token: str | None = None,
        project: str | None = None,
        user: str | None = None,
        python: str | None = None,
        *,
        timeout: float | None = None,
        progress: bool = True,
    ) -> None:
        if url is None:
            url = os.environ.get("PORTICO_URL") or ""
            if not url:
                raise ValueError("no gateway URL: pass Gateway('http://host:port') or set PORTICO_URL (and PORTICO_TOKEN when it has a token)")
            token = token if token is not None else os.environ.get("PORTICO_TOKEN") or None
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
        self.progress = progress
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
        return rest.request(self.url, self.token, self._service_headers(), self.timeout, method, path, body, query)

    def fetch(self, path: str, query: Mapping[str, Any] | None = None, accept: str = "*/*") -> tuple[bytes, Mapping[str, str]]:
        """``GET path``: the answer's bytes and headers, whatever its type (a widget's ES module)."""
        return rest.fetch(self.url, self.token, self._service_headers(), self.timeout, "GET", path, query=query, accept=accept)

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
            body["version"] = rest.version_list(version)
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

    def release(self, uuid: str) -> bool:
        """``POST /v1/interfaces/{uuid}/release``: drops the live instance of ``uuid`` (its record
        and saved widget state stay; the next use makes it again). True when one was live."""
        answer = self.request("POST", f"/v1/interfaces/{urllib.parse.quote(uuid, safe='')}/release")
        return bool((answer or {}).get("released"))

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
        class_name: str | None = None,
        filters: Any = None,
        include_archived: bool | None = None,
        offset: int | None = None,
        cursor: str | None = None,
        exact_total: bool | None = None,
    ) -> dict[str, Any]:
        """``POST /v1/interfaces/search``; returns ``{"items": [InterfaceInfo…], "total", "total_exact", "next_cursor"}``
        (``total`` counts every match when ``total_exact``; past 1,000 matches of a filter the
        gateway keeps no count of, it is 1,000 and ``total_exact`` is False, unless ``exact_total=True``).

        - ``module``, ``label``, ``created_by``, ``class_name`` (the interface class), ``kind``:
          exact matches. ``kind`` is the record kind as the reference server has it: ``"Interface"``
          for every interface record.
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
        for key, value in (("module", module), ("label", label), ("created_by", created_by), ("kind", kind), ("class_name", class_name)):
            if value is not None:
                body[key] = value
        if where is not None:
            body["config"] = {"filters": rest.filter_list(where)}
        if filters is not None:
            body["filters"] = rest.filter_list(filters)
        if sort is not None:
            body["sort"] = rest.sort_list(sort)
        for key, value in (
            ("limit", limit),
            ("offset", offset),
            ("cursor", cursor),
            ("include_archived", include_archived),
            ("exact_total", exact_total),
        ):
            if value is not None:
                body[key] = value
        return self.request("POST", "/v1/interfaces/search", body)

    def call(self, target: str, method: str, /, *args: Any, version: Any = None, **kwargs: Any) -> Any:
        """Calls ``method`` on ``target`` (module or uuid) over REST and returns its result (a
        :class:`Display` when it is a rich one: a figure shows in the notebook cell).

        One request, no socket: fine for a single call. Generator methods answer
        ``streaming_unsupported``; use :meth:`interface` for them. (``version`` is this call's
        own keyword: a method argument of that name goes through ``interface(...).call``.)
        """
        body: dict[str, Any] = {"target": target, "method": method, "args": list(args), "kwargs": kwargs}
        if version is not None:
            body["version"] = rest.version_list(version)
        return Display.of(self.request("POST", "/v1/interfaces/call", body))

    def dispatch(self, target: str, version: Any = None, context: Iterable[Any] | None = None) -> Execution:
        """Runs ``target``'s ``__call__`` in a run process of its own; returns the :class:`Execution`.

        ``context``: interfaces entered around the run, each ``"module"``,
        ``("module", version)`` or ``{"target", "version"}``.
        """
        entry: dict[str, Any] = {"target": target}
        if version is not None:
            entry["version"] = rest.version_list(version)
        if context is not None:
            entry["context"] = [rest.interface_ref(item) for item in context]
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
        proxy = InterfaceProxy(self, module_or_uuid, rest.version_list(version), uuid=uuid, label=label)
        self._proxies.add(proxy)
        return proxy

    def _ws_url(self, path: str) -> str:
        parts = urllib.parse.urlsplit(self.url)
        scheme = "wss" if parts.scheme == "https" else "ws"
        return urllib.parse.urlunsplit((scheme, parts.netloc, parts.path + path, "", ""))

    def open_socket(self, path: str) -> _ws_client.WebSocket:
        """A WebSocket to ``path`` of the gateway (``/v1/interfaces/ws``, ``/v1/executions/ws``),
        authenticated and bound to this gateway's project and user as the proxies' are."""
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
