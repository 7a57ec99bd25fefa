"""The project's modules: importing them, noticing changes, and describing their interface class.

Owns the ops ``resolve``, ``modules``, ``schema`` and ``invalidate``, and the caches behind them:
the interface class of each module, the file stamp it was imported from (a newer file means
import again), one import lock per module, and the outcome of listing each file.
"""

from __future__ import annotations

import concurrent.futures
import importlib
import os
import sys
import threading
import traceback
from typing import Any, Callable

from .. import _discovery, _fields, _jsonschema, _reflect
from .. import config as _config
from ..interface import Interface
from . import protocol
from .lookup import module_location, select_interface, import_project_module, inside_project, project_search_path
from .methods import method_kind, remote_method_names
from .pipe import Pipe
from .protocol import Refusal, described, invalid_config, log


class Modules:
    """One project's modules and the interface classes found in them."""

    def __init__(
        self,
        project: str,
        pipe: Pipe,
        pool: concurrent.futures.ThreadPoolExecutor,
        forget_dependents: Callable[[Callable[[str], bool]], list[str]],
    ) -> None:
        """``forget_dependents(affected)`` drops what others derived from the modules
        ``affected`` names (instances, method caches) and returns the evicted uuids."""
        self.project = project
        #: Where modules are looked up, in order (README "Process").
        self.search_path = project_search_path(project)
        self.pipe = pipe
        self.pool = pool
        self._forget_dependents = forget_dependents
        self._classes: dict[str, tuple[type[Interface], str]] = {}
        # Module name → (file, mtime_ns) when we imported it; a newer file means import again.
        self._stamps: dict[str, tuple[str, int]] = {}
        self._import_locks: dict[str, threading.Lock] = {}
        # Module file → (mtime_ns, what `modules` reports from importing it), so that listing
        # again does not import unchanged modules.
        self._listing: dict[str, tuple[int, dict[str, Any]]] = {}

    def on_resolve(self, header: dict[str, Any]) -> None:
        request_id = protocol.request_id(header)
        module = protocol.field(header, "module", str)
        version = header.get("version", [])
        # In the pool: importing and version methods run user code, which may be slow.
        self.pool.submit(self._resolve, request_id, module, version)

    def _resolve(self, request_id: Any, module: str, version: Any) -> None:
        try:
            cls, label = self.interface_class(module)
            resolved = _config.resolve(cls, version)
            if resolved.issues:
                raise invalid_config(label, resolved.issues)
            self.pipe.send(
                {
                    "op": "resolved",
                    "id": request_id,
                    "module": module,
                    "kind": cls.__name__,
                    "config": resolved.config,
                    "version": resolved.version,
                }
            )
        except Refusal as refusal:
            self.pipe.send(protocol.error_header(request_id, refusal))
        except BaseException as exc:  # a bug here must still answer the request
            log("resolve failed:\n" + "".join(traceback.format_exception(exc)).rstrip())
            self.pipe.send(protocol.error_header(request_id, Refusal("module_error", f"Resolving {module!r} failed: {described(exc)}")))

    def on_invalidate(self, header: dict[str, Any]) -> None:
        request_id = protocol.request_id(header)
        modules = protocol.field(header, "modules", list)
        if not all(isinstance(name, str) and name for name in modules):
            raise Refusal("bad_request", "invalidate: field 'modules' must be a list of module names")
        # In the pool: it waits for imports of these modules in progress (user code) to finish.
        self.pool.submit(self._invalidate, request_id, modules)

    def _invalidate(self, request_id: Any, modules: list[str]) -> None:
        try:
            evicted, dropped = self.invalidate(modules)
            self.pipe.send({"op": "invalidated", "id": request_id, "evicted": evicted, "dropped": dropped})
        except BaseException as exc:  # a bug here must still answer the request
            log("invalidate failed:\n" + "".join(traceback.format_exception(exc)).rstrip())
            self.pipe.send(protocol.error_header(request_id, Refusal("module_error", f"Invalidating {modules!r} failed: {described(exc)}")))

    def invalidate(self, modules: list[str]) -> tuple[list[str], list[str]]:
        """Forget ``modules`` and everything below them (``pkg`` takes ``pkg.sub`` along), after
        their source changed: the project's entries in ``sys.modules``, the cached interface
        classes, import stamps, listing and method caches, and the live instances of their
        classes. Returns ``(evicted uuids, dropped sys.modules names)``, both sorted.

        The next lookup imports the module afresh from disk; the next call on an evicted uuid
        creates a new instance (requests carry module and config). Calls running on an evicted
        instance finish on it. Modules that merely import a dropped one keep their reference.
        """

        def affected(name: str) -> bool:
            return any(name == module or name.startswith(module + ".") for module in modules)

        names = sorted({name for name in list(self._import_locks) if affected(name)} | set(modules))
        # Holding each module's import lock lets an import in progress finish first; otherwise it
        # could cache the class it is building after we cleared the cache.
        locks = [self._import_locks.setdefault(name, threading.Lock()) for name in names]
        for lock in locks:
            lock.acquire()
        try:
            for cache in (self._classes, self._stamps):
                for name in [name for name in list(cache) if affected(name)]:
                    cache.pop(name, None)
            dropped = []
            for name, loaded in list(sys.modules.items()):
                if affected(name) and self._inside_project(module_location(loaded)):
                    sys.modules.pop(name, None)
                    dropped.append(name)
            for path, (_mtime, entry) in list(self._listing.items()):
                if affected(entry["module"]):
                    self._listing.pop(path, None)
            evicted = self._forget_dependents(affected)
            importlib.invalidate_caches()  # the finders' directory listings (a file moved or appeared)
        finally:
            for lock in locks:
                lock.release()
        return sorted(evicted), sorted(dropped)

    def _inside_project(self, path: str | None) -> bool:
        return inside_project(self.project, path)

    def _import(self, module: str) -> Any:
        imported = import_project_module(self.project, module, self.search_path)
        stamp = _stamp(getattr(imported, "__file__", None))
        if stamp is not None:
            self._stamps[module] = stamp
        return imported

    def _unchanged(self, module: str) -> bool:
        """Whether ``module``'s file is still the one we imported (True if we never did)."""
        stamp = self._stamps.get(module)
        return stamp is None or _stamp(stamp[0]) == stamp

    def outdated(self, cls: type) -> bool:
        """Whether ``cls`` comes from an older import of its module: the module was imported
        again since (another class is cached for it), or its file changed since it was imported."""
        module = cls.__module__
        cached = self._classes.get(module)
        return (cached is not None and cached[0] is not cls) or not self._unchanged(module)

    def interface_class(self, module: str) -> tuple[type[Interface], str]:
        """The interface class of ``module`` and its label ``module.Class`` (cached).

        When the module's file changed since it was imported, the module is imported afresh
        (a new module object) and its new class is used from then on: by ``resolve``,
        ``schema``, ``modules`` and instances created later. Instances that exist keep their
        class. Only the module's own file is watched, not the modules it imports.
        """
        cached = self._classes.get(module)
        if cached is not None and self._unchanged(module):
            return cached
        # One lock per module, so that two requests never both drop and re-import a changed module;
        # a slow import still holds up no other module.
        with self._import_locks.setdefault(module, threading.Lock()):
            if not self._unchanged(module):
                self._forget(module)
            cached = self._classes.get(module)
            if cached is None:
                cls = select_interface(module, self._import(module))
                cached = self._classes[module] = (cls, f"{module}.{cls.__name__}")
            return cached

    def _forget(self, module: str) -> None:
        stamp = self._stamps.pop(module, None)
        self._classes.pop(module, None)
        loaded = sys.modules.get(module)
        if stamp is not None and loaded is not None and getattr(loaded, "__file__", None) == stamp[0]:
            del sys.modules[module]
        importlib.invalidate_caches()

    def on_modules(self, header: dict[str, Any]) -> None:
        request_id = protocol.request_id(header)
        self.pool.submit(self._modules, request_id)  # importing runs user code

    def _modules(self, request_id: Any) -> None:
        try:
            listing: dict[str, tuple[int, dict[str, Any]]] = {}
            entries = []
            for module, path in _discovery.find_modules(self.project):
                try:
                    mtime = os.stat(path).st_mtime_ns
                except OSError:  # removed while we walked
                    continue
                cached = self._listing.get(path)
                # A cached failure is stale once the module loaded (e.g. `resolve` after a broken
                # dependency was fixed); asking again then costs no import.
                if cached is not None and cached[0] == mtime and not (cached[1]["error"] and module in self._classes):
                    imported = cached[1]
                else:
                    imported = self._import_for_listing(module)
                listing[path] = (mtime, imported)
                entry = {key: value for key, value in imported.items() if key != "esm"}
                # The sibling file is looked for every time: adding one changes no module's mtime.
                entry["widget"] = imported["kind"] is not None and (imported["esm"] or _reflect.has_sibling(path, "esm"))
                entries.append(entry)
            self._listing = listing
            self.pipe.send({"op": "modules", "id": request_id, "modules": entries})
        except BaseException as exc:  # a bug here must still answer the request
            log("modules failed:\n" + "".join(traceback.format_exception(exc)).rstrip())
            self.pipe.send(protocol.error_header(request_id, Refusal("module_error", f"Listing modules failed: {described(exc)}")))

    def _import_for_listing(self, module: str) -> dict[str, Any]:
        """What importing ``module`` tells ``modules``: ``{module, kind, doc, error, esm}``."""
        try:
            cls, _ = self.interface_class(module)
        except Refusal as refusal:
            return {"module": module, "kind": None, "doc": self._loaded_doc(module), "error": _one_line(refusal.message), "esm": False}
        except BaseException as exc:
            log(f"listing {module!r} failed:\n" + "".join(traceback.format_exception(exc)).rstrip())
            return {"module": module, "kind": None, "doc": None, "error": _one_line(f"Module {module!r}: {described(exc)}"), "esm": False}
        doc = _reflect.own_doc(cls) or self._loaded_doc(module)
        esm = _reflect.declared_asset(cls, "esm") is not None
        return {"module": module, "kind": cls.__name__, "doc": doc, "error": None, "esm": esm}

    def _loaded_doc(self, module: str) -> str | None:
        """The docstring of ``module`` when it is imported (from the project)."""
        loaded = sys.modules.get(module)
        return _reflect.module_doc(loaded) if loaded is not None and self._inside_project(getattr(loaded, "__file__", None)) else None

    def on_resources(self, header: dict[str, Any]) -> None:
        request_id = protocol.request_id(header)
        module = protocol.field(header, "module", str)
        self.pool.submit(self._resources, request_id, module)  # importing runs user code

    def _resources(self, request_id: Any, module: str) -> None:
        """What the module's interface class says its instances need (``__resources__``; None: nothing)."""
        try:
            cls, label = self.interface_class(module)
            declared = getattr(cls, "__resources__", None)
            if declared is not None and not isinstance(declared, dict):
                raise Refusal("module_error", f"{label}.__resources__ must be a dict with the keys of a dispatch's resources, not {type(declared).__name__}")
            self.pipe.send({"op": "resources", "id": request_id, "module": module, "resources": declared})
        except Refusal as refusal:
            self.pipe.send(protocol.error_header(request_id, refusal))
        except BaseException as exc:  # a bug here, or values JSON cannot carry, must still answer the request
            log("resources failed:\n" + "".join(traceback.format_exception(exc)).rstrip())
            self.pipe.send(protocol.error_header(request_id, Refusal("module_error", f"Reading the __resources__ of {module!r} failed: {described(exc)}")))

    def on_schema(self, header: dict[str, Any]) -> None:
        request_id = protocol.request_id(header)
        module = protocol.field(header, "module", str)
        self.pool.submit(self._schema, request_id, module)  # importing runs user code

    def _schema(self, request_id: Any, module: str) -> None:
        try:
            cls, _ = self.interface_class(module)
            source_file, source_line = _reflect.source_location(cls, self.project)
            header = {
                "op": "schema",
                "id": request_id,
                "module": module,
                "kind": cls.__name__,
                "doc": _reflect.own_doc(cls),
                "config_schema": _jsonschema.config_schema(getattr(cls, "Config", None)),
                "config_fields": _fields.config_fields(getattr(cls, "Config", None)),
                "version_methods": _reflect.version_methods(cls),
                "methods": [self._describe_method(cls, name) for name in remote_method_names(cls)],
                "runnable": _reflect.defines(cls, "__call__"),
                "widget": _reflect.widget_info(cls, getattr(sys.modules.get(module), "__file__", None)),
                "source_file": source_file,
                "source_line": source_line,
            }
            self.pipe.send(header)
        except Refusal as refusal:
            self.pipe.send(protocol.error_header(request_id, refusal))
        except BaseException as exc:  # a bug here must still answer the request
            log("schema failed:\n" + "".join(traceback.format_exception(exc)).rstrip())
            self.pipe.send(protocol.error_header(request_id, Refusal("module_error", f"Describing {module!r} failed: {described(exc)}")))

    @staticmethod
    def _describe_method(cls: type, name: str) -> dict[str, Any]:
        return {**_reflect.describe_callable(cls, name, returns=True), "kind": method_kind(getattr(cls, name))}


def _stamp(path: str | None) -> tuple[str, int] | None:
    """``(path, mtime_ns)`` of a module file, or None (no file, or it is gone)."""
    if not path:
        return None
    try:
        return path, os.stat(path).st_mtime_ns
    except OSError:
        return None


def _one_line(message: str) -> str:
    lines = message.strip().splitlines()
    return lines[0] if lines else message
