"""The ``Interface`` base class that project code subclasses.

Kept deliberately small: what an author calls or overrides lives here, with docstrings.
Resolution (config.py), hosting (the worker/ package) and file handling (_storage.py) live elsewhere.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Callable, ClassVar

from . import _storage
from ._buffers import checked_buffers, split_buffers
from ._display import DisplayTooLarge, encoded
from ._json import dumps
from ._view import ConfigView

__all__ = ["Binding", "CallCancelled", "ExecutionInterrupted", "Interface", "NotFound", "ReadOnly", "WidgetReply", "attach"]


class CallCancelled(Exception):
    """Raised inside a sync method or generator whose client cancelled the call.

    Catch it only to clean up, then re-raise. It is raised asynchronously at the next Python
    bytecode (or by ``emit()``, when the cancel arrives while the event is being sent), so a long
    blocking C call (``time.sleep(60)``) finishes first: sleep or wait in small steps where prompt
    cancellation matters. Async methods see ``asyncio.CancelledError``
    instead, and a stream waiting for its client is closed (``GeneratorExit``).
    """


class NotFound(LookupError):
    """Raise it from ``read()`` or a method for a missing thing.

    The client gets an error with code ``not_found`` (HTTP 404) and the exception's message,
    instead of the ``call_failed`` of other exceptions. ``read()`` may raise FileNotFoundError
    to the same effect.
    """


class ReadOnly(Exception):
    """Raised by ``widget_update`` when the widget accepts no changes; the client gets ``read_only``.

    The default ``widget_update`` raises it: the widget's default state is the config, which never
    changes.
    """


class ExecutionInterrupted(BaseException):
    """Raised in the code an Execution runs (``python -m portico.run``) when the execution is cancelled.

    It derives from ``BaseException``, like ``KeyboardInterrupt``, so a plain ``except Exception``
    does not swallow it. A signal raises it in the run's main thread, so it also breaks off a
    blocking call such as ``time.sleep(60)`` or a lock wait and lands within about a second. It is
    raised at most once per run, and only while the run's code runs: while an interface or context
    module is imported, during ``__init__``, a context's ``__enter__`` and the interface's
    ``__call__``. It is never raised inside a context's ``__exit__``, so cleanup there completes.

    To clean up, catch it, clean up, and re-raise it::

        def __call__(self):
            try:
                self.train()
            except ExecutionInterrupted:
                self.save_file("checkpoint.json", self.state)  # keep what was done so far
                raise

    ``try: ... finally:`` and context ``__exit__`` methods run too (an ``__exit__`` that returns
    True does not swallow it). Swallowing it anyway lets that ``__call__`` finish normally, but
    the execution still ends as ``interrupted`` and runs no further interfaces. Threads that the
    interface started do not receive it; daemon threads end with the run's process.
    """

    def __init__(self, message: str = "the execution was cancelled") -> None:
        super().__init__(message)


@dataclass(frozen=True)
class WidgetReply:
    """What ``widget_message`` returns to answer with binary buffers besides the content::

        def widget_message(self, content, buffers):
            table = self.query(content["sql"])
            return WidgetReply({"rows": table.num_rows}, [table_to_arrow(table)])

    The sender's ``msg:custom`` handlers receive ``content`` and the buffers as DataViews.
    ``buffers`` are bytes-like (bytes, bytearray, memoryview, or anything with the buffer
    protocol: a numpy array goes as its raw bytes). A plain return value is a reply without buffers.
    """

    content: Any
    buffers: Iterable[bytes] = ()


def _drop_push(uuid: str | None, op: str, fields: dict[str, Any], buffers: list[bytes] | None) -> None:
    dumps(fields)  # still refuse what a served instance would refuse


@dataclass(frozen=True)
class Binding:
    """What the worker attaches to an instance (machinery; authors never build one).

    ``push(uuid, op, fields, buffers)`` sends an unsolicited widget frame (``op`` is
    ``widget_change`` or ``widget_msg``); where nothing serves the instance it only checks
    that ``fields`` are JSON.
    """

    uuid: str | None
    config: ConfigView
    project: str | None
    emit: Callable[[str | None, Any], None]
    push: Callable[[str | None, str, dict[str, Any], list[bytes] | None], None] = field(default=_drop_push)


def _drop_event(uuid: str | None, payload: Any) -> None:
    # Still refuse what a served instance would refuse: neither JSON nor displayable, or too large.
    encoded(payload, lambda value, shown: dumps(value) if shown is None else None, "emit()")


_UNBOUND = Binding(uuid=None, config=ConfigView({}), project=None, emit=_drop_event)


def attach(obj: Interface, binding: Binding) -> None:
    """Give ``obj`` its uuid, config, project and event sink (used by the worker and config)."""
    object.__setattr__(obj, "_portico_", binding)


class Interface:
    """Base class of a project's interface classes.

    Subclass it in a project module; public methods become remotely callable. Generator and
    async-generator methods stream their items; ``version_<name>`` methods are selectable
    config versions (``"~name"`` or ``"~name(args)"``) that return a dict of config changes.

    Class attributes an author may set:

    - ``Config``: an inner class declaring the config fields (annotated fields with defaults, a
      ``@dataclass`` or a pydantic ``BaseModel``). Without it the config is empty.
    - ``__api_methods__``: a list of method names; when set, exactly these are callable remotely.
    - ``_esm`` / ``_css``: the widget's ES module and stylesheet, as source text, as a file name
      relative to the module's folder (``"counter.widget.js"``) or as a ``pathlib.Path``. Without
      them, ``<module>.widget.js`` / ``<module>.widget.css`` beside the module file are used.
    - ``_widget_meta``: a dict clients receive as the module's ``widget.meta`` (never parsed).
    - ``_persist_widget``: set it to False to keep the widget state in memory only. Otherwise,
      when the class overrides ``widget_update`` (a served anywidget does), what ``widget_state()``
      answers is saved in ``local_directory()`` (the hidden file ``.widget-state``) after each
      accepted ``widget_update`` and each ``push_widget_change``, and handed to ``widget_update``
      of the next instance of this uuid (after an idle release, a worker restart...) before it
      serves anyone.

    Hooks an author may define or override (they are not remotely callable methods):

    - ``read(self, params)``: serves binary reads; returns bytes, an iterable or async iterable of
      bytes, or a binary file object (read in blocks, then closed). Raise ``NotFound`` or
      FileNotFoundError when the thing asked for does not exist. Without it reads are refused.
    - ``widget_state``, ``widget_update``, ``widget_message``: the widget's synced state and
      messages (see each); ``push_widget_change`` / ``push_widget_message`` push to clients.

    A module with several interface classes picks one with ``__interface__ = "Name"``.
    """

    Config: ClassVar[type | None] = None
    __api_methods__: ClassVar[list[str] | None] = None
    _persist_widget: ClassVar[bool] = True

    def __init__(self) -> None:
        """Set up per-instance state. Runs once, with ``config`` and ``uuid`` already bound.

        The worker calls ``__init__()`` without arguments; calling ``super().__init__()`` is
        optional because the base class needs no set-up.
        """

    def _portico_binding(self) -> Binding:
        return getattr(self, "_portico_", _UNBOUND)

    def _portico_served(self) -> tuple[str, str]:
        binding = self._portico_binding()
        if binding.project is None or binding.uuid is None:
            raise RuntimeError("this instance is not served by the Portico worker (no project or uuid)")
        return binding.project, binding.uuid

    @property
    def config(self) -> ConfigView:
        """The resolved config, read-only; ``self.config.start`` or ``self.config["start"]``."""
        return self._portico_binding().config

    @property
    def uuid(self) -> str | None:
        """The id of this instance (None when the instance is not served by a worker)."""
        return self._portico_binding().uuid

    def emit(self, payload: Any) -> None:
        """Send ``payload`` as an ``event`` to every client attached to this instance.

        Thread-safe; usable from sync, generator and async methods and from other threads.
        Events are ordered before the result of the call that emitted them.
        ``payload`` is written as results are (numpy values, NaN as ``"NaN"``, dates:
        docs/writing/values.md), and a displayable one (a figure, an image, a DataFrame) carries its MIME
        bundle as a result does (docs/writing/rich-results.md); ``{"progress": 0.5, "message": "…"}``
        shows as a progress bar. Raises TypeError when it is neither JSON nor displayable,
        ValueError (``DisplayTooLarge``; uncaught, the call answers ``payload_too_large``) when
        its bundle is over ``limits.displayMaxBytes``, and ``CallCancelled`` in a sync method or
        generator whose call was cancelled.
        """
        binding = self._portico_binding()
        try:
            binding.emit(binding.uuid, payload)
        except DisplayTooLarge:
            raise
        except ValueError as exc:  # a circular reference, say: same contract as TypeError
            raise TypeError(f"emit() payload is not JSON-serializable: {exc}") from None

    def widget_state(self) -> dict[str, Any]:
        """The widget's full synced state, a JSON object; sent to a front end that (re)connects.

        Values may be binary (``bytes``, ``bytearray``, ``memoryview``, also inside lists and
        dicts): they travel as raw buffers and the front end sees DataViews, as in anywidget.

        Default: the config (read-only, so the default widget never changes).
        """
        return self.config.to_dict()

    def widget_update(self, changes: dict[str, Any]) -> dict[str, Any] | None:
        """Apply ``changes`` a front end made to the synced state; return the changes to broadcast.

        Return the normalized changes (a dict, e.g. with a value clamped), or None to broadcast
        ``changes`` as given; every attached front end then receives them. Raise ValueError or
        TypeError to refuse bad values (``invalid_argument``). Binary values a front end set
        (DataView, ArrayBuffer) arrive as ``bytes``. Default: raises ``ReadOnly``, since
        the default state is the config, which cannot change.

        Overriding it also makes the state persist (see ``_persist_widget``): right after
        ``__init__`` of a later instance of this uuid, it receives once the saved entries that
        differ from what the new instance's ``widget_state()`` answers, as a page setting them
        would (what it returns then is ignored; an exception is logged and the instance kept).
        """
        raise ReadOnly(f"{type(self).__name__}'s widget is read-only: its state is its config, which cannot change")

    def widget_message(self, content: Any, buffers: list[bytes]) -> Any:
        """Handle a custom message from a front end (``model.send(content, callbacks, buffers)``).

        ``buffers`` are the message's binary buffers as ``bytes``. A return value other than None
        is sent back to that front end as the reply; return ``WidgetReply(content, buffers)`` to
        reply with binary buffers too. Messages to one instance (and ``widget_update`` calls)
        run one at a time, in the order they arrived, as a Jupyter kernel handles a widget's
        comm messages; other instances and method calls run meanwhile. An exception answers an
        error to this message only; the widget stays live. Default: ignores the message.
        """
        return None

    def push_widget_change(self, changes: dict[str, Any]) -> None:
        """Push changed state keys to every front end attached to this instance.

        Thread-safe and ordered like ``emit()`` (before the result of the call that pushed).
        Values may be binary, as in ``widget_state``. Raises TypeError when ``changes`` is not a
        dict of JSON and binary values.
        """
        if not isinstance(changes, Mapping):
            raise TypeError(f"push_widget_change() takes a dict of changes, not {type(changes).__name__}")
        plain, paths, buffers = split_buffers(dict(changes))
        self._push("widget_change", {"changes": plain, **({"buffer_paths": paths} if paths else {})}, buffers)

    def push_widget_message(self, content: Any, buffers: Iterable[bytes] | None = None) -> None:
        """Send a custom message (JSON ``content`` and optional binary ``buffers``) to every front
        end attached to this instance; they receive it as ``msg:custom``.

        Thread-safe and ordered like ``emit()``. Raises TypeError when ``content`` is not JSON or a
        buffer is not bytes-like.
        """
        self._push("widget_msg", {"content": content}, checked_buffers("push_widget_message()", buffers))

    def _push(self, op: str, fields: dict[str, Any], buffers: list[bytes] | None) -> None:
        binding = self._portico_binding()
        try:
            binding.push(binding.uuid, op, fields, buffers)
        except ValueError as exc:  # a circular reference, say: same contract as TypeError
            raise TypeError(f"{op} is not JSON-serializable: {exc}") from None

    def local_directory(self, *parts: str, create: bool = False) -> str:
        """Path of this instance's data folder, ``<project>/.portico/interfaces/<uuid>/<parts...>``.

        With ``create=True`` the directory (the joined path itself) is created. The path stays
        inside the folder: parts that are absolute or contain ``..``, and a path that a symlink in
        the folder leads outside it, raise PermissionError (also a ValueError), which a hook that
        lets it propagate answers as ``forbidden``. Symlinks that stay inside are followed.
        """
        project, uuid = self._portico_served()
        return _storage.data_path(project, uuid, parts, create)

    def save_file(self, name: str, data: Any) -> str:
        """Durably store ``data`` under ``local_directory(name)`` and return the path.

        ``.json`` names store ``data`` as JSON, written as results are (docs/writing/values.md: NaN as
        ``"NaN"``, numpy arrays as lists); otherwise ``data`` must be ``str`` (stored as
        UTF-8) or ``bytes``. The write is atomic: readers never see a partial file. ``name`` is
        confined as in ``local_directory`` (PermissionError when it leads outside the folder).
        """
        return _storage.save_file(*self._portico_served(), name, data)

    def load_file(self, name: str, default: Any = None) -> Any:
        """Read a file written by ``save_file``: parsed JSON for ``.json`` names, else text
        (bytes when it is not UTF-8); ``default`` when the file does not exist. ``name`` is
        confined as in ``local_directory`` (PermissionError when it leads outside the folder)."""
        return _storage.load_file(*self._portico_served(), name, default)
