"""The kernel bridge worker: ``python -m portico.worker <project dir>`` (see ``__main__.py``).

Speaks the protocol of packages/server/src/kernel/README.md with the gateway over fd 3 / fd 4.
``dispatch.Worker`` wires the parts together; README.md in the folder above maps which file
owns which frames. stdout and stderr belong to user code and to our diagnostics; they never
carry protocol.

The names below are what ``run.py`` (an execution's own process) shares with the worker:
module lookup and instance creation.
"""

from .dispatch import Worker
from .instances import create_instance
from .lookup import check_module_name, import_project_module, project_search_path, select_interface, use_project_path
from .protocol import Refusal

__all__ = [
    "Refusal",
    "Worker",
    "check_module_name",
    "create_instance",
    "import_project_module",
    "project_search_path",
    "select_interface",
    "use_project_path",
]
