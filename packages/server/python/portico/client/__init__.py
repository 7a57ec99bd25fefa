"""Drive a Portico gateway from Python — notebooks, scripts — with the standard library only.

Install it from the gateway itself (``%pip install http://127.0.0.1:8000/v1/python/portico-<version>-py3-none-any.whl``,
listed at ``GET /v1/python``), or ``pip install packages/server/python`` from a checkout, and::

    from portico.client import Gateway

    g = Gateway("http://127.0.0.1:8000", token=None)          # token: the gateway's --api-token; Gateway() reads PORTICO_URL, PORTICO_TOKEN
    counter = g.interface("counter", ["~big"])                  # one WebSocket, opened on first use
    counter.add(2)                                              # → 20 (a call, answered by its result)
    for tick in g.interface("streamer").ticks(3):               # a generator method: an iterator
        print(tick)
    counter.on_event(print)                                     # emit() payloads (a Display when displayable), on a callback thread
    counter.on_restart(print)                                   # it died with its worker; the next call makes it again
    counter.release()                                           # → True: the live instance is dropped (close() detaches)
    counter                                                     # last line of a cell: the live widget (an anywidget where anywidget is installed)
    g.interface("plots").figure()                               # → a Display: the figure shows in the notebook cell
    # In a notebook kernel, a method emitting {"progress": 0…1} shows a progress bar in the cell
    # (g.progress = False: none); nothing is shown or printed outside one.

    g.search(module="counter", where={"step": ("gte", 10)}, sort="-created_at")
    run = g.dispatch("trainer", [{"epochs": 3}])
    for text in run.follow():                                   # the run's output as it grows
        print(text, end="")

Errors raise :class:`GatewayError` with the gateway's stable ``code`` (``not_found``,
``call_failed``, ``invalid_config``, …; see docs/reference/errors.md). Two codes come from this
client itself: ``unreachable`` (no connection to the gateway) and ``connection_closed`` (the
WebSocket went away while something was waiting on it; the next use of the proxy reconnects).

The token is sent as ``Authorization: Bearer`` on REST requests and as the WebSocket subprotocol
``bearer, <token>`` (or the ``Authorization`` header when the token has characters a subprotocol
cannot carry). It never appears in a proxy's repr or MIME bundle: notebooks are saved and shared.

The public surface is what this module exports. Beside it: ``gateway.py`` (the gateway and its
REST operations), ``rest.py`` (one JSON request, request bodies), ``execution.py`` (a run),
``proxy.py`` (an interface over its WebSocket), ``widget_bundle.py`` (how a proxy shows in a
notebook), ``kernel_widget.py`` (its widget as an anywidget, relayed by the kernel), ``display.py`` (rich results), ``progress.py`` (the
notebook progress bar), ``connection.py`` (that socket's reader and frame routing), ``transfers.py`` (uploads and reads), ``errors.py`` (``GatewayError``); the WebSocket
protocol itself is ``portico._ws_client``.
"""

from .display import Display
from .errors import GatewayError
from .execution import Execution
from .gateway import Gateway
from .proxy import WIDGET_MIME_TYPE, InterfaceProxy

__all__ = ["Display", "Execution", "Gateway", "GatewayError", "InterfaceProxy", "WIDGET_MIME_TYPE"]
