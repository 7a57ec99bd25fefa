"""Files under ``<project>/.portico/interfaces/<uuid>/``: path confinement and atomic writes.

Backs ``Interface.local_directory``, ``save_file`` and ``load_file``. Confinement is the one of
uploads and ``/files``: plain relative parts only, and symlinks followed only while they lead to
a place inside the folder (the folder itself may be a link, to another disk say).
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from typing import Any

from ._json import dumps

__all__ = ["OutsideFolder", "atomic_write", "data_path", "load_file", "save_file"]

# A client may choose its own uuid, so it reaches the file system only if it is one plain name.
_SAFE_UUID = re.compile(r"[A-Za-z0-9_.-]+")


class OutsideFolder(PermissionError, ValueError):
    """A path that leads outside the interface's folder: absolute, with ``..``, or through a
    symlink. The worker answers it ``forbidden``; it is also a ValueError, as bad parts always were."""


def data_path(project: str, uuid: str, parts: tuple[str, ...], create: bool = False) -> str:
    """``<project>/.portico/interfaces/<uuid>/<parts...>``; refuses parts that leave that folder.

    Raises OutsideFolder for absolute parts, ``..`` and a path whose symlinks, resolved, lead out
    of the folder (checked before ``create`` makes anything, and again after).
    """
    if not _SAFE_UUID.fullmatch(uuid) or uuid in (".", ".."):
        raise ValueError(f"uuid {uuid!r} cannot name a directory")
    for part in parts:
        if not isinstance(part, str):
            raise TypeError(f"path parts must be str, not {type(part).__name__}")
        if os.path.isabs(part) or os.path.splitdrive(part)[0]:
            raise OutsideFolder(f"path part {part!r} is absolute: it leads outside the interface folder")
        if ".." in re.split(r"[\\/]", part):
            raise OutsideFolder(f"path part {part!r} leads outside the interface folder ('..')")
    root = os.path.join(project, ".portico", "interfaces", uuid)
    path = os.path.normpath(os.path.join(root, *parts))
    if parts:
        _confine(root, path, parts)
        if create:
            os.makedirs(path, exist_ok=True)
            _confine(root, path, parts)  # a link swapped in meanwhile
    elif create:
        os.makedirs(path, exist_ok=True)
    return path


def _confine(root: str, path: str, parts: tuple[str, ...]) -> None:
    """Refuses ``path`` when its symlinks (a missing tail is taken as it is) lead out of ``root``."""
    real_root = os.path.realpath(root)
    real = os.path.realpath(path)
    if real != real_root and not real.startswith(os.path.join(real_root, "")):
        shown = "/".join(parts)
        raise OutsideFolder(f"path {shown!r} leads outside the interface folder (through a symlink)")


def _fsync_directory(path: str) -> None:
    # Makes the rename itself durable; not possible on every platform, hence best-effort.
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def atomic_write(path: str, data: bytes) -> None:
    """Readers see the old file or the new one, never a torn one, even after a crash."""
    directory, base = os.path.split(path)
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=f".{base}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    _fsync_directory(directory)


def _file_path(project: str, uuid: str, name: str) -> str:
    if not isinstance(name, str) or not name or name.endswith(("/", "\\")):
        raise ValueError(f"file name {name!r} must name a file")
    return data_path(project, uuid, (name,))


def save_file(project: str, uuid: str, name: str, data: Any) -> str:
    """Store ``data`` atomically; ``.json`` names store JSON, otherwise str (UTF-8) or bytes."""
    path = _file_path(project, uuid, name)
    if name.lower().endswith(".json"):
        raw = dumps(data).encode("utf-8")
    elif isinstance(data, (bytes, bytearray, memoryview)):
        raw = bytes(data)
    elif isinstance(data, str):
        raw = data.encode("utf-8")
    else:
        raise TypeError(f"save_file({name!r}) stores str or bytes; use a '.json' name to store {type(data).__name__}")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    atomic_write(path, raw)
    return path


def load_file(project: str, uuid: str, name: str, default: Any = None) -> Any:
    """Parsed JSON for ``.json`` names, else text (bytes when not UTF-8); ``default`` if missing."""
    path = _file_path(project, uuid, name)
    try:
        with open(path, "rb") as handle:
            raw = handle.read()
    except FileNotFoundError:
        return default
    if name.lower().endswith(".json"):
        return json.loads(raw)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw
