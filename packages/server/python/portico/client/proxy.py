"""``InterfaceProxy``: one interface driven over one WebSocket, opened on first use.

Owns connecting (and reconnecting after a drop), remote calls and streams, listeners (run on a
callback thread of the proxy's own), and the widget operations. The socket itself is
``connection.py``; uploads and reads are ``transfers.py``; how it shows in a notebook is
``widget_bundle.py`` and, through the kernel, ``kernel_widget.py``.
"""

from __future__ import annotations

import logging
import queue
import sys
import threading
import weakref
from typing import Any, Callable, Iterator, Protocol

from .. import _ws_client
from . import transfers, widget_bundle
from .widget_bundle import WIDGET_MIME_TYPE
from .connection import Connection, set_fields, with_binary_values
from .display import Display
from .errors import GatewayError
from .listeners import Listeners
from .progress import Progress

log = logging.getLogger("portico.client")

#: WebSocket path of the interface protocol.
INTERFACES_WS = "/v1/interfaces/ws"


class GatewayLike(Protocol):
    """What a proxy uses of its :class:`~portico.client.Gateway` (read live: ``g.progress = False``
    applies to proxies made before)."""

    url: str
    project: str | None
    timeout: float | None
    progress: bool

    def open_socket(self, path: str) -> _ws_client.WebSocket: ...

    def fetch(self, path: str, query: Any = None, accept: str = "*/*") -> tuple[bytes, Any]: ...


class _Slot:
    """What a proxy's finalizer needs: its current connection and its listeners' thread."""

    def __init__(self) -> None:
        self.conn: Connection | None = None
        self.listeners = Listeners()

    def release(self) -> None:
        conn, self.conn = self.conn, None
        if conn is not None:
            conn.shutdown(wait=False)
        self.listeners.stop()


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


def _answer(conn: Connection, waiter: Any, bar: Progress | None) -> dict[str, Any]:
    """The next frame answering a call; events emitted meanwhile move the bar and reach the
    ``on_event`` listeners on the way, and what the method printed is printed here (under the
    cell in a notebook), all in order with the call's items."""
    while True:
        frame = conn.next(waiter)
        kind = frame.get("type")
        if kind == "output":  # what the method printed: under the cell, or on this process's stdout/stderr
            payload = frame.get("payload") or {}
            target = sys.stderr if payload.get("stream") == "stderr" else sys.stdout
            target.write(str(payload.get("text", "")))
            target.flush()
            continue
        if kind != "event":
            return frame
        if bar is not None:
            bar.event(frame.get("payload"))
        listeners = conn.listeners()
        if listeners is not None:
            listeners.run_now("event", Display.of(frame))


class InterfaceProxy(transfers.DataMethods):
    """One interface, driven over one WebSocket (``/v1/interfaces/ws``), opened on first use.

    ``proxy.add(2)`` calls the remote ``add`` and returns its result; a generator method returns an
    iterator of its items as they arrive (``for x in proxy.ticks(5)``). Calls from several threads
    may be in flight at once. Use :meth:`call` for a method whose name is taken by the proxy
    (``call``, ``close``, ``upload``, ``read``, ``release``, …). If the socket drops, what waited on
    it raises ``GatewayError("connection_closed")`` and the next use reconnects.

    Lifetime: closing the proxy (or dropping it, or the script or kernel exiting) only detaches; the
    instance lives on in the gateway until :meth:`release` or until it was idle for the gateway's
    ``--instance-idle`` seconds. If the instance dies with its Python worker, the gateway restarts
    the worker and makes the instance again on its next use (with its saved widget state): the
    proxy keeps working, and :meth:`on_restart` listeners hear of it.
    """

    def __init__(self, gateway: GatewayLike, target: str, version: list[Any] | None, *, uuid: str | None = None, label: str | None = None) -> None:
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
        self._listeners = self._slot.listeners
        self._kernel_widget: Any = None  # widget_bundle.kernel_widget(self), made on first display

    # ------------------------------------------------------------ connection

    def _connection(self) -> Connection:
        with self._lock:
            if self._closed:
                raise GatewayError("connection_closed", None, "this proxy is closed")
            conn = self._slot.conn
            if conn is not None and conn.dead is None:
                return conn
            conn = Connection(self._listeners, self._gateway.open_socket(INTERFACES_WS))
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
    def _conn(self) -> Connection | None:
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

    @property
    def class_name(self) -> str | None:
        """The interface class name (connects if needed); from ``kind`` with a gateway older than ``class_name``."""
        info = self.info
        return info["class_name"] if "class_name" in info else info.get("kind")

    def close(self) -> None:
        """Closes the socket (the gateway cancels this proxy's calls in flight); idempotent.

        This only detaches: the instance and its state stay in the gateway (see :meth:`release`).
        """
        with self._lock:
            self._closed = True
            conn, self._slot.conn = self._slot.conn, None
        if conn is not None:
            conn.shutdown()
        self._listeners.stop()

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

        The first frame answering the call decides: ``result`` → its value (a :class:`Display`
        when the gateway sent its MIME bundle, docs/writing/rich-results.md); ``stream`` → an
        iterator that yields each item as it arrives (a :class:`Display` for an item the method
        yielded as a figure, an image…; leaving it early stops the call when nothing else uses
        the socket, otherwise drops the rest). Errors raise GatewayError.

        In a notebook kernel, progress events the method emits while the call runs show as one
        progress bar in the cell, and a stream counts its items (off with
        ``Gateway.progress = False``).
        """
        conn = self._connection()
        waiter: queue.SimpleQueue[Any] = queue.SimpleQueue()
        bar = Progress.start(self._gateway.progress)
        call_id = conn.register(waiter, watch=True)
        frame: dict[str, Any] = {"type": "call", "id": call_id, "method": method}
        if args:
            frame["args"] = list(args)
        if kwargs:
            frame["kwargs"] = kwargs
        try:
            conn.send(frame)
            first = _answer(conn, waiter, bar)
        except GatewayError as err:
            conn.forget(call_id)
            if bar is not None:
                bar.end(f"failed: {err.code}")
            raise
        except BaseException:  # KeyboardInterrupt while waiting, a non-JSON argument
            conn.abandon(call_id)
            if bar is not None:
                bar.end("stopped")
            raise
        if first.get("type") == "stream":
            return self._stream(conn, call_id, waiter, first, bar)
        conn.forget(call_id)
        if bar is not None:
            bar.end("done")
        return Display.of(first)

    def _stream(self, conn: Connection, call_id: int, waiter: Any, first: dict[str, Any], bar: Progress | None) -> Iterator[Any]:
        # A method (not static): the iterator holds the proxy, so that iterating a proxy nobody
        # else holds (``list(g.interface("streamer").ticks(3))``) never closes its socket.
        frame = first
        outcome = "stopped"
        try:
            while True:
                if frame.get("type") != "stream":
                    raise GatewayError("invalid_frame", None, f"unexpected {frame.get('type')!r} frame in a stream")
                if frame.get("final"):
                    outcome = "done"
                    return
                if bar is not None:
                    bar.item()
                yield Display.of(frame)
                frame = _answer(conn, waiter, bar)
        except GatewayError as err:
            outcome = f"failed: {err.code}"
            raise
        finally:
            if outcome == "stopped":
                conn.abandon(call_id)
            else:
                conn.forget(call_id)
            if bar is not None:
                bar.end(outcome)

    # ------------------------------------------------------------- listeners

    def on_event(self, callback: Callable[[Any], Any]) -> Callable[[Any], Any]:
        """Calls ``callback(payload)`` for every ``event`` the interface emits (connects now); for
        an event that carries a MIME bundle (``self.emit(fig)``), a :class:`Display` whose
        ``payload`` is the event's JSON value (``on_event(IPython.display.display)`` shows them).

        Events a method emits while a call of this proxy is in flight reach the callbacks in the
        thread consuming that call, in order with its items (``for x in p.ticks(3)`` sees item,
        event, item, …); others run in order on one thread of the proxy's own. Callbacks may call the proxy.
        Returns ``callback``, so this works as a decorator.
        """
        self._listeners.add("event", callback)
        self._connection()
        return callback

    def off_event(self, callback: Callable[[Any], Any]) -> None:
        """Stops calling ``callback`` for events."""
        self._listeners.remove("event", callback)

    def on_widget_change(self, callback: Callable[[dict[str, Any]], Any]) -> Callable[[dict[str, Any]], Any]:
        """Calls ``callback(changes)`` for widget state pushed by the gateway: changes another
        client made, or the interface's ``push_widget_change`` (this proxy's own
        :meth:`widget_set` returns its changes instead). Connects now; returns ``callback``."""
        self._listeners.add("widget_change", callback)
        self._connection()
        return callback

    def off_widget_change(self, callback: Callable[[dict[str, Any]], Any]) -> None:
        """Stops calling ``callback`` for widget changes."""
        self._listeners.remove("widget_change", callback)

    def on_restart(self, callback: Callable[[dict[str, Any]], Any]) -> Callable[[dict[str, Any]], Any]:
        """Calls ``callback(info)`` when the live instance died with its Python worker (connects now).

        ``info`` is the ``instance_restarted`` payload: ``{"uuid", "reason", "message"}``, where
        ``reason`` is ``"worker_crashed"`` (it exited or was killed), ``"worker_wedged"`` (it
        stopped answering and was killed), ``"allocation_ended"`` (``portico serve --workers slurm``:
        Slurm ended the job it ran in) or ``"source_changed"`` (``portico serve --reload``
        started it again because the project's Python files changed). The gateway has already started the worker again; the
        next call makes the instance again (its state in memory is gone, a persisted widget state
        comes back), so the proxy needs nothing. Calls in flight when it died raise GatewayError.
        Callbacks run as :meth:`on_event`'s do; returns ``callback``, so this works as a decorator.
        """
        self._listeners.add("instance_restarted", callback)
        self._connection()
        return callback

    def off_restart(self, callback: Callable[[dict[str, Any]], Any]) -> None:
        """Stops calling ``callback`` for restarts."""
        self._listeners.remove("instance_restarted", callback)

    # -------------------------------------------------------------- lifetime

    def release(self) -> bool:
        """Drops the live instance in the gateway (``release`` → ``released``; connects if needed).

        Its state in memory goes; its record, folder and saved widget state stay, and the next call
        (from this proxy, which stays connected, or any client) makes the instance again from them.
        Returns True when a live instance was dropped, False when none was live (already released,
        never made, or lost with its worker). Closing the proxy never releases.
        """
        answer = self._connection().exchange({"type": "release"})
        payload = answer.get("payload")
        return bool(payload.get("released")) if isinstance(payload, dict) else False

    # ---------------------------------------------------------------- widget

    def widget_state(self) -> dict[str, Any]:
        """The widget's full synced state (``widget_get`` → ``widget_state``)."""
        answer = self._connection().exchange({"type": "widget_get"})
        return with_binary_values(answer.get("payload"), "state")

    def widget_set(self, **changes: Any) -> dict[str, Any]:
        """Applies ``changes`` through the interface's ``widget_update``; returns the normalized
        changes every attached client receives (``widget_set`` → ``widget_change``)."""
        answer = self._connection().exchange({"type": "widget_set", **set_fields(changes)})
        return with_binary_values(answer.get("payload"), "changes")

    def widget(self) -> Any:
        """The interface's widget as an anywidget, synced through this kernel (``kernel_widget.py``).

        Made once per proxy: every display of it (or of the proxy) is a view of one model. Needs
        ``anywidget`` in this Python (``GatewayError("anywidget_missing")`` otherwise); a state
        with keys that cannot be traits raises ``widget_state_keys``.
        """
        if self._kernel_widget is None:
            self._kernel_widget = widget_bundle.kernel_widget_of(self)
        return self._kernel_widget.widget

    def _display_(self) -> Any:
        """What marimo shows for the proxy: its widget as an anywidget, or the text bundle."""
        return widget_bundle.marimo_view(self)

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        """The live widget, with HTML and text fallbacks (``widget_bundle.py``); never the token."""
        return widget_bundle.mimebundle(self, include, exclude)
