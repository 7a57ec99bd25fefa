"""Finding a project's modules and their interface class; shared with ``run.py``.

A module is looked up in the project directory, then in ``<project>/.portico/remotes`` (modules
the gateway fetched), and nowhere else: ``os`` or ``json`` are ``module_not_found``.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import os
import sys
import traceback
from typing import Any, Callable

from ..interface import Interface
from .protocol import Refusal, described, log

#: Where fetched remote modules live, relative to the project; searched after the project.
REMOTES_DIR = os.path.join(".portico", "remotes")


def module_location(module: Any) -> str | None:
    """The file of a loaded module, or the first folder of a namespace package."""
    location = getattr(module, "__file__", None)
    if location:
        return location
    try:
        return next(iter(getattr(module, "__path__", None) or []), None)
    except TypeError:
        return None


def select_interface(module: str, imported: Any) -> type[Interface]:
    chosen = getattr(imported, "__interface__", None)
    if chosen is not None:
        cls = getattr(imported, chosen, None) if isinstance(chosen, str) else chosen
        if isinstance(cls, type) and issubclass(cls, Interface) and cls is not Interface:
            return cls
        raise Refusal("module_error", f"Module {module!r} sets __interface__ = {chosen!r}, which is not an Interface subclass in it")
    found: list[type[Interface]] = []
    for value in vars(imported).values():
        # Only classes defined here: an imported base or sibling interface is not this module's.
        if (
            isinstance(value, type)
            and issubclass(value, Interface)
            and value is not Interface
            and value.__module__ == imported.__name__
            and value not in found
        ):
            found.append(value)
    if not found:
        raise Refusal("module_error", f"Module {module!r} defines no Interface subclass")
    if len(found) > 1:
        names = ", ".join(cls.__name__ for cls in found)
        raise Refusal(
            "module_error", f"Module {module!r} defines several Interface subclasses ({names}); set __interface__ = \"Name\" to pick one"
        )
    return found[0]


def project_search_path(project: str) -> list[str]:
    """Where ``project``'s modules are looked up, in order: the project, then its fetched remotes."""
    return [project, os.path.join(project, REMOTES_DIR)]


def inside_project(project: str, path: str | None) -> bool:
    """Whether ``path`` lies in the directory ``project`` (an absolute path)."""
    if not path:
        return False
    path = os.path.abspath(path)
    try:
        return os.path.commonpath([path, project]) == project
    except ValueError:  # different drives
        return False


def check_module_name(project: str, module: str) -> list[str]:
    """The parts of the dotted name ``module``; refuses what cannot name a project module."""
    parts = module.split(".")
    if not module or not all(part.isidentifier() and not part.startswith("__") for part in parts):
        raise Refusal("module_not_found", f"Module {module!r} not found in project {project}: not a dotted module name")
    return parts


def import_project_module(
    project: str, module: str, search_path: list[str] | None = None, report: Callable[[str], None] = log
) -> Any:
    """Import ``module`` from ``project`` (or its fetched remotes) and nowhere else.

    Raises ``Refusal``: ``module_not_found``, or ``module_error`` when importing raised (the
    traceback goes to ``report``) or the name resolves to a module outside the project.
    """
    search_path = project_search_path(project) if search_path is None else search_path
    parts = check_module_name(project, module)
    # Search only the project directory and its fetched remotes for the top-level name, so
    # that a request can never import (and run) a stdlib or installed module: "os" or "json"
    # are simply not found. sys.path starts with the same two directories (see _prepare).
    finder = importlib.machinery.PathFinder
    if finder.find_spec(parts[0], search_path) is None:
        importlib.invalidate_caches()  # the file may have been created after start-up
        if finder.find_spec(parts[0], search_path) is None:
            raise Refusal("module_not_found", f"Module {module!r} not found in project {project}")
    try:
        imported = importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name and (module == exc.name or module.startswith(exc.name + ".")):
            raise Refusal("module_not_found", f"Module {module!r} not found in project {project}") from None
        raise _import_failed(module, exc, report) from None
    except BaseException as exc:
        raise _import_failed(module, exc, report) from None
    # The project's module may be shadowed by one imported earlier from elsewhere
    # (a project `json.py` versus the stdlib json the worker already uses).
    for depth in range(1, len(parts) + 1):
        name = ".".join(parts[:depth])
        loaded = sys.modules.get(name)
        location = module_location(loaded)
        if not inside_project(project, location):
            raise Refusal(
                "module_error",
                f"Module {name!r} resolves to {location or 'a built-in module'}, outside project {project} "
                "(a module of that name was imported before); rename the project module",
            )
    return imported


def _import_failed(module: str, exc: BaseException, report: Callable[[str], None]) -> Refusal:
    report(f"module {module!r} failed to import:\n" + "".join(traceback.format_exception(exc)).rstrip())
    return Refusal("module_error", f"Module {module!r} failed to import: {described(exc)}", exception=type(exc).__name__)


def use_project_path(project: str) -> None:
    """Put ``project`` and its fetched remotes first on sys.path, in place of the launch directory."""
    launch_dir = os.getcwd()
    # `python -m` put the launch directory first; the project takes its place, followed by its
    # fetched remotes, so project code imports a remote like its own module (README "Process").
    if sys.path and sys.path[0] in ("", launch_dir):
        sys.path.pop(0)
    first = project_search_path(project)
    sys.path[:] = first + [entry for entry in sys.path if os.path.abspath(entry or ".") not in first]

