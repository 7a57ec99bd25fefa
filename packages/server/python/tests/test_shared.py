"""``portico/shared.json``: what the gateway and this package both need, written once.

The bounds both sides enforce and the run-folder format are read from that one file, never
repeated: a copy of the package with a different ``shared.json`` runs with the copy's values
(the gateway reads the same file: test/run-folder.test.ts).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest
import uuid as uuidlib
from typing import Any

from support import PYTHON_DIR, TIMEOUT, make_project

from portico import run_folder, shared


def _env(python_dir: str) -> dict[str, str]:
    return dict(os.environ, PYTHONPATH=python_dir, PYTHONUNBUFFERED="1", PYTHONSAFEPATH="1", PYTHONDONTWRITEBYTECODE="1")


class SharedSpecTest(unittest.TestCase):
    def package_with(self, change: Any) -> str:
        """A copy of the Python package whose shared.json ``change`` edited; its folder for PYTHONPATH."""
        root = tempfile.mkdtemp(prefix="portico-shared-")
        self.addCleanup(shutil.rmtree, root, True)
        shutil.copytree(os.path.join(PYTHON_DIR, "portico"), os.path.join(root, "portico"), ignore=shutil.ignore_patterns("__pycache__"))
        path = os.path.join(root, "portico", "shared.json")
        with open(path, encoding="utf-8") as handle:
            spec = json.load(handle)
        change(spec)
        with open(path, "w", encoding="utf-8") as handle:
            json.dump(spec, handle)
        return root

    def test_the_bounds_both_sides_enforce_come_from_shared_json(self) -> None:
        def change(spec: dict[str, Any]) -> None:
            for name, value in {"stream_window": 7, "read_block_bytes": 4096, "display_max_bytes": 1000, "output_window_max_bytes": 999, "run_heartbeat_seconds": 5}.items():
                spec["limits"][name]["value"] = value

        script = (
            "import json\n"
            "from portico._display import DISPLAY_MAX_BYTES\n"
            "from portico.client.execution import FOLLOW_WINDOW\n"
            "from portico.run_watch import HEARTBEAT_SECONDS\n"
            "from portico.worker.call import STREAM_WINDOW\n"
            "from portico.worker.reads import READ_BLOCK_DEFAULT\n"
            "print(json.dumps([STREAM_WINDOW, READ_BLOCK_DEFAULT, DISPLAY_MAX_BYTES, FOLLOW_WINDOW, HEARTBEAT_SECONDS]))\n"
        )
        out = subprocess.run([sys.executable, "-c", script], env=_env(self.package_with(change)), capture_output=True, text=True, timeout=TIMEOUT, check=True)
        self.assertEqual(json.loads(out.stdout), [7, 4096, 1000, 999, 5.0])

    def test_a_run_writes_the_files_shared_json_names_in_its_time_format(self) -> None:
        def change(spec: dict[str, Any]) -> None:
            spec["run_folder"]["files"]["finished_at"]["name"] = "ended_at"
            spec["run_folder"]["files"]["status"]["name"] = "outcome.json"

        python_dir = self.package_with(change)
        project = make_project(self, {"steps.py": "from portico import Interface\n\nclass Steps(Interface):\n    def __call__(self):\n        pass\n"})
        run_uuid, interface_uuid = uuidlib.uuid4().hex[:24], uuidlib.uuid4().hex[:24]
        run_dir = os.path.join(project, ".portico", "executions", run_uuid)
        os.makedirs(run_dir)
        with open(os.path.join(run_dir, "execution.json"), "w", encoding="utf-8") as handle:
            json.dump({"uuid": run_uuid, "project": project, "interfaces": [{"uuid": interface_uuid, "module": "steps", "config": {}}]}, handle)
        done = subprocess.run([sys.executable, "-m", "portico.run", run_dir], cwd=project, env=_env(python_dir), capture_output=True, timeout=TIMEOUT)
        self.assertEqual(done.returncode, 0, done.stderr)

        names = set(os.listdir(run_dir))
        self.assertIn("ended_at", names)
        self.assertIn("outcome.json", names)
        self.assertNotIn("finished_at", names)
        self.assertNotIn("status.json", names)
        with open(os.path.join(run_dir, "ended_at"), encoding="utf-8") as handle:
            self.assertRegex(handle.read(), run_folder.TIME_PATTERN)
        with open(os.path.join(run_dir, "outcome.json"), encoding="utf-8") as handle:
            self.assertEqual(json.loads(handle.read()), {"status": "finished", "error": None, "interfaces": [{"uuid": interface_uuid, "status": "finished"}]})

    def test_the_reader_takes_every_file_but_the_text_ones(self) -> None:
        kinds = {key: item["kind"] for key, item in shared.RUN_FOLDER["files"].items()}
        project = make_project(self, {})
        view = run_folder.read_run_folder(project)  # an empty folder: nothing written yet
        self.assertEqual(set(view), {key for key, kind in kinds.items() if kind != "text"})
        self.assertEqual({key: value for key, value in view.items() if kinds[key] == "marker"}, {"cancelled": False})
        self.assertEqual(view["events"], [])
        self.assertTrue(all(value is None for key, value in view.items() if kinds[key] in ("json", "time")))


if __name__ == "__main__":
    unittest.main()
