"""Finding a project's own modules (the files the ``modules`` op lists); nothing is imported here.

A module is a ``*.py`` file, or a package ``dir/__init__.py`` (module ``dir``), named by its path
relative to the project with dots. Left out:

- names that cannot be imported: a path part that is not an identifier (``my-script.py``,
  ``data-2024/``) or that starts with ``_`` (private: ``_helpers.py``, ``_internal/``; a
  package's own ``__init__.py`` still names the package);
- hidden files and directories (``.git``, ``.portico`` and so ``.portico/remotes``, ``.venv``),
  ``__pycache__``, ``node_modules``, ``site-packages``, ``dist-packages``, and environments: a
  directory named ``venv`` or holding ``pyvenv.cfg`` (virtualenv) or ``conda-meta`` (conda).

Symlinked directories are not followed. When ``x.py`` and a package ``x/`` both exist, the
package wins, as it does for ``import x``.
"""

from __future__ import annotations

import os

__all__ = ["SKIPPED_DIRS", "ENVIRONMENT_MARKERS", "find_modules"]

SKIPPED_DIRS = frozenset({"__pycache__", "node_modules", "site-packages", "dist-packages", "venv"})
#: A directory holding one of these is a Python environment, not project source.
ENVIRONMENT_MARKERS = ("pyvenv.cfg", "conda-meta")


def _importable(part: str) -> bool:
    return part.isidentifier() and not part.startswith("_")


def _walk_into(parent: str, name: str) -> bool:
    if name.startswith(".") or name in SKIPPED_DIRS or not _importable(name):
        return False
    path = os.path.join(parent, name)
    return not any(os.path.exists(os.path.join(path, marker)) for marker in ENVIRONMENT_MARKERS)


def find_modules(project: str) -> list[tuple[str, str]]:
    """``[(module, absolute file path)]`` of the project's modules, sorted by module."""
    files: dict[str, str] = {}
    packages: dict[str, str] = {}
    for root, dirs, names in os.walk(project):  # followlinks=False: a link cannot leave the project
        dirs[:] = [name for name in dirs if _walk_into(root, name)]
        relative = os.path.relpath(root, project)
        prefix = [] if relative == os.curdir else relative.split(os.sep)
        for name in names:
            if not name.endswith(".py"):
                continue
            path = os.path.join(root, name)
            if name == "__init__.py":
                if prefix:  # the project directory's own __init__.py names no module
                    packages[".".join(prefix)] = path
            elif _importable(name[: -len(".py")]):
                files[".".join(prefix + [name[: -len(".py")]])] = path
    files.update(packages)
    return sorted(files.items())
