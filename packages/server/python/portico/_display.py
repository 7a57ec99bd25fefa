"""Rich results: what IPython would display of a value, as the MIME bundle Jupyter's
``display_data`` carries (docs/writing/rich-results.md).

A value is shown by the methods its class defines, as IPython calls them: ``_repr_mimebundle_``
first (``include``/``exclude`` None; a dict, or a ``(data, metadata)`` pair), then each
``_repr_<kind>_`` of ``REPR_METHODS`` for the MIME types the bundle lacks (a value, or a
``(value, metadata)`` pair; None means "not this one"). A method that raises or answers the
wrong type is left out and logged, and the next one is tried (IPython does the same);
``text/plain`` is ``repr()``. A class is not shown by its methods (IPython does not either).

Values whose class defines none of them (a matplotlib figure has only a ``_repr_html_`` that
answers None outside ipympl) are shown by IPython's display formatter when IPython is importable
in the project's environment: the active shell's, else a ``DisplayFormatter`` that renders
matplotlib figures as PNG (``select_figure_formats``, as the inline backend does). IPython is
imported only for such a value, and only when JSON cannot carry it. Without IPython, a matplotlib
figure is drawn by matplotlib itself, as the inline backend would: PNG, or SVG where
``rcParams["savefig.format"]`` asks for ``"svg"``.

A value JSON cannot carry and nothing shows as more than text (its repr methods all failed or
answered None, no formatter knows it) is answered as its text, payload None, and the worker logs
a warning naming its type once: never silently turned into its repr.

Binary data (``bytes``, and the base64 text IPython gives for ``image/png``, ``image/jpeg``
and ``application/pdf``) is kept as ``bytes``: it leaves the worker as raw buffers.
Stdlib only: IPython, matplotlib, Pillow or pandas are never imported here unless a value needs it.

``encoded`` is the one rule for every value that leaves the worker shown (a result, a stream
item, an ``emit()`` event, a run's event line): which bundle it gets, what its payload is, and the
bound ``DISPLAY_MAX_BYTES``; each caller only says how its frame or line is written.
"""

from __future__ import annotations

import base64
import binascii
import importlib.util
import sys
import threading
import types
import weakref
from typing import Any, Callable, NamedTuple, TypeVar

from ._buffers import join_body
from ._frames import encode_frame
from . import shared
from ._json import dumps

__all__ = [
    "BINARY_TYPES",
    "DISPLAY_MAX_BYTES",
    "REPR_METHODS",
    "DisplayTooLarge",
    "Shown",
    "base64_fields",
    "bridge_fields",
    "bridge_frame",
    "declares",
    "encoded",
    "formatted",
    "own",
]

#: The MIME type of each repr method, as IPython's formatters have them.
REPR_METHODS: dict[str, str] = {
    "text/html": "_repr_html_",
    "text/markdown": "_repr_markdown_",
    "image/svg+xml": "_repr_svg_",
    "image/png": "_repr_png_",
    "application/pdf": "_repr_pdf_",
    "image/jpeg": "_repr_jpeg_",
    "text/latex": "_repr_latex_",
    "application/json": "_repr_json_",
    "application/javascript": "_repr_javascript_",
}
#: Types whose data is bytes; IPython accepts their base64 text too.
BINARY_TYPES = frozenset({"image/png", "image/jpeg", "application/pdf"})
_JSON_TYPES = frozenset({"application/json"})
#: The largest bundle: binary data raw, text as UTF-8, JSON values as their text. The gateway's
#: ``limits.displayMaxBytes``: both read it from shared.json.
DISPLAY_MAX_BYTES = shared.LIMITS["display_max_bytes"]
_ALL_METHODS = ("_repr_mimebundle_", *REPR_METHODS.values())


class Shown(NamedTuple):
    """A bundle: MIME type → str, JSON value or bytes; metadata by MIME type."""

    data: dict[str, Any]
    metadata: dict[str, Any]

    @property
    def rich(self) -> bool:
        """True when it shows more than text (any MIME type but text/plain)."""
        return any(mime != "text/plain" for mime in self.data)


def _log(message: str) -> None:
    try:
        stream = sys.__stderr__ or sys.stderr  # the worker's own stderr, never a call's output
        stream.write(f"portico.worker: {message}\n")
        stream.flush()
    except (OSError, ValueError):
        pass


def _described(exc: BaseException) -> str:
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


_declared: weakref.WeakKeyDictionary[type, bool] = weakref.WeakKeyDictionary()


def declares(value: Any) -> bool:
    """Whether the class of ``value`` defines a repr method (looked up once per class). A class
    itself declares none: its methods would need an instance."""
    cls = type(value)
    found = _declared.get(cls)
    if found is None:
        found = not issubclass(cls, type) and any(_method(cls, name) is not None for name in _ALL_METHODS)
        _declared[cls] = found
    return found


def _method(cls: type, name: str) -> Any:
    """The method ``name`` of ``cls``, or None (also when looking it up raises)."""
    try:
        method = getattr(cls, name, None)
    except Exception:
        return None
    return method if callable(method) else None


def _plain_text(value: Any) -> str:
    try:
        return repr(value)
    except Exception as exc:
        _log(f"display: repr() of a {type(value).__name__} raised {_described(exc)}")
        return object.__repr__(value)


def _checked(mime: str, data: Any) -> Any:
    """``data`` as it travels for ``mime``; raises TypeError/ValueError when it cannot."""
    if isinstance(data, (bytes, bytearray, memoryview)):
        if mime.startswith("text/") or mime == "image/svg+xml":
            raise TypeError(f"{type(data).__name__}, not text")
        return bytes(data)
    if mime in BINARY_TYPES:
        if isinstance(data, str):
            return base64.b64decode("".join(data.split()), validate=True)
        raise TypeError(f"{type(data).__name__}, not bytes or base64 text")
    if isinstance(data, str):
        return data
    if mime in _JSON_TYPES or mime.endswith("+json"):
        dumps(data)  # raises when it is not JSON
        return data
    raise TypeError(f"{type(data).__name__}, not text")


def _bundle(value: Any, data: dict[str, Any], metadata: dict[str, Any], source: str) -> Shown:
    """A checked bundle: entries that cannot travel are left out (and logged), text/plain added."""
    shown: dict[str, Any] = {}
    for mime, item in data.items():
        if item is None or not isinstance(mime, str):
            continue
        try:
            shown[mime] = _checked(mime, item)
        except (TypeError, ValueError, UnicodeError, binascii.Error) as exc:
            _log(f"display: {source} gave {mime} of a {type(value).__name__} that cannot be sent ({exc}); left out")
    if "text/plain" not in shown:
        shown["text/plain"] = _plain_text(value)
    kept = {mime: md for mime, md in metadata.items() if mime in shown and md is not None}
    if kept:
        try:
            dumps(kept)
        except (TypeError, ValueError) as exc:
            _log(f"display: metadata of a {type(value).__name__} is not JSON ({exc}); left out")
            kept = {}
    return Shown(shown, kept)


def own(value: Any) -> Shown:
    """The bundle of ``value`` by its own repr methods (always with text/plain). Never raises."""
    cls = type(value)
    data: dict[str, Any] = {}
    metadata: dict[str, Any] = {}
    method = _method(cls, "_repr_mimebundle_")
    if method is not None:
        try:
            answer = method(value, include=None, exclude=None)
            if isinstance(answer, tuple) and len(answer) == 2:
                answer, md = answer
                if isinstance(md, dict):
                    metadata.update(md)
            if isinstance(answer, dict):
                data.update(answer)
            elif answer is not None:
                _log(f"display: {cls.__name__}._repr_mimebundle_() returned {type(answer).__name__}, not a dict; left out")
        except Exception as exc:
            _log(f"display: {cls.__name__}._repr_mimebundle_() raised {_described(exc)}; left out")
    for mime, name in REPR_METHODS.items():
        if mime in data:
            continue
        method = _method(cls, name)
        if method is None:
            continue
        try:
            answer = method(value)
        except Exception as exc:
            _log(f"display: {cls.__name__}.{name}() raised {_described(exc)}; left out")
            continue
        if isinstance(answer, tuple) and len(answer) == 2:
            answer, md = answer
            if md is not None:
                metadata[mime] = md
        if answer is not None:
            data[mime] = answer
    return _bundle(value, data, metadata, "its repr methods")


_formatter_lock = threading.Lock()
_formatter: Any = None
_figures = False


def _display_formatter() -> Any:
    """IPython's display formatter (imported now if it can be), or None without IPython."""
    global _formatter, _figures
    ipython = sys.modules.get("IPython")
    if ipython is None:
        try:
            if importlib.util.find_spec("IPython") is None:
                return None
        except (ImportError, ValueError):
            return None
    with _formatter_lock:
        try:
            import IPython
            from IPython.core.formatters import DisplayFormatter
        except Exception as exc:  # installed but broken
            _log(f"display: IPython could not be imported ({_described(exc)})")
            return None
        shell = IPython.get_ipython()
        if shell is not None and getattr(shell, "display_formatter", None) is not None:
            return shell.display_formatter
        if _formatter is None:
            _formatter = DisplayFormatter()
        if not _figures and "matplotlib.figure" in sys.modules:
            try:
                from IPython.core.pylabtools import select_figure_formats

                select_figure_formats(types.SimpleNamespace(display_formatter=_formatter), {"png"})
            except Exception as exc:
                _log(f"display: matplotlib figures cannot be shown ({_described(exc)})")
            _figures = True
        return _formatter


def formatted(value: Any) -> Shown | None:
    """The bundle of ``value`` by IPython's display formatter, or without IPython a matplotlib
    figure's by matplotlib; None when neither shows it. Never raises."""
    formatter = _display_formatter()
    if formatter is None:
        return _figure(value)
    try:
        data, metadata = formatter.format(value)
    except Exception as exc:
        _log(f"display: IPython's formatter raised {_described(exc)} on a {type(value).__name__}")
        return None
    return _bundle(value, dict(data or {}), dict(metadata or {}), "IPython's formatter")


def _figure(value: Any) -> Shown | None:
    """A matplotlib figure drawn by matplotlib itself (IPython is not here): PNG, or SVG where
    ``savefig.format`` is ``"svg"``, trimmed as the inline backend trims it. None for anything else."""
    figures = sys.modules.get("matplotlib.figure")
    if figures is None or not isinstance(value, figures.Figure):
        return None
    import io

    import matplotlib

    svg = matplotlib.rcParams.get("savefig.format") == "svg"
    buffer = io.BytesIO()
    try:
        value.savefig(buffer, format="svg" if svg else "png", bbox_inches="tight")
    except Exception as exc:
        _log(f"display: matplotlib could not draw a {type(value).__name__} ({_described(exc)})")
        return None
    data: dict[str, Any] = {"image/svg+xml": buffer.getvalue().decode("utf-8")} if svg else {"image/png": buffer.getvalue()}
    data["text/plain"] = _plain_text(value)
    return _bundle(value, data, {}, "matplotlib")


_text_only_warned: set[type] = set()


def _text_only(value: Any) -> None:
    """Says once per type that a value with no JSON and no display went as its text."""
    kind = type(value)
    if kind in _text_only_warned:
        return
    _text_only_warned.add(kind)
    _log(
        f"display: a {kind.__module__}.{kind.__qualname__} has no display here (its repr methods gave only text, and "
        f"{'no formatter knows it' if _display_formatter() is not None else 'IPython is not installed'}): it is answered as its text"
    )


class DisplayTooLarge(ValueError):
    """A bundle over ``DISPLAY_MAX_BYTES``: the call answers ``payload_too_large`` (docs/writing/rich-results.md)."""


def size(shown: Shown) -> int:
    """Bytes of a bundle as the bound counts them: binary data raw, text as UTF-8, JSON as its text."""
    total = 0
    for item in shown.data.values():
        if isinstance(item, bytes):
            total += len(item)
        elif isinstance(item, str):
            total += len(item.encode("utf-8", "surrogatepass"))
        else:
            total += len(dumps(item).encode("utf-8"))
    return total


def bridge_fields(shown: Shown) -> tuple[dict[str, Any], bytes]:
    """A bundle as a bridge frame carries it: the header fields (``display`` with null where the
    data is binary, ``metadata`` when there is some, ``buffer_paths`` and ``buffer_lengths``)
    and the frame body, the binary data one buffer after the other."""
    data: dict[str, Any] = {}
    paths: list[list[str]] = []
    buffers: list[bytes] = []
    for mime, item in shown.data.items():
        if isinstance(item, bytes):
            data[mime] = None
            paths.append([mime])
            buffers.append(item)
        else:
            data[mime] = item
    fields: dict[str, Any] = {"display": data}
    if shown.metadata:
        fields["metadata"] = shown.metadata
    if not buffers:
        return fields, b""
    fields["buffer_paths"] = paths
    fields["buffer_lengths"], body = join_body(buffers)
    return fields, body


def bridge_frame(header: dict[str, Any]) -> Callable[[Any, Shown | None], bytes]:
    """The ``encode`` of ``encoded`` for a bridge frame: ``header`` with ``payload``, and the
    bundle's fields and body (``bridge_fields``) when there is one."""

    def encode(payload: Any, shown: Shown | None) -> bytes:
        if shown is None:
            return encode_frame({**header, "payload": payload})
        fields, body = bridge_fields(shown)
        return encode_frame({**header, "payload": payload, **fields}, body)

    return encode


def base64_fields(shown: Shown) -> dict[str, Any]:
    """A bundle as JSON text carries it (a run's events.jsonl): binary data as base64 text."""
    data = {mime: base64.b64encode(item).decode("ascii") if isinstance(item, bytes) else item for mime, item in shown.data.items()}
    return {"display": data, "metadata": shown.metadata} if shown.metadata else {"display": data}


T = TypeVar("T")


def encoded(value: Any, encode: Callable[[Any, Shown | None], T], what: str) -> T:
    """``encode(payload, bundle)`` of ``value`` as docs/writing/rich-results.md says it travels.

    A value whose class shows more than text by its repr methods: its bundle, with ``value`` as
    payload (None when JSON refuses it). Else ``value`` alone (``encode(value, None)``); when that
    raises, the bundle IPython's formatter gives, or the text/plain of a class whose repr methods
    all failed, with payload None; with neither, what ``encode`` raised (TypeError or ValueError:
    not JSON). Raises ``DisplayTooLarge`` (naming ``what``) for a bundle over ``DISPLAY_MAX_BYTES``.
    """
    shown = own(value) if declares(value) else None
    if shown is not None and shown.rich:
        _check_size(shown, what)
        try:
            return encode(value, shown)
        except Exception:  # any failure of user types while encoding: the payload goes, the bundle stays
            return encode(None, shown)
    try:
        return encode(value, None)
    except Exception:
        other = formatted(value)
        if other is not None and other.rich:
            shown = other
        elif shown is None:
            raise
        else:
            _text_only(value)
        _check_size(shown, what)
        return encode(None, shown)


def _check_size(shown: Shown, what: str) -> None:
    total = size(shown)
    if total > DISPLAY_MAX_BYTES:
        raise DisplayTooLarge(
            f"{what} has a display bundle of {total} bytes; at most {DISPLAY_MAX_BYTES} are allowed (limits.displayMaxBytes)"
        )
