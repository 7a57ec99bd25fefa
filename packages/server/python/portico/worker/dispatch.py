"""The worker: one project's parts, wired together, and the table from frame ``op`` to handler.

Each part owns its state and its ops (packages/server/src/kernel/README.md lists them):

    pipe.py       framing, leader/follower reading, the one writer         (ready), heartbeat
    modules.py    import, change stamps, invalidation, descriptions        resolve, modules, schema, resources, invalidate
    instances.py  the instance cache, events and widget pushes             release
    calls.py      sync / async / generator calls, credit, cancel           call, credit, cancel
    replies.py    running calls by id, their items and terminal frames     (result, item, end, error)
    streams.py    generators and reads pumped within their credit window
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
from dataclasses import dataclass
from typing import Any, Callable

from .calls import Calls
from .instances import Instances
from .methods import Methods
from .modules import Modules
from .pipe import MAX_SYNC_THREADS, REPLY_FD, Exit, Pipe, Work
from .protocol import Refusal, error_header, is_request_id, log
from .reads import Reads
from .widget_state import WidgetStates
from .widgets import Widgets


@dataclass(frozen=True, slots=True)
class Op:
    """How the worker handles one frame ``op``."""

    handler: Callable[..., Work | None]
    #: A request: its refusals are answered to its ``id`` (README "Requests"); any other op's are logged.
    request: bool = True
    #: Its frame body carries binary buffers (``buffer_lengths``): the handler takes the body too.
    body: bool = False


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
        #: Every op the worker takes, the one table of them.
        self._ops: dict[str, Op] = {
            "resolve": Op(self.modules.on_resolve),
            "modules": Op(self.modules.on_modules),
            "schema": Op(self.modules.on_schema),
            "resources": Op(self.modules.on_resources),
            "call": Op(self.calls.on_call),
            "read": Op(self.reads.on_read),
            "widget_get": Op(self.widgets.on_widget_get),
            "widget_set": Op(self.widgets.on_widget_set, body=True),
            "widget_msg": Op(self.widgets.on_widget_msg, body=True),
            "widget_assets": Op(self.widgets.on_widget_assets),
            "invalidate": Op(self.modules.on_invalidate),
            "heartbeat": Op(self.pipe.on_heartbeat),
            "credit": Op(self.calls.on_credit, request=False),
            "cancel": Op(self.calls.on_cancel, request=False),
            "release": Op(self.instances.on_release, request=False),
            "shutdown": Op(self._on_shutdown, request=False),
        }

    def serve(self, reader: Any) -> int:
        """Answer requests from ``reader`` (a FrameReader on fd 3) until EOF or ``shutdown``."""
        return self.pipe.serve(reader, self.dispatch)

    def dispatch(self, header: dict[str, Any], body: bytes = b"") -> Work | None:
        """Handle one request; returns the sync call the reading thread should run, if any."""
        op = header.get("op")
        entry = self._ops.get(op) if isinstance(op, str) else None  # (an unhashable op would make the lookup raise)
        if entry is None:
            self._bad_request(header, f"unknown op {op!r}" if op is not None else "the frame has no 'op'")
            return None
        try:
            return entry.handler(header, body) if entry.body else entry.handler(header)
        except Refusal as refusal:
            # A request's refusal answers its `id`; a malformed credit, cancel or release is logged
            # (its `id` names another request, or nothing).
            if refusal.code == "bad_request" and not entry.request:
                log(f"ignored {op} frame: {refusal.message}")
            else:
                self._bad_request(header, refusal.message, refusal)
        return None

    def _bad_request(self, header: dict[str, Any], message: str, refusal: Refusal | None = None) -> None:
        request_id = header.get("id")
        if is_request_id(request_id):
            self.pipe.send(error_header(request_id, refusal or Refusal("bad_request", message)))
        else:
            log(f"bad request without an id ({message}): {str(header)[:200]}")

    def _on_shutdown(self, header: dict[str, Any]) -> None:
        raise Exit()

    def _forget_dependents(self, affected: Callable[[str], bool]) -> list[str]:
        """``invalidate``: drop the method cache and the instances of the affected modules."""
        self.methods.forget(affected)
        return self.instances.evict(affected)
