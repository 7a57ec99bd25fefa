"""How a proxy shows in a notebook: its MIME bundle and marimo's view of it.

The bundle carries the richest form each front end knows: Portico's own MIME type (JupyterLab or
Notebook 7 with Portico's extension render it over a direct socket, and fall back to the kernel's
view in the same output when the browser cannot reach the gateway), the anywidget view where the
kernel has anywidget (``kernel_widget.py``: any front end that renders anywidgets), and HTML and
text that say how to get the live widget. It names the gateway, the interface and the project,
never the token: the front end takes its credentials from its own settings.
"""

from __future__ import annotations

import html
from typing import Any

from . import kernel_widget
from .errors import GatewayError

#: The MIME type JupyterLab's Portico extension renders as a live widget.
WIDGET_MIME_TYPE = "application/vnd.portico.widget+json"


def kernel_widget_of(proxy: Any) -> kernel_widget.KernelWidget:
    """A new kernel widget for ``proxy`` (``anywidget_missing`` without anywidget)."""
    if not kernel_widget.available():
        raise GatewayError("anywidget_missing", None, "showing the widget through the kernel needs anywidget: %pip install anywidget")
    return kernel_widget.KernelWidget(proxy)


def mimebundle(proxy: Any, include: Any = None, exclude: Any = None) -> dict[str, Any]:
    """The proxy's bundle (see the module's doc), filtered by ``include`` / ``exclude``."""
    try:
        info = proxy.info
    except GatewayError as err:
        return {"text/plain": f"{proxy!r} (not connected: {err})"}
    uuid, module = info.get("uuid"), info.get("module") or proxy._target
    url = proxy._gateway.url
    served = (
        f"Portico interface <b>{html.escape(str(module))}</b> <code>{html.escape(str(uuid))}</code>, "
        f'served by <a href="{html.escape(url)}/docs" target="_blank" rel="noopener">{html.escape(url)}</a>. '
    )
    bundle: dict[str, Any] = {
        WIDGET_MIME_TYPE: {"url": url, "uuid": uuid, "module": module, "project": proxy._gateway.project, "version": 1},
        "text/html": (
            f'<div class="portico-widget-fallback">{served}'
            "The live widget shows where the kernel has anywidget (<code>%pip install anywidget</code>, "
            "then display the proxy again), or in JupyterLab with the Portico extension."
            "</div>"
        ),
        "text/plain": repr(proxy),
    }
    if kernel_widget.available():
        try:
            view = proxy.widget()._repr_mimebundle_()
        except GatewayError as err:
            if err.code != "not_found":  # not_found: the interface has no widget
                bundle["text/html"] = (
                    f'<div class="portico-widget-error" style="color:#a50e0e">{served}'
                    f"Its widget cannot be shown: {html.escape(err.message)} ({html.escape(err.code)})</div>"
                )
                bundle["text/plain"] = f"{proxy!r}: its widget cannot be shown: {err.message} ({err.code})"
        else:
            bundle.update({k: v for k, v in (view[0] if isinstance(view, tuple) else view).items() if k != "text/plain"})
    if include:
        bundle = {k: v for k, v in bundle.items() if k in include}
    if exclude:
        bundle = {k: v for k, v in bundle.items() if k not in exclude}
    return bundle


def marimo_view(proxy: Any) -> Any:
    """What marimo shows for the proxy (its ``_display_``): the anywidget, or the bundle's HTML."""
    if kernel_widget.available():
        try:
            return proxy.widget()
        except GatewayError:
            pass  # shown as text, with the reason, below
    bundle = mimebundle(proxy)
    return _Html(bundle.get("text/html") or html.escape(bundle["text/plain"]))


class _Html:
    """An HTML text marimo shows as it is (its ``_mime_`` protocol)."""

    def __init__(self, text: str) -> None:
        self.text = text

    def _mime_(self) -> tuple[str, str]:
        return "text/html", self.text
