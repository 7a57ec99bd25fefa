"""What a run process runs: ``execution.json`` read and checked into a ``Plan``, the run dir held
for the process's life, and the manifest of the plan's modules (hashed before any of them runs).

Anything wrong here refuses the run (``Refused``): ``run.py`` exits 2 having written nothing.
"""

from __future__ import annotations

import dataclasses
import fcntl
import hashlib
import importlib.machinery
import json
import os
import platform
import sys
from typing import Any

from . import _storage
from .run_folder import FILES
from .worker import Refusal, check_module_name, project_search_path

__all__ = ["Entry", "Plan", "Refused", "Unit", "load_plan", "lock_run_dir", "manifest"]


class Refused(Exception):
    """The run dir cannot be run at all: exit 2, having written nothing."""


@dataclasses.dataclass(frozen=True)
class Unit:
    """An interface or a context: what to instantiate."""

    uuid: str
    module: str
    config: dict[str, Any]


@dataclasses.dataclass(frozen=True)
class Entry:
    """An interface of the run and its contexts, entered in order around its ``__call__``."""

    unit: Unit
    contexts: list[Unit]


@dataclasses.dataclass(frozen=True)
class Plan:
    uuid: str
    project: str
    interfaces: list[Entry]


def _unit(raw: Any, where: str, project: str) -> Unit:
    if not isinstance(raw, dict):
        raise Refused(f"{where} is not an object")
    uuid, module, config = raw.get("uuid"), raw.get("module"), raw.get("config", {})
    if not isinstance(uuid, str):
        raise Refused(f"{where}.uuid is not a string")
    try:
        _storage.data_path(project, uuid, ())  # it names the interface's data folder
    except ValueError as exc:
        raise Refused(f"{where}.uuid: {exc}") from None
    if not isinstance(module, str) or not module:
        raise Refused(f"{where}.module is not a non-empty string")
    if not isinstance(config, dict):
        raise Refused(f"{where}.config is not an object")
    return Unit(uuid, module, config)


def load_plan(run_dir: str) -> Plan:
    """``execution.json`` of ``run_dir``, checked: its uuid names the folder, its project exists."""
    path = os.path.join(run_dir, FILES["execution"])
    try:
        with open(path, "rb") as handle:
            raw = json.loads(handle.read())
    except FileNotFoundError:
        raise Refused(f"{path} does not exist") from None
    except (OSError, ValueError) as exc:  # ValueError includes JSON and UTF-8 errors
        raise Refused(f"{path} is not readable JSON: {exc}") from None
    if not isinstance(raw, dict):
        raise Refused(f"{path} is not a JSON object")
    uuid, project, interfaces = raw.get("uuid"), raw.get("project"), raw.get("interfaces")
    if not isinstance(uuid, str) or uuid != os.path.basename(run_dir):
        raise Refused(f"{path}: uuid {uuid!r} is not the name of the run directory")
    if not isinstance(project, str) or not os.path.isabs(project) or not os.path.isdir(project):
        raise Refused(f"{path}: project {project!r} is not an existing absolute directory")
    project = os.path.normpath(project)
    if not isinstance(interfaces, list):
        raise Refused(f"{path}: interfaces is not a list")
    entries = []
    for i, item in enumerate(interfaces):
        unit = _unit(item, f"{path}: interfaces[{i}]", project)
        contexts = item.get("contexts", [])
        if not isinstance(contexts, list):
            raise Refused(f"{path}: interfaces[{i}].contexts is not a list")
        entries.append(Entry(unit, [_unit(c, f"{path}: interfaces[{i}].contexts[{j}]", project) for j, c in enumerate(contexts)]))
    return Plan(uuid, project, entries)


def lock_run_dir(run_dir: str) -> int:
    """Hold the run dir for this process's life, so that two runs of it never overlap."""
    try:
        fd = os.open(run_dir, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError as exc:
        raise Refused(f"run directory {run_dir}: {exc.strerror}") from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        raise Refused(f"run directory {run_dir} is in use by another run process") from None
    return fd  # kept open (and locked) until the process ends


# -- manifest.json -----------------------------------------------------------------------------------


def _module_file(project: str, module: str) -> str | None:
    """The file importing ``module`` from the project would load, found without importing."""
    try:
        parts = check_module_name(project, module)
    except Refusal:
        return None
    path: Any = project_search_path(project)
    spec = None
    for depth in range(1, len(parts) + 1):
        if spec is not None:
            path = spec.submodule_search_locations
            if not path:
                return None
        spec = importlib.machinery.PathFinder.find_spec(".".join(parts[:depth]), list(path))
        if spec is None:
            return None
    return spec.origin if spec is not None and spec.has_location else None


def _sha256(path: str | None) -> str | None:
    if path is None:
        return None
    digest = hashlib.sha256()
    try:
        with open(path, "rb") as handle:
            for chunk in iter(lambda: handle.read(1 << 20), b""):
                digest.update(chunk)
    except OSError:
        return None
    return digest.hexdigest()


def manifest(plan: Plan) -> dict[str, Any]:
    """``manifest.json``: the interpreter, and the sha256 of every interface and context module's
    source file (null when it is not found), found without importing any of them."""
    modules: dict[str, str | None] = {}
    for entry in plan.interfaces:
        for unit in [entry.unit, *entry.contexts]:
            if unit.module not in modules:
                modules[unit.module] = _sha256(_module_file(plan.project, unit.module))
    return {
        "python": platform.python_version(),
        "executable": sys.executable,
        "platform": platform.platform(),
        "modules": modules,
    }
