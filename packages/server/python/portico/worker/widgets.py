"""Widgets: an instance's widget hooks and where its widget's files come from.

Owns the ops ``widget_get`` (``widget_state``), ``widget_set`` (``widget_update``) and
``widget_msg`` (``widget_message``), which run like calls through ``Calls``, the shape checks
of what those hooks return and the error codes of what they raise, and ``widget_assets``.
Pushes (``push_widget_change`` / ``push_widget_message``) are sent by ``instances.py``.

``widget_set`` and ``widget_msg`` to one instance go through that instance's lane: they run one
at a time in arrival order, as a Jupyter kernel handles a widget's comm messages (quak's SQL
queries rely on it), while other instances and method calls run meanwhile. Binary values and
message buffers travel in the frame body (``buffer_lengths``), never as base64.

A ``widget_update`` that returned (the hook accepted the changes), and a ``widget_message`` that
returned (its hook may change the state too), mark the instance's widget state for saving
(``Instances.state_changed``, ``widget_state.py``), whichever door they came through: a
``widget_set`` or ``widget_msg`` frame, or a REST or WebSocket ``call`` of the hook by name. A
save that finds the state as it last wrote it writes nothing.
"""

from __future__ import annotations

import collections
import collections.abc
import concurrent.futures
import functools
import os
import sys
import threading
import traceback
from typing import Any

from .. import _reflect
from .._buffers import checked_buffers, put_buffers, split_body, split_buffers
from ..interface import ReadOnly, WidgetReply
from . import protocol
from .call import Call
from .calls import Calls, Finish
from .instances import Instance
from .lookup import inside_project
from .modules import Modules
from .pipe import Pipe, Work
from .protocol import Refusal, described, log


#: The queued hooks after which the widget state is saved: both may change it.
_STATE_CHANGING = frozenset({"widget_update", "widget_message"})


class Widgets:
    """Serves the widget ops of one project's instances."""

    def __init__(
        self, project: str, pipe: Pipe, pool: concurrent.futures.ThreadPoolExecutor, modules: Modules, calls: Calls
    ) -> None:
        self.project = project
        self.pipe = pipe
        self.pool = pool
        self.modules = modules
        self.calls = calls
        # uuid → the queued ops of its lane; present while the lane is being drained.
        self._lanes: dict[str, collections.deque[Work]] = {}
        self._lanes_lock = threading.Lock()

    def on_widget_get(self, header: dict[str, Any]) -> Work | None:
        request_id, uuid, module, config = protocol.instance_fields(header)
        call = self.calls.register(request_id, "widget_state")
        return self._begin_hook(call, uuid, module, config, (), self._finish_state)

    def on_widget_set(self, header: dict[str, Any], body: bytes) -> Work | None:
        request_id, uuid, module, config = protocol.instance_fields(header)
        changes = protocol.field(header, "changes", dict)
        try:
            put_buffers(changes, protocol.field(header, "buffer_paths", list, []), _buffers_of(header, body))
        except ValueError as exc:
            raise Refusal("bad_request", f"widget_set: {exc}") from None
        call = self.calls.register(request_id, "widget_update")

        def finish(call: Call, normalized: Any) -> None:
            self._finish_changes(call, changes if normalized is None else normalized)

        return self._queue(call, uuid, module, config, (changes,), finish)

    def on_widget_msg(self, header: dict[str, Any], body: bytes) -> Work | None:
        request_id, uuid, module, config = protocol.instance_fields(header)
        content = header.get("content")
        buffers = _buffers_of(header, body)
        call = self.calls.register(request_id, "widget_message")
        return self._queue(call, uuid, module, config, (content, buffers), self._finish_reply)

    def _queue(self, call: Call, uuid: str, module: str, config: dict[str, Any], args: tuple[Any, ...], finish: Finish) -> Work | None:
        """Runs the hook after every op queued before it for ``uuid``; returns the work that
        drains the lane when the lane was idle (else a thread draining it runs this one too)."""
        op = functools.partial(self._run_queued, call, uuid, module, config, args, finish)
        with self._lanes_lock:
            lane = self._lanes.get(uuid)
            if lane is not None:
                lane.append(op)
                return None
            self._lanes[uuid] = collections.deque([op])
        return functools.partial(self._drain, uuid)

    def _drain(self, uuid: str) -> None:
        while True:
            with self._lanes_lock:
                lane = self._lanes[uuid]
                if not lane:
                    del self._lanes[uuid]
                    return
                op = lane.popleft()
            op()

    def _run_queued(self, call: Call, uuid: str, module: str, config: dict[str, Any], args: tuple[Any, ...], finish: Finish) -> None:
        """The hook from start to end (an ``async def`` one awaited), so the next op of the
        lane starts only after it; every outcome is answered, never raised."""
        if call.done:  # cancelled while queued
            return
        try:
            instance = self.calls.instances.instance(uuid, module, config)
            if call.method in _STATE_CHANGING and instance.persist:
                finish = functools.partial(self._finish_and_save, uuid, instance, finish)
            work = self.calls.start_hook(call, instance, args, finish, self._fail_hook)
        except Refusal as refusal:
            self.calls.fail(call, refusal)
            return
        except BaseException as exc:
            self._fail_hook(call, exc)
            return
        if work is not None:
            work()
        if call.future is not None:
            concurrent.futures.wait([call.future])

    def _finish_and_save(self, uuid: str, instance: Instance, finish: Finish, call: Call, normalized: Any) -> None:
        """The hook returned (changes accepted, or a message handled): answer, then save the state soon (whatever the answer's shape)."""
        finish(call, normalized)
        self.calls.instances.state_changed(uuid, instance)

    def _begin_hook(
        self, call: Call, uuid: str, module: str, config: dict[str, Any], args: tuple[Any, ...], finish: Finish
    ) -> Work | None:
        """Run the widget hook ``call.method`` with ``args`` on the instance for ``uuid``, like a call."""
        return self.calls.begin(
            call, uuid, module, config, lambda instance: self.calls.start_hook(call, instance, args, finish, self._fail_hook)
        )

    def _fail_hook(self, call: Call, exc: BaseException) -> None:
        if isinstance(exc, ReadOnly):
            self.calls.fail(call, Refusal("read_only", str(exc) or "the widget is read-only", exception=type(exc).__name__))
        elif call.method == "widget_update" and isinstance(exc, (ValueError, TypeError)):
            message = f"widget_update() refused the changes: {described(exc)}"
            self.calls.fail(call, Refusal("invalid_argument", message, exception=type(exc).__name__))
        else:
            self.calls.fail_raised(call, exc)

    def _finish_state(self, call: Call, state: Any) -> None:
        self._finish_mapping(call, state, "state", "a dict")

    def _finish_changes(self, call: Call, changes: Any) -> None:
        self._finish_mapping(call, changes, "changes", "a dict of changes or None")

    def _finish_mapping(self, call: Call, value: Any, key: str, expected: str) -> None:
        """Answers ``{key: value}`` with its binary values as buffers; a hook that returned no dict fails."""
        if not isinstance(value, collections.abc.Mapping):
            message = f"{call.method}() returned {_type_name(value)}; it must return {expected}"
            self.calls.fail(call, Refusal("call_failed", message, exception="TypeError"))
            return
        plain, paths, buffers = split_buffers(value)
        self.calls.finish_result(call, _with_paths({key: plain}, paths), buffers)

    def _finish_reply(self, call: Call, reply: Any) -> None:
        if isinstance(reply, WidgetReply):
            try:
                buffers = checked_buffers("WidgetReply", reply.buffers)
            except TypeError as exc:
                self.calls.fail(call, Refusal("call_failed", f"widget_message() returned {exc}", exception="TypeError"))
                return
            self.calls.finish_result(call, {"reply": reply.content, "has_reply": True}, buffers)
        else:
            self.calls.finish_result(call, {"reply": reply, "has_reply": reply is not None})

    def on_widget_assets(self, header: dict[str, Any]) -> None:
        request_id = protocol.request_id(header)
        module = protocol.field(header, "module", str)
        self.pool.submit(self._widget_assets, request_id, module)  # importing runs user code

    def _widget_assets(self, request_id: Any, module: str) -> None:
        try:
            cls, label = self.modules.interface_class(module)
            module_file = getattr(sys.modules.get(module), "__file__", None)
            reply: dict[str, Any] = {"op": "widget_assets", "id": request_id}
            for asset in _reflect.WIDGET_SIBLINGS:
                reply[asset] = self._asset(label, asset, _reflect.widget_asset(cls, module_file, asset))
            self.pipe.send(reply)
        except Refusal as refusal:
            self.pipe.send(protocol.error_header(request_id, refusal))
        except BaseException as exc:  # a bug here must still answer the request
            log("widget_assets failed:\n" + "".join(traceback.format_exception(exc)).rstrip())
            refusal = Refusal("module_error", f"Finding the widget of {module!r} failed: {described(exc)}")
            self.pipe.send(protocol.error_header(request_id, refusal))

    def _asset(self, label: str, asset: str, found: tuple[str, str] | None) -> dict[str, str] | None:
        """The reply's ``esm`` / ``css``: null, ``{inline}``, or ``{path}`` of a file inside the project."""
        if found is None:
            return None
        form, value = found
        if form == "inline":
            return {"inline": value}
        real, root = os.path.realpath(value), os.path.realpath(self.project)
        if not inside_project(root, real):
            raise Refusal("forbidden", f"The widget {asset} of {label} ({value}) lies outside the project")
        if not os.path.isfile(real):
            raise Refusal("not_found", f"The widget {asset} of {label} names {value}, which is not a file")
        return {"path": real}


def _buffers_of(header: dict[str, Any], body: bytes) -> list[bytes]:
    """The buffers a request's body carries (``buffer_lengths``); ``bad_request`` when they do not fit."""
    try:
        return split_body(header.get("buffer_lengths"), body)
    except ValueError as exc:
        raise Refusal("bad_request", f"{header.get('op')}: {exc}") from None


def _with_paths(payload: dict[str, Any], paths: list[Any]) -> dict[str, Any]:
    """``payload`` with ``buffer_paths`` when it has binary values (plain JSON state keeps its shape)."""
    return {**payload, "buffer_paths": paths} if paths else payload


def _type_name(value: Any) -> str:
    return "None" if value is None else type(value).__name__
