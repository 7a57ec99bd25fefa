"""Test helpers for portico.client: the real gateway (``portico serve``) on a free port, serving a
temporary copy of examples/demo plus modules a test adds."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
import urllib.error
import urllib.request

PYTHON_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if PYTHON_DIR not in sys.path:
    sys.path.insert(0, PYTHON_DIR)

SERVER_DIR = os.path.dirname(PYTHON_DIR)
REPO_DIR = os.path.dirname(os.path.dirname(SERVER_DIR))
DEMO_DIR = os.path.join(REPO_DIR, "examples", "demo")
CLI = os.path.join(SERVER_DIR, "bin", "portico.js")

#: How long the gateway may take to answer /v1/health after it was started.
START_TIMEOUT = 30.0

# The demo modules the client tests rely on: copied by name, so that new demo files being written
# meanwhile do not change what the tests see.
DEMO_MODULES = ("counter.py", "faulty.py", "slow.py", "streamer.py", "trainer.py")


def ensure_built() -> None:
    """Builds the gateway once when its compiled output is missing."""
    if not os.path.exists(os.path.join(SERVER_DIR, "dist", "cli", "main.js")):
        subprocess.run(["npm", "run", "build"], cwd=REPO_DIR, check=True, timeout=600)


#: The banner line that says where the gateway listens (it picks a free port itself: ``--port 0``).
LISTENING = re.compile(r"API\s+(http://127\.0\.0\.1:(\d+))/v1")


class GatewayProcess:
    """``node bin/portico.js serve <tmp copy of the demo> --port 0`` (``--api-token`` when given).

    The gateway picks its own free port and the banner says which: a port picked here and handed
    over could be taken meanwhile by another process of the machine (srun's own I/O ports, say).

    ``extra`` maps file names to module sources (dedented) written into the project.
    """

    def __init__(self, token: str | None = None, extra: dict[str, str] | None = None) -> None:
        ensure_built()
        self.token = token
        self.project = tempfile.mkdtemp(prefix="portico-client-test-")
        for name in DEMO_MODULES:
            shutil.copy(os.path.join(DEMO_DIR, name), os.path.join(self.project, name))
        for name, text in (extra or {}).items():
            with open(os.path.join(self.project, name), "w", encoding="utf-8") as handle:
                handle.write(textwrap.dedent(text))
        self.log_path = os.path.join(tempfile.gettempdir(), f"portico-client-test-{os.getpid()}-{id(self)}.log")
        self.port = 0
        self.url = ""
        args = ["node", CLI, "serve", self.project, "--port", "0"]
        if token:
            args += ["--api-token", token]
        env = {k: v for k, v in os.environ.items() if not k.startswith("PORTICO_")}
        self._log = open(self.log_path, "wb")
        self.process = subprocess.Popen(args, stdout=self._log, stderr=subprocess.STDOUT, env=env, cwd=self.project)
        try:
            self._wait_healthy()
        except BaseException:
            self.stop()
            raise

    def _wait_healthy(self) -> None:
        deadline = time.monotonic() + START_TIMEOUT
        headers = {"Authorization": f"Bearer {self.token}"} if self.token else {}
        while True:
            if self.process.poll() is not None:
                raise RuntimeError(f"the gateway exited with {self.process.returncode}:\n{self.output()}")
            if not self.url:
                listening = LISTENING.search(self.head())
                if listening:
                    self.url, self.port = listening.group(1), int(listening.group(2))
            try:
                if not self.url:
                    raise OSError("not listening yet")
                req = urllib.request.Request(self.url + "/v1/health", headers=headers)
                with urllib.request.urlopen(req, timeout=2) as response:
                    if json.loads(response.read()).get("status") == "ok":
                        return
            except (urllib.error.URLError, OSError, ValueError):
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"the gateway did not become healthy within {START_TIMEOUT} s:\n{self.output()}")
            time.sleep(0.1)

    def head(self) -> str:
        """The start of the gateway's output, where its banner is."""
        try:
            with open(self.log_path, "rb") as handle:
                return handle.read(16384).decode("utf-8", "replace")
        except OSError:
            return ""

    def output(self) -> str:
        try:
            with open(self.log_path, "rb") as handle:
                return handle.read().decode("utf-8", "replace")[-4000:]
        except OSError:
            return ""

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(5)
        self._log.close()
        shutil.rmtree(self.project, ignore_errors=True)
        try:
            os.unlink(self.log_path)
        except OSError:
            pass
