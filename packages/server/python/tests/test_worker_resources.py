"""The ``resources`` op: what an interface class declares its instances need (``__resources__``),
which the gateway checks and places workers by (``portico serve --workers slurm``)."""

from __future__ import annotations

import unittest

from support import WorkerProcess, make_project

PROJECT = {
    "gpu.py": """
        from portico import Interface

        class Gpu(Interface):
            __resources__ = {"partition": "gpu", "gpus": 1, "memory": "16G"}
    """,
    "plain.py": """
        from portico import Interface

        class Plain(Interface):
            pass
    """,
    "wrong.py": """
        from portico import Interface

        class Wrong(Interface):
            __resources__ = ["gpus", 1]
    """,
}


class ResourcesTest(unittest.TestCase):
    def setUp(self) -> None:
        self.worker = WorkerProcess(make_project(self, PROJECT))
        self.addCleanup(self.worker.close)
        self.worker.wait_for(lambda f: f["op"] == "ready")

    def resources(self, module: str) -> dict:
        return self.worker.terminal(self.worker.request("resources", module=module))

    def test_declared_as_is(self) -> None:
        frame = self.resources("gpu")
        self.assertEqual((frame["op"], frame["module"], frame["resources"]), ("resources", "gpu", {"partition": "gpu", "gpus": 1, "memory": "16G"}))

    def test_none_declared_is_null(self) -> None:
        self.assertIsNone(self.resources("plain")["resources"])

    def test_not_a_dict_is_a_module_error(self) -> None:
        frame = self.resources("wrong")
        self.assertEqual((frame["op"], frame["code"]), ("error", "module_error"))
        self.assertIn("Wrong.__resources__ must be a dict", frame["message"])

    def test_an_unknown_module_is_refused(self) -> None:
        self.assertEqual(self.resources("nosuch")["code"], "module_not_found")


if __name__ == "__main__":
    unittest.main()
