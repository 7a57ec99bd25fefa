"""Serve a published ``anywidget.AnyWidget`` subclass as it is: ``serve(ScatterWidget)``.

Only projects that call ``serve`` import anywidget, ipywidgets and traitlets (through the widget
class they pass); the gateway and the worker never do.

How the widget maps onto an interface:

- **Assets.** The class's ``_esm`` / ``_css`` (source text, a file path or a ``pathlib.Path``, as
  anywidget allows) become the module's widget assets, read once when ``serve`` runs. An ``_esm``
  that is an http(s) URL is imported from there by the page, as anywidget does. A published
  widget's files live in site-packages, outside the project, so they are served as source text.
- **One widget per instance.** Each interface instance builds one widget object when it is
  created: ``widget_class(**config)`` (the config fields are constructor keyword arguments), or
  ``create(config)`` when given. The Config is the served class's (none by default); declare one
  by subclassing::

      class Slider(serve(Slider2D)):
          class Config:
              x: float = 0.0

- **State.** The traits tagged ``sync=True`` that the widget class adds to anywidget's are the
  widget state (``widget_get``); anywidget's and ipywidgets' own (``_model_name``, ``layout``,
  ``_esm``...) are not. A front end's ``save_changes()`` sets them through ipywidgets'
  ``set_state`` (traitlets validation; a ``TraitError`` or ``ValueError`` is ``invalid_argument``,
  an unknown key too) and every attached front end receives the keys set, with the values the
  widget kept, plus whatever the widget's observers changed meanwhile. Trait values are written
  as a kernel sends them (numpy values as numbers and lists, NaN as ``"NaN"``: ``_json``), and
  ``"NaN"``, ``"Infinity"``, ``"-Infinity"`` set on a ``Float`` trait (or a ``List`` / ``Tuple``
  of them) are those floats.
- **Python changes.** A synced trait set in Python (a remote method, an observer, a thread) is
  pushed as ``widget_change`` to every attached front end.
- **Messages.** A front end's ``model.send(content, callbacks, buffers)`` runs the widget's
  ``on_msg`` handlers as ``handler(widget, content, buffers)``, or its own
  ``_handle_custom_msg(content, buffers)`` where the class overrides that ipywidgets entry point
  (as quak does); a handler that raises answers an error to that message (ipywidgets would only
  log it). ``widget.send(content, buffers)`` reaches
  every attached front end as ``msg:custom``.

The widget talks to Portico through a comm object (the interface ipywidgets expects of its host,
as a kernel's or marimo's comm does) installed in place of the inert one ipywidgets makes outside
a kernel.
"""

from __future__ import annotations

import json
import sys
import threading
import weakref
from typing import Any, Callable

from ._buffers import put_buffers
from ._json import NONFINITE
from ._view import ConfigView
from .interface import Interface

__all__ = ["serve"]

#: Synced traits that anywidget adds to every instance; front-end plumbing, never widget state.
_ANYWIDGET_INSTANCE_KEYS = frozenset({"_esm", "_css", "_anywidget_id"})


def serve(widget_class: type, create: Callable[[ConfigView], Any] | None = None) -> type[Interface]:
    """An ``Interface`` class that serves ``widget_class`` (an ``anywidget.AnyWidget`` subclass) unchanged.

    Assign it in a project module, which makes it that module's interface class::

        from drawdata import ScatterWidget
        from portico.widgets import serve

        Scatter = serve(ScatterWidget)

    ``create(config)``, when given, builds the widget of each instance from its resolved config
    (for widgets whose constructor takes data, such as a table); by default it is
    ``widget_class(**config)``. The class is named after ``widget_class``, carries its docstring
    and belongs to the calling module. Raises TypeError when ``widget_class`` is not an AnyWidget
    subclass.
    """
    import anywidget  # the project's dependency, imported only by projects that serve widgets

    if not (isinstance(widget_class, type) and issubclass(widget_class, anywidget.AnyWidget)):
        raise TypeError(f"serve() takes an anywidget.AnyWidget subclass, not {widget_class!r}")
    caller = sys._getframe(1).f_globals.get("__name__", __name__)  # as namedtuple does: the module that assigns it
    namespace = {
        "__module__": caller,
        "__qualname__": widget_class.__name__,
        "__doc__": widget_class.__doc__,
        "_portico_widget_class": widget_class,
        "_portico_create": staticmethod(create) if create is not None else None,
        "_portico_base_keys": frozenset(anywidget.AnyWidget.class_trait_names(sync=True)) | _ANYWIDGET_INSTANCE_KEYS,
        "_portico_base_handler": staticmethod(anywidget.AnyWidget._handle_custom_msg),
    }
    for asset in ("_esm", "_css"):
        source = _asset_source(widget_class, asset)
        if source:
            namespace[asset] = source
    return type(widget_class.__name__, (_ServedWidget,), namespace)


def _asset_source(widget_class: type, name: str) -> str | None:
    """The text of ``_esm`` / ``_css``: anywidget turned files into ``FileContents`` (whose str()
    is the text); a trait declaration holds it as its default. An ``_esm`` that is a URL, which
    anywidget imports, becomes a module that imports it."""
    value = getattr(widget_class, name, None)
    value = getattr(value, "default_value", value)  # `_esm = traitlets.Unicode("...")`
    if value is None:
        return None
    text = str(value)
    if name == "_esm" and _is_url(text):
        # The URL's module may export a default or only a named `render`: pass on whichever it has.
        return f"const widget = await import({json.dumps(text.strip())});\nexport default widget.default ?? widget;\n"
    return text


def _is_url(text: str) -> bool:
    """Whether ``text`` is one http(s) URL, as anywidget tells a module URL from module source."""
    stripped = text.strip()
    return stripped.startswith(("http://", "https://")) and not any(c.isspace() for c in stripped)


class _ServedWidget(Interface):
    """The hooks of a served anywidget; ``serve`` makes a subclass per widget class."""

    _portico_widget_class: type
    _portico_create: Callable[[ConfigView], Any] | None
    _portico_base_keys: frozenset[str]
    _portico_base_handler: Callable[..., None]

    def __init__(self) -> None:
        create = self._portico_create
        widget = create(self.config) if create is not None else self._portico_widget_class(**self.config.to_dict())
        if not isinstance(widget, self._portico_widget_class):
            raise TypeError(f"create() returned {type(widget).__name__}, not a {self._portico_widget_class.__name__}")
        self._widget = widget
        self._keys = [key for key in widget.keys if key not in self._portico_base_keys]
        self._applying = threading.local()  # the changes a front end's widget_update is making on this thread
        inert = widget.comm
        widget.comm = _Comm(getattr(inert, "comm_id", None), weakref.WeakMethod(self._forward))  # same id: one registry entry
        # ipywidgets' registry keeps every open widget alive; the comm only weakly refers back, so a
        # released (or reloaded) instance is collected, and closing its widget leaves the registry.
        weakref.finalize(self, widget.close)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if vars(cls).get("__doc__") is None:  # `class Slider(serve(Slider2D))` describes itself as Slider2D does
            cls.__doc__ = cls._portico_widget_class.__doc__

    @property
    def widget(self) -> Any:
        """The widget object this instance serves (one per instance)."""
        return self._widget

    def widget_state(self) -> dict[str, Any]:
        return self._widget.get_state(self._keys)

    def widget_update(self, changes: dict[str, Any]) -> dict[str, Any]:
        unknown = sorted(set(changes) - set(self._keys))
        if unknown:
            raise ValueError(f"{type(self).__name__} has no synced trait {', '.join(map(repr, unknown))}")
        import traitlets  # loaded already: the widget class imported it

        changes = _floats_back(self._widget, changes, traitlets)
        captured: dict[str, Any] = {}
        self._applying.changes = captured
        try:
            self._widget.set_state(changes)
        except traitlets.TraitError as exc:  # traitlets rolled the widget back; a refusal like any other
            raise ValueError(str(exc)) from None
        finally:
            self._applying.changes = None
        # Side effects first, then the keys set, as the widget kept them (a validator may have coerced them).
        return {**captured, **self._widget.get_state(list(changes))}

    def widget_message(self, content: Any, buffers: list[bytes]) -> None:
        widget = self._widget
        if type(widget)._handle_custom_msg is not self._portico_base_handler:
            # The widget overrides ipywidgets' entry point for custom messages (quak does): as in a kernel, it gets them.
            widget._handle_custom_msg(content, buffers)
            return
        # ipywidgets' own dispatcher would log and swallow a failing handler; calling each here
        # lets the error answer the message that caused it.
        for handler in list(widget._msg_callbacks.callbacks):
            handler(widget, content, buffers)

    def _forward(self, data: dict[str, Any], buffers: list[Any]) -> None:
        """A message the widget sends its front ends (ipywidgets' comm protocol), as a Portico push."""
        method = data.get("method")
        if method == "update":
            state = put_buffers(data.get("state", {}), data.get("buffer_paths", []), [bytes(buffer) for buffer in buffers])
            state = {key: value for key, value in state.items() if key in self._keys}
            if not state:
                return
            applying = getattr(self._applying, "changes", None)
            if applying is not None:  # part of the answer to the widget_update in progress
                applying.update(state)
            else:
                self.push_widget_change(state)
        elif method == "custom":
            self.push_widget_message(data.get("content"), [bytes(buffer) for buffer in buffers])
        # "echo_update" is not forwarded: Portico sends every accepted change to all front ends itself.


def _floats_back(widget: Any, changes: dict[str, Any], traitlets: Any) -> dict[str, Any]:
    """``changes`` with the strings NaN and the infinities travel as (``"NaN"``, ``"Infinity"``,
    ``"-Infinity"``, see ``_json``) read back as floats where the trait is a ``Float`` (or a
    ``List`` / ``Tuple`` of them): what the widget sent comes back as it was in Python."""
    traits = widget.traits()

    def back(trait: Any, value: Any) -> Any:
        if type(value) is str:
            return NONFINITE.get(value, value) if isinstance(trait, traitlets.Float) else value
        if isinstance(value, list):
            if isinstance(trait, traitlets.Tuple) and trait._traits:
                return [back(item_trait, item) for item_trait, item in zip(trait._traits, value)] + value[len(trait._traits) :]
            if isinstance(trait, traitlets.Container):
                return [back(getattr(trait, "_trait", None), item) for item in value]
        return value

    return {key: back(traits.get(key), value) for key, value in changes.items()}


class _Comm:
    """What ipywidgets requires of its host's comm: an id, ``send``, ``on_msg`` and ``close``."""

    def __init__(self, comm_id: str | None, forward: weakref.WeakMethod) -> None:
        self.comm_id = comm_id
        self._forward = forward

    def send(self, data: Any = None, metadata: Any = None, buffers: list[Any] | None = None) -> None:
        forward = self._forward()
        if forward is not None and isinstance(data, dict):  # None: the instance is gone, nobody is attached
            forward(data, list(buffers or ()))

    def on_msg(self, callback: Callable[[Any], None] | None) -> None:
        """Front-end messages reach the widget through the interface's hooks, not this callback."""

    def close(self, data: Any = None, metadata: Any = None, buffers: Any = None, deleting: bool = False) -> None:
        """Nothing to tear down: the instance's front ends stay attached to the interface."""
