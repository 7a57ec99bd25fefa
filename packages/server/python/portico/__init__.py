"""Portico: serve a project's Python interface classes to remote clients.

Project code only needs ``from portico import Interface``; the gateway runs
``python -m portico.worker <project dir>`` to host the classes (see worker/) and
``python -m portico.run <run dir>`` to run an Execution of them in its own process (see run.py).
"""

from .interface import CallCancelled, ExecutionInterrupted, Interface, NotFound, ReadOnly, WidgetReply

__all__ = ["CallCancelled", "ExecutionInterrupted", "Interface", "NotFound", "ReadOnly", "WidgetReply", "__version__"]
__version__ = "0.1.0"
