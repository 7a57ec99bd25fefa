"""Portico: serve a project's Python interface classes to remote clients.

Project code only needs ``from portico import Interface``; the gateway runs
``python -m portico.worker <project dir>`` to host the classes (see worker.py).
"""

from .interface import CallCancelled, Interface

__all__ = ["CallCancelled", "Interface", "__version__"]
__version__ = "0.1.0"
