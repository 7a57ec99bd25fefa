"""Live interface instances: one per uuid, created once, kept until released or invalidated.

Owns the instance cache (creation happens once even under concurrent calls; later calls for
the same uuid wait for it), the ``release`` op, eviction by ``invalidate``, and what an
instance sends unsolicited (``emit`` events and widget pushes). ``create_instance`` is shared
with ``run.py``.

Widget state that comes back (``widget_state.py``): an instance whose class persists its widget
gets the state saved for its uuid (``WidgetStates.restore``) right after ``__init__``, before it
is published; from then on each of its ``push_widget_change`` marks it for saving, as a
``widget_set`` does (``state_changed``, from ``widgets.py``).
"""

from __future__ import annotations

import dataclasses
import functools
import threading
import traceback
import weakref
from dataclasses import dataclass, field
from typing import Any, Callable

from .. import _display
from .. import config as _config
from .._buffers import join_body
from .._frames import encode_frame
from .._view import ConfigView
from ..interface import Binding, Interface, attach
from .call import put_unsolicited
from .modules import Modules
from .pipe import Pipe
from .protocol import Refusal, described, invalid_config, log
from .widget_state import WidgetStates, persists, state_path


@dataclass
class Instance:
    obj: Interface
    label: str  # "module.Class", for messages
    persist: bool = False  # its widget state is saved (widget_state.persists)


@dataclass
class _Pending:
    """An instance being created; later calls for the same uuid wait for it."""

    ready: threading.Event = field(default_factory=threading.Event)
    instance: Instance | None = None
    error: Refusal | None = None


class Instances:
    """The instances of one project's interface classes, by uuid."""

    def __init__(self, project: str, modules: Modules, pipe: Pipe, states: WidgetStates | None = None) -> None:
        self.project = project
        self.modules = modules
        self.pipe = pipe
        self.states = states  # None: widget state is never saved nor restored
        self.instances: dict[str, Instance] = {}
        self._pending: dict[str, _Pending] = {}
        self._instances_lock = threading.Lock()

    def get(self, uuid: str) -> Instance | None:
        """The live instance for ``uuid``, if there is one (no creation, no waiting)."""
        return self.instances.get(uuid)

    def instance(self, uuid: str, module: str, config: dict[str, Any]) -> Instance:
        """The cached instance for ``uuid``, created (once, even under concurrent calls) if needed."""
        with self._instances_lock:
            existing = self.instances.get(uuid)
            if existing is not None:
                return existing
            pending = self._pending.get(uuid)
            owner = pending is None
            if pending is None:
                pending = self._pending[uuid] = _Pending()
        if not owner:
            pending.ready.wait()
            if pending.error is not None:
                raise Refusal(pending.error.code, pending.error.message, **pending.error.extra)
            assert pending.instance is not None
            return pending.instance
        try:
            pending.instance = self._create(uuid, module, config)
            with self._instances_lock:
                self.instances[uuid] = pending.instance
            return pending.instance
        except BaseException as exc:
            pending.error = (
                exc
                if isinstance(exc, Refusal)
                else Refusal("call_failed", f"Creating instance {uuid} failed: {described(exc)}", exception=type(exc).__name__)
            )
            raise
        finally:
            with self._instances_lock:
                self._pending.pop(uuid, None)
            pending.ready.set()

    def _create(self, uuid: str, module: str, config: dict[str, Any]) -> Instance:
        cls, label = self.modules.interface_class(module)
        obj = create_instance(cls, label, uuid, config, self.project, self._emit, push=self._push)
        states = self.states
        if states is None or not persists(cls) or state_path(self.project, uuid) is None:
            return Instance(obj, label)
        # Restored before anyone can reach it; what the restore itself pushes is not saved again.
        try:
            states.restore(uuid, obj)
        except Exception as exc:  # a bug there must not cost the instance
            log(f"restoring the widget state of {uuid} failed:\n" + "".join(traceback.format_exception(exc)).rstrip())
        attach(obj, dataclasses.replace(obj._portico_binding(), push=functools.partial(self._push_saving, weakref.ref(obj))))
        return Instance(obj, label, persist=True)

    def state_changed(self, uuid: str, instance: Instance) -> None:
        """``instance``'s widget state changed (a ``widget_set`` its hook accepted): save it soon."""
        if instance.persist and self.states is not None:
            self.states.changed(uuid, instance.obj)

    def on_release(self, header: dict[str, Any]) -> None:
        uuid = header.get("uuid")
        if not isinstance(uuid, str):
            raise Refusal("bad_request", "release: field 'uuid' must be a string")
        with self._instances_lock:
            released = self.instances.pop(uuid, None)
        if released is not None and released.persist and self.states is not None:
            self.states.let_go(uuid)

    def evict(self, affected: Callable[[str], bool]) -> list[str]:
        """Drop the instances whose class comes from a module ``affected`` names; their uuids."""
        with self._instances_lock:
            evicted = [uuid for uuid, instance in self.instances.items() if affected(type(instance.obj).__module__)]
            held = [uuid for uuid in evicted if self.instances.pop(uuid).persist]
        if self.states is not None:
            for uuid in held:
                self.states.let_go(uuid)
        return evicted

    def _emit(self, uuid: str | None, payload: Any) -> None:
        # Encoded in the caller's thread so that a bad payload raises where emit() was called, and
        # queued before the call returns so the event precedes the call's result on the wire. A
        # displayable payload (a figure) carries its bundle, as a result does (docs/writing/rich-results.md).
        put_unsolicited(self.pipe.writer, _display.encoded(payload, _display.bridge_frame({"op": "event", "uuid": uuid}), "emit()"))

    def _push(self, uuid: str | None, op: str, fields: dict[str, Any], buffers: list[bytes] | None) -> None:
        """``push_widget_change`` / ``push_widget_message``: like ``_emit``, another op; the
        buffers travel in the frame body."""
        header = {"op": op, "uuid": uuid, **fields}
        body = b""
        if buffers:
            header["buffer_lengths"], body = join_body(buffers)
        put_unsolicited(self.pipe.writer, encode_frame(header, body))

    def _push_saving(
        self, ref: weakref.ref[Interface], uuid: str | None, op: str, fields: dict[str, Any], buffers: list[bytes] | None
    ) -> None:
        """``_push`` of an instance that persists its widget: a ``widget_change`` also saves it soon."""
        self._push(uuid, op, fields, buffers)
        obj = ref()
        if op == "widget_change" and obj is not None and uuid is not None and self.states is not None:
            self.states.changed(uuid, obj)


def create_instance(
    cls: type[Interface],
    label: str,
    uuid: str,
    config: dict[str, Any],
    project: str,
    emit: Callable[[str | None, Any], None],
    report: Callable[[str], None] = log,
    push: Callable[[str | None, str, dict[str, Any], list[bytes] | None], None] | None = None,
) -> Interface:
    """An instance of ``cls`` bound to ``uuid``, ``config`` (checked against the class) and
    ``project``, with ``emit`` as its event sink and ``push`` as its widget push sink (None: pushes
    are checked and dropped); ``__init__()`` runs with all of that bound.

    Raises ``Refusal``: ``invalid_config``, or ``call_failed`` when ``__init__`` raised (the
    traceback goes to ``report``).
    """
    resolved, issues = _config.check_config(cls, config)
    if issues:
        raise invalid_config(label, issues)
    obj = cls.__new__(cls)
    binding = Binding(uuid=uuid, config=ConfigView(resolved), project=project, emit=emit)
    attach(obj, binding if push is None else dataclasses.replace(binding, push=push))
    try:
        obj.__init__()
    except BaseException as exc:
        report(f"{label}.__init__() raised:\n" + "".join(traceback.format_exception(exc)).rstrip())
        raise Refusal("call_failed", f"{label}.__init__() raised {described(exc)}", exception=type(exc).__name__) from None
    return obj

