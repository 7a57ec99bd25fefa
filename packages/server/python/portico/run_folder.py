"""The run folder's format, as ``shared.json`` (``run_folder``) writes it down for both sides.

A run folder is ``<project>/.portico/executions/<execution uuid>/``: the gateway writes
``execution.json`` and the cancel marker, the run process (``run.py``) the rest. This module
names its files, formats its times and writes them; ``read_run_folder`` reads a whole folder the
way the gateway does (``src/store/run-folder.ts``), so that a run folder written by either side
reads the same on the other.
"""

from __future__ import annotations

import datetime
import json
import os
import re
from typing import Any

from . import shared
from ._json import dumps
from ._storage import atomic_write

__all__ = [
    "CACHED_FILE",
    "FILES",
    "TIME_PATTERN",
    "read_run_folder",
    "utc_now",
    "write_json",
    "write_text",
    "write_time",
]

_FORMAT = shared.RUN_FOLDER
#: File name of each run file, by its key in shared.json (``FILES["status"] == "status.json"``).
FILES: dict[str, str] = {key: item["name"] for key, item in _FORMAT["files"].items()}
#: The marker a successful run writes into each interface's own folder (outside the run folder).
CACHED_FILE: str = _FORMAT["cached"]["name"]
#: What every time of a run folder looks like.
TIME_PATTERN = re.compile(_FORMAT["time"]["pattern"])


def utc_now() -> str:
    """Now, as a run folder holds a time: ISO-8601 UTC with microseconds and ``Z``."""
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def write_text(path: str, text: str) -> None:
    """Atomically: a reader sees the old file or the new one."""
    atomic_write(path, text.encode("utf-8"))


def write_json(path: str, value: Any) -> None:
    """A JSON file of a run folder: compact, one line, newline-terminated."""
    write_text(path, dumps(value) + "\n")


def write_time(path: str) -> None:
    """A time file: the time alone, no newline."""
    write_text(path, utc_now())


def _read_text(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read().strip()
    except (OSError, ValueError):
        return None


def _read_json(path: str) -> Any:
    text = _read_text(path)
    if text is None:
        return None
    try:
        return json.loads(text)
    except ValueError:
        return None


def _read_json_lines(path: str) -> list[Any]:
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except (OSError, ValueError):
        return []
    values = []
    for line in text[: max(text.rfind("\n"), 0)].split("\n"):  # whole lines only
        if line.strip():
            try:
                values.append(json.loads(line))
            except ValueError:
                pass
    return values


_READERS = {
    "json": _read_json,
    "time": _read_text,
    "jsonl": _read_json_lines,
    "marker": os.path.exists,
}


def read_run_folder(run_dir: str) -> dict[str, Any]:
    """Every file of a run folder a reader takes, by its key in shared.json: JSON files parsed
    (None when missing or unreadable), times as their text (None when missing), markers as
    booleans, JSON lines as a list; text files (``output.log``, ``job.sh``) are not read."""
    return {
        key: _READERS[item["kind"]](os.path.join(run_dir, item["name"]))
        for key, item in _FORMAT["files"].items()
        if item["kind"] != "text"
    }
