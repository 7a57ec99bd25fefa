"""Binary values inside widget state and messages, as anywidget and ipywidgets carry them.

A state or a change set is JSON plus binary values (``bytes``, ``bytearray``, ``memoryview``)
anywhere inside dicts and lists. On the wire the binary values travel apart, as raw buffers,
and ``buffer_paths`` says where each one goes back (``[["image"], ["layers", 2, "data"]]``).
Between gateway and worker the buffers are one frame body, cut by ``buffer_lengths``.
"""

from __future__ import annotations

from collections.abc import Mapping
from collections.abc import Iterable
from typing import Any

__all__ = ["BINARY", "checked_buffers", "join_body", "put_buffers", "split_body", "split_buffers"]

BINARY = (bytes, bytearray, memoryview)

Path = list[Any]  # str keys and int indices


def split_buffers(value: Any) -> tuple[Any, list[Path], list[bytes]]:
    """``value`` with every binary value replaced by None, the paths of those values and their
    bytes, in the same order. Containers are copied only where a binary value was found."""
    paths: list[Path] = []
    buffers: list[bytes] = []

    def walk(node: Any, path: Path) -> Any:
        if isinstance(node, BINARY):
            paths.append(path)
            buffers.append(bytes(node))
            return None
        if isinstance(node, Mapping):
            items = {key: walk(item, [*path, key]) for key, item in node.items()}
            return items if any(items[key] is not node[key] for key in items) else node
        if isinstance(node, (list, tuple)):
            items_list = [walk(item, [*path, i]) for i, item in enumerate(node)]
            return items_list if any(a is not b for a, b in zip(items_list, node)) else node
        return node

    return walk(value, []), paths, buffers


def put_buffers(value: Any, paths: Any, buffers: list[bytes]) -> Any:
    """Puts ``buffers[i]`` at ``paths[i]`` inside ``value`` (dicts and lists, changed in place).

    Raises ValueError when the paths do not fit ``value`` or their number is not the buffers'.
    """
    if not isinstance(paths, list) or len(paths) != len(buffers):
        raise ValueError(f"buffer_paths must be a list of {len(buffers)} paths, one per buffer")
    for path, buffer in zip(paths, buffers):
        if not isinstance(path, list) or not path:
            raise ValueError(f"buffer path {path!r} must be a non-empty list of keys and indices")
        node = value
        try:
            for step in path[:-1]:
                node = node[step]
            last = path[-1]
            if isinstance(node, dict) and isinstance(last, str):
                node[last] = buffer
            elif isinstance(node, list) and isinstance(last, int) and not isinstance(last, bool) and 0 <= last < len(node):
                node[last] = buffer
            else:
                raise TypeError
        except (KeyError, IndexError, TypeError):
            raise ValueError(f"buffer path {path!r} does not lead into the value") from None
    return value


def join_body(buffers: list[bytes]) -> tuple[list[int], bytes]:
    """The ``buffer_lengths`` header field and the frame body carrying ``buffers``."""
    return [len(buffer) for buffer in buffers], b"".join(buffers)


def split_body(lengths: Any, body: bytes) -> list[bytes]:
    """The buffers a frame body carries; ValueError when ``lengths`` does not describe ``body``."""
    if lengths is None:
        lengths = []
    if not isinstance(lengths, list) or not all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in lengths):
        raise ValueError("buffer_lengths must be a list of non-negative integers")
    if sum(lengths) != len(body):
        raise ValueError(f"buffer_lengths add up to {sum(lengths)} bytes but the frame body has {len(body)}")
    if len(lengths) == 1:
        return [body]  # the usual single buffer: no copy of what may be megabytes
    view = memoryview(body)
    buffers, offset = [], 0
    for n in lengths:
        buffers.append(bytes(view[offset : offset + n]))
        offset += n
    return buffers


def checked_buffers(what: str, buffers: Iterable[Any] | None) -> list[bytes]:
    """``buffers`` as a list of bytes; TypeError naming ``what`` for anything not bytes-like.

    Bytes-like is what Jupyter's kernel takes as a message buffer: anything with the buffer
    protocol (a numpy array, say, as its raw bytes in C order), not only bytes and memoryviews.
    """
    raw: list[bytes] = []
    for buffer in buffers or ():
        if isinstance(buffer, BINARY):
            raw.append(bytes(buffer))
            continue
        try:
            view = memoryview(buffer)
        except TypeError:
            raise TypeError(f"{what} buffers must be bytes-like, not {type(buffer).__name__}") from None
        with view:
            raw.append(view.tobytes())
    return raw
