"""A proxy shown through the kernel: its interface's widget as an anywidget (docs/clients/notebooks.md).

Where ``anywidget`` is importable in the kernel, displaying a proxy shows the widget's own ES
module (fetched here from the gateway, with its stylesheet) in any front end that renders
anywidgets: JupyterLab and Notebook 7 without Portico's extension, VS Code, Colab, Voilà, marimo.
The page talks to this kernel only; the kernel relays over the proxy's WebSocket:

- page → gateway: a synced value the page changed becomes a ``widget_set`` (in order, never
  merged), a custom message a ``widget_msg`` whose reply goes back to the page as a message;
- gateway → page: ``widget_change`` pushes (another client, ``push_widget_change``) and the
  normalized answers of this relay's own sets become trait values, ``widget_msg`` pushes messages.
  Answers and pushes are applied in the order the socket brought them (on the proxy's listener
  thread), and a set's answer only where no newer local change of that key is on its way, so the
  last change wins on both sides;
- binary values are ``bytes`` traits, which travel as comm buffers to the page;
- ``instance_restarted``: the state is read again and the page shows a notice for a while;
- the socket lost (the gateway stopped, the network dropped): the page says so, changes made
  meanwhile wait (the latest per key), and one thread reconnects with back-off (``RETRY_*``),
  reads the state again and sends what waited. It logs once per outage, not per try.

The widget's model state is the instance's widget state, one trait per key; a key that cannot be
a trait (not a Python name, or a name ipywidgets uses: ``layout``, ``keys``, …) is refused with
``widget_state_keys`` before anything is shown. The saved notebook holds the module's source and
the state, never the gateway's token.
"""

from __future__ import annotations

import base64
import importlib.util
import json
import keyword
import logging
import os
import re
import threading
import urllib.parse
from typing import Any, Callable

from .connection import Lost, set_fields, widget_message, with_binary_values
from .errors import GatewayError

log = logging.getLogger("portico.client")

#: The trait the page's wrapper shows above the widget (kernel_widget.js); empty hides it.
NOTICE_TRAIT = "_portico_notice"
#: How long a passing notice (a restart, a refused change) stays (s).
NOTICE_SECONDS = 8.0
#: The reconnect thread's first wait after the socket was lost, and its longest (doubling between) (s).
RETRY_FIRST_SECONDS = 0.5
RETRY_MAX_SECONDS = 10.0
#: Frame types that end the exchange a relay frame started.
_ANSWERS = frozenset({"widget_change", "widget_state", "widget_msg", "widget_msg_done", "error"})

_WRAPPER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "kernel_widget.js")


def available() -> bool:
    """Whether ``anywidget`` can be imported in this Python (nothing is imported to find out)."""
    return importlib.util.find_spec("anywidget") is not None


def unusable_keys(state: dict[str, Any], base: type) -> list[str]:
    """The keys of ``state`` that cannot be traits of a ``base`` subclass, each with why."""
    bad = []
    for key in state:
        if not isinstance(key, str) or not key.isidentifier() or keyword.iskeyword(key):
            bad.append(f"{key!r} (not a Python name)")
        elif key == NOTICE_TRAIT or hasattr(base, key):
            bad.append(f"{key!r} (a name ipywidgets or Portico uses)")
    return bad


def wrapper_esm(source: str) -> str:
    """The module anywidget runs: ``source`` inside the notice wrapper (kernel_widget.js)."""
    with open(_WRAPPER, encoding="utf-8") as stream:
        wrapper = stream.read()
    # JSON text is a JavaScript string literal (line separators included, since ES2019).
    return wrapper.replace("__PORTICO_WIDGET_SOURCE__", json.dumps(source), 1)


class KernelWidget:
    """The anywidget of one proxy and the relay between its comm and the proxy's socket.

    Made once per proxy (``InterfaceProxy.widget()``); every display of the proxy is a view of
    the same model. The relay holds the proxy, so a widget on screen keeps working after the
    notebook dropped its proxy variable.
    """

    def __init__(self, proxy: Any) -> None:  # an InterfaceProxy (not imported: it imports this)
        import anywidget
        import traitlets

        self._proxy = proxy
        info = proxy.info
        module = str(info.get("module") or "")
        self.uuid = str(info.get("uuid") or "")
        state = proxy.widget_state()
        bad = unusable_keys(state, anywidget.AnyWidget)
        if bad:
            raise GatewayError(
                "widget_state_keys",
                None,
                f"The widget state of {module} ({self.uuid}) has keys that cannot be widget traits: {', '.join(bad)}. "
                "Rename them in the interface's widget_state(), or show it in JupyterLab with the Portico extension.",
            )
        esm, css = _assets(proxy, module)
        self._traitlets = traitlets
        self._lock = threading.Lock()
        self._applying = threading.local()
        self._seq = 0
        self._latest: dict[str, int] = {}  # key → the seq of its newest local change
        self._unsent: dict[str, Any] = {}  # changes made while the socket was lost
        self._offline = False
        self._closed = False
        self._notice_timer: threading.Timer | None = None
        name = "Portico_" + re.sub(r"\W", "_", module or "widget")
        traits = {key: traitlets.Any().tag(sync=True) for key in state}
        cls = type(
            name,
            (anywidget.AnyWidget,),
            {
                "__module__": __name__,
                "_esm": traitlets.Unicode(wrapper_esm(esm)).tag(sync=True),
                "_css": traitlets.Unicode(css).tag(sync=True),
                NOTICE_TRAIT: traitlets.Unicode("").tag(sync=True),
                **traits,
            },
        )
        self.widget = cls(**state)
        self._keys = set(state)
        self.widget.observe(self._on_page_change, names=list(state))
        self.widget.on_msg(self._on_page_message)
        listeners = proxy._listeners
        listeners.add("widget_change", self._on_push)
        listeners.add("widget_msg", self._on_pushed_message)
        listeners.add("instance_restarted", self._on_restart)
        listeners.add("closed", self._on_lost)

    # ------------------------------------------------------------- the page

    def _on_page_change(self, change: dict[str, Any]) -> None:
        if getattr(self._applying, "on", False):
            return  # a value from the gateway, being shown
        self._send_set({change["name"]: _plain(change["new"])})

    def _on_page_message(self, _widget: Any, content: Any, buffers: list[Any]) -> None:
        frame: dict[str, Any] = {"type": "widget_msg", "content": content}
        if buffers:
            frame["buffers"] = [base64.b64encode(bytes(b)).decode("ascii") for b in buffers]
        try:
            self._send(frame, self._message_answered)
        except GatewayError as err:
            self._flash(f"the message was not delivered: {err.message}")

    # ------------------------------------------------------------- sending

    def _send_set(self, changes: dict[str, Any]) -> None:
        with self._lock:
            self._seq += 1
            seq = self._seq
            for key in changes:
                self._latest[key] = seq
            if self._offline:
                self._unsent.update(changes)
                return
        try:
            self._send({"type": "widget_set", **set_fields(changes)}, lambda frame: self._set_answered(seq, changes, frame))
        except GatewayError:
            with self._lock:
                self._unsent.update(changes)  # sent once the socket is back (see _reconnect)

    def _send(self, frame: dict[str, Any], on_answer: Callable[[Any], None]) -> None:
        """Sends ``frame`` with a fresh id; its answer (or Lost) goes to ``on_answer`` on the
        listener thread, in socket order with the pushes."""
        proxy = self._proxy
        conn = proxy._connection()
        listeners = proxy._listeners

        def answered(item: Any) -> None:
            if isinstance(item, Lost) or item.get("type") in _ANSWERS:
                conn.forget(frame_id)
            on_answer(item)

        frame_id = conn.register(_OnListenerThread(listeners, answered))
        try:
            conn.send({**frame, "id": frame_id})
        except BaseException:
            conn.forget(frame_id)
            raise

    # ------------------------------------------------------------- answers and pushes (listener thread)

    def _set_answered(self, seq: int, changes: dict[str, Any], item: Any) -> None:
        if isinstance(item, Lost):
            with self._lock:  # perhaps applied, perhaps not: sent again once the socket is back
                for key, value in changes.items():
                    if self._latest.get(key) == seq:
                        self._unsent.setdefault(key, value)
            return
        if item.get("type") == "error":
            payload = item.get("payload") or {}
            self._flash(f"the change was refused: {payload.get('message')} ({payload.get('code')})")
            self._resync()
            return
        normalized = with_binary_values(item.get("payload"), "changes")
        with self._lock:
            fresh = {key: value for key, value in normalized.items() if self._latest.get(key, seq) == seq}
        self._apply(fresh)

    def _message_answered(self, item: Any) -> None:
        if isinstance(item, Lost) or item.get("type") == "widget_msg_done":
            return
        if item.get("type") == "error":
            payload = item.get("payload") or {}
            self._flash(f"widget_message raised: {payload.get('message')} ({payload.get('code')})")
            return
        self._on_pushed_message(widget_message(item.get("payload")))

    def _on_push(self, changes: dict[str, Any]) -> None:
        self._apply(changes)

    def _on_pushed_message(self, message: tuple[Any, list[bytes]]) -> None:
        content, buffers = message
        self.widget.send(content, buffers or None)

    def _on_restart(self, info: dict[str, Any]) -> None:
        reason = info.get("reason")
        why = {
            "worker_wedged": "stopped answering and was restarted",
            "allocation_ended": "lost its Slurm allocation and was restarted",
            "source_changed": "was restarted on its changed source",
        }.get(str(reason), "crashed and was restarted")
        self._flash(f"the interface restarted (its Python worker {why}) and its state was read again.")
        self._resync()

    def _on_lost(self, error: GatewayError) -> None:
        with self._lock:
            if self._offline or self._closed:
                return
            self._offline = True
        log.warning("portico.client: the widget of %s lost the gateway (%s); reconnecting", self.uuid, error.message)
        self._notice(f"the gateway at {self._proxy._gateway.url} cannot be reached; retrying…")
        threading.Thread(target=self._reconnect, name="portico-widget-reconnect", daemon=True).start()

    # ------------------------------------------------------------- state

    def _resync(self, then: Callable[[], None] | None = None) -> None:
        """Reads the whole state again and shows it; ``then`` after that."""

        def answered(item: Any) -> None:
            if not isinstance(item, Lost) and item.get("type") == "widget_state":
                self._apply(with_binary_values(item.get("payload"), "state"))
            if then is not None:
                then()

        try:
            self._send({"type": "widget_get"}, answered)
        except GatewayError:
            pass  # the socket is gone: the reconnect reads it again

    def _apply(self, changes: dict[str, Any]) -> None:
        """Shows values from the gateway (they are not sent back)."""
        new = {key: self._traitlets.Any().tag(sync=True) for key in changes if key not in self._keys}
        if new:
            usable = {key: trait for key, trait in new.items() if not unusable_keys({key: None}, type(self.widget))}
            self.widget.add_traits(**usable)
            self._keys.update(usable)
            self.widget.observe(self._on_page_change, names=list(usable))
        self._applying.on = True
        try:
            with self.widget.hold_sync():
                for key, value in changes.items():
                    if key in self._keys:
                        setattr(self.widget, key, value)
        finally:
            self._applying.on = False

    def _reconnect(self) -> None:
        delay = RETRY_FIRST_SECONDS
        stop = threading.Event()
        while not self._closed:
            stop.wait(delay)
            try:
                self._proxy._connection()
                break
            except GatewayError:
                delay = min(delay * 2, RETRY_MAX_SECONDS)
        else:
            return
        log.warning("portico.client: the widget of %s reached the gateway again", self.uuid)

        def back() -> None:
            with self._lock:
                self._offline = False
                unsent, self._unsent = self._unsent, {}
            self._notice("")
            if unsent:
                self._send_set(unsent)

        self._resync(then=back)

    # ------------------------------------------------------------- notices

    def _notice(self, text: str) -> None:
        if self._notice_timer is not None:
            self._notice_timer.cancel()
            self._notice_timer = None
        self._applying.on = True
        try:
            setattr(self.widget, NOTICE_TRAIT, text)
        finally:
            self._applying.on = False

    def _flash(self, text: str) -> None:
        """Shows ``text`` for NOTICE_SECONDS (unless the gateway is lost meanwhile)."""
        self._notice(text)

        def clear() -> None:
            # Only this notice: one the gateway's loss put up since stays until it is back.
            if not self._offline and getattr(self.widget, NOTICE_TRAIT) == text:
                self._notice("")

        timer = threading.Timer(NOTICE_SECONDS, clear)
        timer.daemon = True
        self._notice_timer = timer
        timer.start()

    def close(self) -> None:
        """Stops relaying and closes the widget (its views go blank)."""
        self._closed = True
        listeners = self._proxy._listeners
        for kind, callback in (
            ("widget_change", self._on_push),
            ("widget_msg", self._on_pushed_message),
            ("instance_restarted", self._on_restart),
            ("closed", self._on_lost),
        ):
            listeners.remove(kind, callback)
        self.widget.close()


class _OnListenerThread:
    """A waiter (what ``Connection.register`` takes) that hands each frame to ``callback`` on the
    proxy's listener thread, in socket order with the pushes."""

    def __init__(self, listeners: Any, callback: Callable[[Any], None]) -> None:
        self.listeners = listeners
        self.callback = callback

    def put(self, item: Any) -> None:
        self.listeners.run_later(self.callback, item)

    put_nowait = put


def _assets(proxy: Any, module: str) -> tuple[str, str]:
    """The widget's ES module and stylesheet ("" when it has none), from the gateway."""
    base = f"/v1/project/{urllib.parse.quote(module, safe='')}/widget"
    body, headers = proxy._gateway.fetch(f"{base}/esm", accept="text/javascript")
    css = ""
    if 'rel="stylesheet"' in (headers.get("Link") or ""):
        css = proxy._gateway.fetch(f"{base}/css", accept="text/css")[0].decode("utf-8")
    return body.decode("utf-8"), css


def _plain(value: Any) -> Any:
    """A value from the page as the gateway takes it: comm buffers (memoryview) as bytes."""
    if isinstance(value, (memoryview, bytearray)):
        return bytes(value)
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    return value
