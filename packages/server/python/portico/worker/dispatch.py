"""The worker: one project's parts, wired together, and the table from frame ``op`` to handler.

Each part owns its state and its ops (packages/server/src/kernel/README.md lists them):

    pipe.py       framing, leader/follower reading, the one writer         (ready), heartbeat
    modules.py    import, change stamps, invalidation, descriptions        resolve, modules, schema, invalidate
    instances.py  the instance cache, events and widget pushes             release
    calls.py      sync / async / generator calls, credit, cancel           call, credit, cancel
    reads.py      binary reads as chunk frames                             read
    widgets.py    widget hooks and widget assets                           widget_get, widget_set, widget_msg, widget_assets

Threads: one thread at a time reads and dispatches frames; a plain sync call is run by the
thread that read it, and a watchdog hands the reading to another thread when that call is still
running after ``HAND_OVER_AFTER_S`` (leader/follower, see ``Pipe.serve``), so a slow call stalls
the bridge for no longer than that. Pool threads run generators, imports,
resolution and reflection (``modules``, ``schema``); one thread runs the event loop; replies are
written to fd 4 by the thread that produced them, except that the reading thread holds the replies
of the calls it ran while more of a batch is already read (one write per batch, ``Pipe.serve``;
a lone call's reply is written at once). ``widget_set`` and ``widget_msg`` to one
instance run one at a time in arrival order, in that instance's lane (``widgets.py``).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from typing import Any, Callable

from .calls import Calls
from .instances import Instances
from .methods import Methods
from .modules import Modules
from .pipe import MAX_SYNC_THREADS, REPLY_FD, Exit, Pipe, Work
from .protocol import _Refusal, error_header, is_request_id, log
from .reads import Reads
from .widget_state import WidgetStates
from .widgets import Widgets

#: Ops that are requests: their refusals are answered to their `id` (README "Requests").
_REQUESTS = frozenset(
    {"resolve", "modules", "schema", "call", "read", "widget_get", "widget_set", "widget_msg", "widget_assets", "invalidate", "heartbeat"}
)


class Worker:
    """One project's interface instances and the calls running on them."""

    def __init__(self, project: str, reply_fd: int = REPLY_FD) -> None:
        self.project = project
        # Threads for sync user code, imports and reflection; one loop for coroutines.
        self.pool = concurrent.futures.ThreadPoolExecutor(MAX_SYNC_THREADS, thread_name_prefix="portico-call")
        self.loop = asyncio.new_event_loop()
        threading.Thread(target=self.loop.run_forever, name="portico-asyncio", daemon=True).start()
        self.pipe = Pipe(reply_fd, self.pool)
        self.modules = Modules(project, self.pipe, self.pool, self._forget_dependents)
        self.methods = Methods(self.modules.outdated)
        self.widget_states = WidgetStates(project, self.loop)  # saved widget state (widget_state.py)
        self.instances = Instances(project, self.modules, self.pipe, self.widget_states)
        self.calls = Calls(self.pipe, self.pool, self.loop, self.instances, self.methods)
        self.reads = Reads(self.pipe, self.pool, self.loop, self.calls)
        self.widgets = Widgets(project, self.pipe, self.pool, self.modules, self.calls)
        self._handlers: dict[str, Callable[[dict[str, Any]], Work | None]] = {
            "resolve": self.modules.on_resolve,
            "modules": self.modules.on_modules,
            "schema": self.modules.on_schema,
            "call": self.calls.on_call,
            "read": self.reads.on_read,
            "widget_get": self.widgets.on_widget_get,
            "widget_assets": self.widgets.on_widget_assets,
            "invalidate": self.modules.on_invalidate,
            "credit": self.calls.on_credit,
            "cancel": self.calls.on_cancel,
            "release": self.instances.on_release,
            "shutdown": self._on_shutdown,
            "heartbeat": self.pipe.on_heartbeat,
        }
        # Ops whose frame body carries binary buffers (buffer_lengths).
        self._body_handlers: dict[str, Callable[[dict[str, Any], bytes], Work | None]] = {
            "widget_set": self.widgets.on_widget_set,
            "widget_msg": self.widgets.on_widget_msg,
        }

    def serve(self, reader: Any) -> int:
        """Answer requests from ``reader`` (a FrameReader on fd 3) until EOF or ``shutdown``."""
        return self.pipe.serve(reader, self.dispatch)

    def dispatch(self, header: dict[str, Any], body: bytes = b"") -> Work | None:
        """Handle one request; returns the sync call the reading thread should run, if any."""
        op = header.get("op")
        handler = with_body = None
        if isinstance(op, str):  # (an unhashable op would make the lookups raise)
            handler = self._handlers.get(op)
            if handler is None:
                with_body = self._body_handlers.get(op)
        if handler is None and with_body is None:
            self._bad_request(header, f"unknown op {op!r}" if op is not None else "the frame has no 'op'")
            return None
        try:
            return handler(header) if handler is not None else with_body(header, body)  # type: ignore[misc]
        except _Refusal as refusal:
            # Only requests reach here; their `id` is their own (credit/cancel log instead).
            if refusal.code == "bad_request" and header.get("op") not in _REQUESTS:
                log(f"ignored {op} frame: {refusal.message}")
            else:
                self._bad_request(header, refusal.message, refusal)

    def _bad_request(self, header: dict[str, Any], message: str, refusal: _Refusal | None = None) -> None:
        request_id = header.get("id")
        if is_request_id(request_id):
            self.pipe.send(error_header(request_id, refusal or _Refusal("bad_request", message)))
        else:
            log(f"bad request without an id ({message}): {str(header)[:200]}")

    def _on_shutdown(self, header: dict[str, Any]) -> None:
        raise Exit()

    def _forget_dependents(self, affected: Callable[[str], bool]) -> list[str]:
        """``invalidate``: drop the method cache and the instances of the affected modules."""
        self.methods.forget(affected)
        return self.instances.evict(affected)
