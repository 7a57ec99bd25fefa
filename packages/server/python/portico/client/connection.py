"""One WebSocket of a proxy: sending frames, and a reader thread routing what arrives.

Owns the table of waiters by frame id, the routing of text frames (answers, stream items,
events, widget changes, instance restarts) and of binary frames (into the one read in progress,
bounded for backpressure), and what happens to every waiter when the socket goes away. Events carry
no call id: while a call is in flight they go to the oldest one, whose consumer moves its progress
bar (``progress.py``) and hands them to the listeners in order with its items; otherwise straight
to the listeners. A ``waiting`` notice goes to the request it names, whose wait prints it.
"""

from __future__ import annotations

import base64
import binascii
import itertools
import json
import logging
import queue
import threading
import weakref
from typing import Any, Callable, Mapping

from .. import _ws_client
from .._buffers import put_buffers, split_buffers
from .._json import dumps
from .display import Display
from .errors import GatewayError, closed_error
from .listeners import Listeners
from .progress import show_waiting

log = logging.getLogger("portico.client")

#: Binary frames of a read held in memory at most, per transfer, before the socket stops reading.
READ_QUEUE_FRAMES = 8


class Lost:
    """Put into a waiter's queue when the socket went away."""

    def __init__(self, error: GatewayError) -> None:
        self.error = error


#: Marks a call whose answer nobody waits for any more: its frames are dropped.
_DISCARD = object()
#: Frame types that end the exchange they answer.
_TERMINAL = frozenset({"result", "error", "chunk_done", "connected", "widget_state", "widget_change", "released", "pong"})


def _is_terminal(frame: Mapping[str, Any]) -> bool:
    kind = frame.get("type")
    return kind in _TERMINAL or (kind == "stream" and bool(frame.get("final")))


class ReadSink:
    """Where the reader thread puts one read's binary frames and its end; bounded for backpressure."""

    def __init__(self, transfer_id: int) -> None:
        self.id = transfer_id
        self.queue: queue.Queue[Any] = queue.Queue(maxsize=READ_QUEUE_FRAMES)
        self.abandoned = False


class Connection:
    """One WebSocket of a proxy: a reader thread routes frames by id to whoever waits for them."""

    def __init__(self, listeners: Listeners, ws: _ws_client.WebSocket) -> None:
        # Weak, as the proxy that owns them: a proxy nobody holds any more is collected (a callback
        # may hold it), and its finalizer closes this socket.
        self.listeners = weakref.ref(listeners)
        self.ws = ws
        self.ids = itertools.count(1)
        self.lock = threading.Lock()
        self.pending: dict[Any, Any] = {}
        #: Calls in flight that want the events emitted meanwhile, oldest first.
        self.watchers: list[Any] = []
        #: One binary transfer per socket at a time (binary frames carry no id).
        self.transfer_lock = threading.Lock()
        self.read_sink: ReadSink | None = None
        self.upload_id: int | None = None
        self.dead: GatewayError | None = None
        self.info: dict[str, Any] = {}
        self.reader = threading.Thread(target=self._read_loop, name="portico-client-reader", daemon=True)

    # --------------------------------------------------------------- sending

    def send(self, frame: Mapping[str, Any]) -> None:
        text = dumps(frame)  # numpy values, NaN, dates as the worker writes them (_json)
        self._send(lambda: self.ws.send_text(text))

    def send_binary(self, data: bytes | memoryview) -> None:
        self._send(lambda: self.ws.send_binary(data))

    def _send(self, action: Callable[[], None]) -> None:
        if self.dead:
            raise self.dead
        try:
            action()
        except _ws_client.ConnectionClosed as err:
            raise self.dead or closed_error(f"the WebSocket is closed ({err.code} {err.reason})".strip()) from None

    def register(self, waiter: Any, watch: bool = False) -> int:
        """A fresh frame id whose answers go to ``waiter``; ``watch``: events emitted while the
        call is in flight go there too (when it is the oldest such call), as ``event`` frames."""
        frame_id = next(self.ids)
        with self.lock:
            if self.dead:
                raise self.dead
            self.pending[frame_id] = waiter
            if watch:
                self.watchers.append(frame_id)
        return frame_id

    def forget(self, frame_id: Any) -> None:
        with self.lock:
            self.pending.pop(frame_id, None)
            if frame_id in self.watchers:
                self.watchers.remove(frame_id)

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
        """The next frame for ``waiter``; raises GatewayError for an error frame or a lost socket.
        A ``waiting`` notice (the request waits for a pending Slurm allocation) is shown
        (``progress.show_waiting``) and the wait goes on without ``timeout``: the gateway answers,
        and bounds that wait itself (``--worker-wait``)."""
        while True:
            try:
                item = waiter.get(timeout=timeout)
            except queue.Empty:
                raise GatewayError("timeout", None, f"no answer from the gateway within {timeout} s") from None
            if isinstance(item, Lost):
                raise item.error
            kind = item.get("type")
            if kind == "waiting":
                show_waiting(item.get("payload"))
                timeout = None
                continue
            if kind == "error":
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
            listeners = self.listeners()
            listened = listeners is not None and listeners.any()
            alone = not others and self.read_sink is None and self.upload_id is None and not listened
            self.pending[frame_id] = _DISCARD
            if frame_id in self.watchers:
                self.watchers.remove(frame_id)
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
            error = closed_error(f"the WebSocket closed ({err.code}{' ' + err.reason if err.reason else ''})")
        except BaseException as err:  # a bug here must not leave waiters hanging
            log.exception("portico.client: the reader thread failed")
            error = closed_error(f"the reader thread failed: {err!r}")
            self.ws.abort()
        finally:
            self._die(error or closed_error("the WebSocket closed"))

    def _die(self, error: GatewayError) -> None:
        with self.lock:
            unexpected = self.dead is None  # not closed by the proxy (shutdown, abort)
            if self.dead is None:
                self.dead = error
            waiters = list(self.pending.values())
            self.pending.clear()
            self.watchers.clear()
            sink, self.read_sink = self.read_sink, None
        if sink is not None and sink not in waiters:
            waiters.append(sink)
        lost = Lost(self.dead)
        for waiter in waiters:
            if waiter is _DISCARD:
                continue
            target = waiter.queue if isinstance(waiter, ReadSink) else waiter
            try:
                target.put_nowait(lost)
            except queue.Full:
                pass  # the read's consumer checks `dead` while it waits
        if unexpected:
            self._dispatch("closed", self.dead)

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
            # While a call is in flight, its events go with its frames, and its consumer hands them
            # to the listeners in order with its items (proxy._answer); otherwise they go now.
            with self.lock:
                watcher = self.pending.get(self.watchers[0]) if self.watchers else None
            if watcher is not None and watcher is not _DISCARD:
                watcher.put(frame)
            else:
                self._dispatch("event", Display.of(frame))
            return
        if kind == "instance_restarted":
            payload = frame.get("payload")
            self._dispatch("instance_restarted", dict(payload) if isinstance(payload, dict) else {})
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
                self._dispatch("widget_change", with_binary_values(frame.get("payload"), "changes"))
            elif kind == "widget_msg":  # push_widget_message: {content, buffers?} (base64)
                self._dispatch("widget_msg", widget_message(frame.get("payload")))
            elif kind == "error":
                detail = frame.get("payload") or {}
                log.warning("portico.client: gateway error on the socket: %s: %s", detail.get("code"), detail.get("message"))
            elif kind != "pong":
                log.debug("portico.client: unrouted frame %.200r", frame)
            return
        if waiter is _DISCARD:
            return
        if isinstance(waiter, ReadSink):
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
        listeners = self.listeners()
        if listeners is not None:
            listeners.dispatch(kind, value)

    # --------------------------------------------------------------- closing

    def shutdown(self, wait: bool = True) -> None:
        """Sends ``close`` (the gateway cancels this socket's calls and closes), then closes."""
        with self.lock:
            if self.dead is None:
                self.dead = closed_error("the proxy was closed")
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
                self.dead = closed_error(reason)
            sink = self.read_sink
        if sink is not None:
            sink.abandoned = True
        self.ws.abort()


def set_fields(changes: Mapping[str, Any]) -> dict[str, Any]:
    """A ``widget_set`` frame's fields for ``changes``: binary values as base64 buffers placed by
    ``buffer_paths`` (the way back is ``with_binary_values``)."""
    plain, paths, buffers = split_buffers(dict(changes))
    fields: dict[str, Any] = {"changes": plain}
    if buffers:
        fields.update(buffer_paths=paths, buffers=[base64.b64encode(b).decode("ascii") for b in buffers])
    return fields


def with_binary_values(payload: Any, key: str) -> dict[str, Any]:
    """``payload[key]`` (a widget state or change set) with its base64 ``buffers`` put back as
    ``bytes`` where ``buffer_paths`` says, as the interface's Python side holds them."""
    payload = payload if isinstance(payload, dict) else {}
    value = dict(payload.get(key) or {})
    encoded = payload.get("buffers") or []
    if not encoded:
        return value
    try:
        return put_buffers(value, payload.get("buffer_paths"), [base64.b64decode(item, validate=True) for item in encoded])
    except (TypeError, ValueError, binascii.Error) as exc:
        raise GatewayError("bad_frame", None, f"The gateway sent widget buffers that do not fit the {key}: {exc}") from None


def widget_message(payload: Any) -> tuple[Any, list[bytes]]:
    """A ``widget_msg`` payload's content and its buffers (sent base64 on a text socket)."""
    payload = payload if isinstance(payload, dict) else {}
    try:
        buffers = [base64.b64decode(item, validate=True) for item in payload.get("buffers") or []]
    except (TypeError, ValueError, binascii.Error) as exc:
        raise GatewayError("bad_frame", None, f"The gateway sent widget message buffers that are not base64: {exc}") from None
    return payload.get("content"), buffers
