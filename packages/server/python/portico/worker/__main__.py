"""``python -m portico.worker [--connect HOST:PORT] <project dir>``: how the gateway starts a worker
(kernel/worker.ts); with ``--connect``, one placed away from it that connects back (connect.py).

Owns the process around the worker: checking the arguments and the pipes, putting the project
first on ``sys.path``, and leaving without interpreter shutdown (threads may be stuck in user code),
after writing the widget state saves still pending (bounded, ``widget_state.EXIT_FLUSH_SECONDS``),
as soon as serving ended, whichever thread met its end.
"""

from __future__ import annotations

import os
import sys
import threading
import traceback

from .._frames import FrameReader
from .dispatch import Worker
from . import output
from .connect import connect_back
from .lookup import use_project_path
from .pipe import EXIT_FLUSH_SECONDS, READ_BUFFER_BYTES, REPLY_FD, REQUEST_FD, exit_now, widen_pipe
from .protocol import log
from .widget_state import EXIT_FLUSH_SECONDS as STATE_FLUSH_SECONDS


def _prepare(project: str) -> None:
    use_project_path(project)
    os.chdir(project)
    for fd in (REQUEST_FD, REPLY_FD):
        os.set_inheritable(fd, False)  # processes started by user code must not hold our pipes open
    try:
        sys.stdout.reconfigure(line_buffering=True)  # type: ignore[union-attr]  # prints reach the log promptly
    except (AttributeError, ValueError):
        pass


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    connect = None
    if len(args) == 3 and args[0] == "--connect":
        connect, args = args[1], args[2:]
    if len(args) != 1:
        log("usage: python -m portico.worker [--connect HOST:PORT] <project dir>")
        return 2
    project = os.path.abspath(args[0])
    if not os.path.isdir(project):
        log(f"project directory {project} does not exist")
        return 2
    if connect is not None and connect_back(connect) != 0:
        return 2
    try:
        os.fstat(REQUEST_FD)
        os.fstat(REPLY_FD)
    except OSError:
        log(f"fd {REQUEST_FD} and fd {REPLY_FD} must be the gateway's pipes")
        return 2
    # The gateway made the reply socket itself (kernel/reply-channel.ts) and its end was
    # non-blocking there; every write here expects to block until the gateway reads.
    os.set_blocking(REPLY_FD, True)
    widen_pipe(REPLY_FD)
    _prepare(project)
    worker = Worker(project)
    output.install(worker.pipe.writer)  # a call's prints go to its caller from here on

    def leave(status: int) -> None:
        # EOF on fd 3, shutdown or a failure: the last widget changes reach their files first (a
        # crash, os._exit elsewhere, may lose them; the file then holds the state before, never a
        # torn one).
        if not worker.widget_states.flush(STATE_FLUSH_SECONDS):
            log(f"widget state saves still pending after {STATE_FLUSH_SECONDS} s were left unwritten")
        worker.pipe.writer.flush(EXIT_FLUSH_SECONDS)
        exit_now(status)

    # Serving can end while this thread is inside a call it read itself (a gateway killed during
    # a long call: another thread took over the reading and met the EOF). No answer can reach
    # anyone any more, so the worker leaves from there rather than when the call ends.
    threading.Thread(target=lambda: leave(worker.pipe.ended()), name="portico-leave", daemon=True).start()
    try:
        status = worker.serve(FrameReader(REQUEST_FD, READ_BUFFER_BYTES))
    except BaseException as exc:
        log("worker failed:\n" + "".join(traceback.format_exception(exc)).rstrip())
        status = 1
    leave(status)
    return status  # not reached: exit_now ends the process


if __name__ == "__main__":
    sys.exit(main())
