"""Runs a command on a pseudo-terminal of its own, as a terminal does, for the Ctrl+C tests.

    python3 pty-run.py COMMAND [ARG...]

The command is the session leader of a new pty and its foreground process group, as a shell
started in a terminal makes it. What it writes to the terminal comes out on stdout. A line
``ctrl-c`` on stdin types Ctrl+C on the terminal (the byte 0x03): the line discipline sends
SIGINT to the whole foreground process group, as a person pressing Ctrl+C does. Exits with the
command's status (128 + N when a signal N ended it).
"""

import os
import pty
import select
import sys


def main() -> int:
    pid, fd = pty.fork()
    if pid == 0:
        os.execvp(sys.argv[1], sys.argv[1:])
    stdin = sys.stdin.fileno()
    watched = [fd, stdin]
    while True:
        ready, _, _ = select.select(watched, [], [])
        if fd in ready:
            try:
                data = os.read(fd, 65536)
            except OSError:  # EIO: the command and everything on the terminal closed it
                data = b""
            if not data:
                break
            os.write(1, data)
        if stdin in ready:
            line = sys.stdin.readline()
            if not line:
                watched.remove(stdin)  # the test closed its end: keep relaying
            elif line.strip() == "ctrl-c":
                os.write(fd, b"\x03")
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else 128 + os.WTERMSIG(status)


if __name__ == "__main__":
    sys.exit(main())
