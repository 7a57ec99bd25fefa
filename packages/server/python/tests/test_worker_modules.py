"""Worker: the `modules` op (discovery, entries, caching by mtime) and remote modules fetched into
`.portico/remotes/`."""

from __future__ import annotations

import os
import unittest

from support import TIMEOUT, WorkerProcess, WorkerTestCase, make_project, write_files

INTERFACE = """
    from portico import Interface

    class {name}(Interface):
        def ping(self):
            return "{name}"
"""

FILES = {
    "alpha.py": """
        \"\"\"Module alpha.\"\"\"
        from portico import Interface

        class Alpha(Interface):
            \"\"\"Alpha's own docstring.\"\"\"
    """,
    "beta.py": """
        \"\"\"Module beta's docstring.\"\"\"
        from portico import Interface

        class Beta(Interface):
            pass
    """,
    "gamma.py": INTERFACE.format(name="Gamma"),
    "pkg/__init__.py": INTERFACE.format(name="Pkg"),
    "pkg/inner.py": INTERFACE.format(name="Inner"),
    "ns/deep.py": INTERFACE.format(name="Deep"),  # a namespace package: `ns` itself is no module
    "helpers.py": "VALUE = 1\n",
    "two.py": """
        from portico import Interface

        class A(Interface):
            pass

        class B(Interface):
            pass
    """,
    "broken.py": "from portico import Interface\n\nclass Broken(Interface)\n",
    "raises.py": "raise RuntimeError('first line\\nsecond line')\n",
    "drawn.py": """
        from portico import Interface

        class Drawn(Interface):
            _esm = "export default {}"
    """,
    "sib.py": INTERFACE.format(name="Sib"),
    "sib.widget.js": "export default {};\n",
    "wpkg/__init__.py": INTERFACE.format(name="WPkg"),
    "wpkg/__init__.widget.js": "export default {};\n",
    "plain_js.py": "VALUE = 2\n",  # a sibling widget file does not make a module without a class a widget
    "plain_js.widget.js": "export default {};\n",
    # Never listed:
    "_private.py": INTERFACE.format(name="Private"),
    "my-script.py": INTERFACE.format(name="Script"),
    "data-2024/x.py": INTERFACE.format(name="X"),
    "_internal/y.py": INTERFACE.format(name="Y"),
    ".hidden/h.py": INTERFACE.format(name="H"),
    ".hidden.py": INTERFACE.format(name="Hidden"),
    ".portico/remotes/remote.py": INTERFACE.format(name="Remote"),
    "__pycache__/c.py": INTERFACE.format(name="C"),
    "node_modules/n.py": INTERFACE.format(name="N"),
    "venv/lib/v.py": INTERFACE.format(name="V"),
    "myenv/pyvenv.cfg": "home = /usr/bin\n",
    "myenv/lib/python3.11/site-packages/installed.py": INTERFACE.format(name="Installed"),
    "condaenv/conda-meta/history": "",
    "condaenv/lib/c.py": INTERFACE.format(name="Conda"),
    "site-packages/sp.py": INTERFACE.format(name="Sp"),
    "notes.txt": "not python\n",
}

LISTED = [
    "alpha", "beta", "broken", "drawn", "gamma", "helpers", "ns.deep", "pkg", "pkg.inner",
    "plain_js", "raises", "sib", "two", "wpkg",
]  # fmt: skip


class WorkerModulesTest(WorkerTestCase):
    FILES = FILES
    maxDiff = None

    def modules(self, worker: WorkerProcess | None = None) -> list[dict]:
        worker = worker or self.worker
        frame = worker.terminal(worker.request("modules"))
        self.assertEqual(frame["op"], "modules", frame)
        self.assertEqual(set(frame), {"op", "id", "modules"})
        return frame["modules"]

    def by_module(self) -> dict[str, dict]:
        return {entry["module"]: entry for entry in self.modules()}

    def test_lists_project_modules_sorted_and_skips_the_rest(self) -> None:
        self.assertEqual([entry["module"] for entry in self.modules()], LISTED)

    def test_entry_shape(self) -> None:
        for entry in self.modules():
            with self.subTest(module=entry["module"]):
                self.assertEqual(set(entry), {"module", "kind", "doc", "widget", "error"})

    def test_kind_and_doc(self) -> None:
        entries = self.by_module()
        self.assertEqual(entries["alpha"], {"module": "alpha", "kind": "Alpha", "doc": "Alpha's own docstring.", "widget": False, "error": None})
        # No class docstring: the module's; neither: null (never Interface's docstring).
        self.assertEqual((entries["beta"]["kind"], entries["beta"]["doc"]), ("Beta", "Module beta's docstring."))
        self.assertEqual((entries["gamma"]["kind"], entries["gamma"]["doc"]), ("Gamma", None))
        self.assertEqual((entries["pkg"]["kind"], entries["pkg.inner"]["kind"], entries["ns.deep"]["kind"]), ("Pkg", "Inner", "Deep"))

    def test_broken_modules_are_listed_with_their_error(self) -> None:
        entries = self.by_module()
        self.assertEqual(
            entries["broken"],
            {
                "module": "broken",
                "kind": None,
                "doc": None,
                "widget": False,
                "error": "Module 'broken' failed to import: SyntaxError: expected ':' (broken.py, line 3)",
            },
        )
        self.assertEqual(entries["raises"]["error"], "Module 'raises' failed to import: RuntimeError: first line")  # one line
        self.assertEqual(entries["helpers"]["error"], "Module 'helpers' defines no Interface subclass")
        self.assertIn("several Interface subclasses (A, B)", entries["two"]["error"])
        self.assertEqual(entries["two"]["kind"], None)

    def test_widget_by_esm_or_sibling_file(self) -> None:
        entries = self.by_module()
        widgets = sorted(module for module, entry in entries.items() if entry["widget"])
        self.assertEqual(widgets, ["drawn", "sib", "wpkg"])

    def test_a_sibling_widget_file_added_later_is_seen(self) -> None:
        self.assertFalse(self.by_module()["gamma"]["widget"])
        path = os.path.join(self.project, "gamma.widget.js")
        write_files(self.project, {"gamma.widget.js": "export default {};\n"})
        try:
            self.assertTrue(self.by_module()["gamma"]["widget"])
        finally:
            os.remove(path)
        self.assertFalse(self.by_module()["gamma"]["widget"])

    def test_listed_modules_resolve(self) -> None:
        self.modules()
        frame = self.worker.terminal(self.worker.request("resolve", module="pkg.inner", version=[]))
        self.assertEqual((frame["op"], frame["kind"]), ("resolved", "Inner"))


EFFECT = """
    \"\"\"{doc}\"\"\"
    with open("imports.log", "a") as log:
        log.write("imported\\n")

    from portico import Interface

    class Effect(Interface):
        def ping(self):
            return "{doc}"
"""


class WorkerModulesCacheTest(unittest.TestCase):
    def setUp(self) -> None:
        self.project = make_project(self, {"effect.py": EFFECT.format(doc="first"), "broken.py": "raise ValueError('x')\n"})
        self.worker = WorkerProcess(self.project)
        self.addCleanup(self.worker.close)
        self.worker.wait_for(lambda f: f["op"] == "ready")

    def imports(self) -> int:
        with open(os.path.join(self.project, "imports.log")) as log:
            return len(log.readlines())

    def modules(self) -> dict[str, dict]:
        frame = self.worker.terminal(self.worker.request("modules"), TIMEOUT)
        return {entry["module"]: entry for entry in frame["modules"]}

    def bump(self, name: str, text: str | None = None) -> None:
        path = os.path.join(self.project, name)
        if text is not None:
            write_files(self.project, {name: text})
        stat = os.stat(path)
        os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 5_000_000_000))

    def test_unchanged_modules_are_imported_once(self) -> None:
        self.assertEqual(self.modules()["effect"]["doc"], "first")
        self.assertEqual(self.modules()["effect"]["doc"], "first")
        self.assertEqual(self.imports(), 1)
        self.worker.wait_output(b"ValueError", stream="stderr")
        self.assertEqual(self.worker.stderr.count(b"module 'broken' failed to import"), 1)  # failures are cached too

    def test_a_changed_module_is_imported_again_and_served_new(self) -> None:
        self.modules()
        self.bump("effect.py")  # same text, new mtime
        self.modules()
        self.assertEqual(self.imports(), 2)
        self.bump("effect.py", EFFECT.format(doc="second"))
        self.assertEqual(self.modules()["effect"]["doc"], "second")
        self.assertEqual(self.imports(), 3)
        # The worker serves the new class from then on.
        self.assertEqual(self.worker.result(self.worker.call("ping", module="effect", uuid="new")), "second")
        self.modules()
        self.assertEqual(self.imports(), 3)

    def test_resolve_then_modules_share_the_import(self) -> None:
        frame = self.worker.terminal(self.worker.request("resolve", module="effect", version=[]))
        self.assertEqual(frame["op"], "resolved")
        self.modules()
        self.assertEqual(self.imports(), 1)

    def test_a_fixed_module_is_listed_without_error(self) -> None:
        self.assertIn("ValueError", self.modules()["broken"]["error"])
        self.bump("broken.py", INTERFACE.format(name="Fixed"))
        entry = self.modules()["broken"]
        self.assertEqual((entry["kind"], entry["error"]), ("Fixed", None))


class WorkerRemotesTest(WorkerTestCase):
    FILES = {
        ".portico/remotes/remote_only.py": INTERFACE.format(name="RemoteOnly"),
        ".portico/remotes/both.py": INTERFACE.format(name="RemoteBoth"),
        ".portico/remotes/shared/model.py": INTERFACE.format(name="SharedModel"),
        ".portico/remotes/remote_helper.py": "VALUE = 'from the remote helper'\n",
        "both.py": INTERFACE.format(name="ProjectBoth"),
        "user.py": """
            from remote_helper import VALUE
            from portico import Interface

            class User(Interface):
                def value(self):
                    return VALUE
        """,
    }

    def ping(self, module: str) -> str:
        return self.worker.result(self.worker.call("ping", module=module, uuid=f"r-{module}"))

    def test_a_remote_module_resolves_and_calls(self) -> None:
        frame = self.worker.terminal(self.worker.request("resolve", module="remote_only", version=[]))
        self.assertEqual((frame["op"], frame["kind"]), ("resolved", "RemoteOnly"))
        self.assertEqual(self.ping("remote_only"), "RemoteOnly")
        self.assertEqual(self.ping("shared.model"), "SharedModel")

    def test_a_project_module_wins_over_a_remote_of_the_same_name(self) -> None:
        self.assertEqual(self.ping("both"), "ProjectBoth")

    def test_project_code_imports_remotes(self) -> None:
        self.assertEqual(self.worker.result(self.worker.call("value", module="user", uuid="user")), "from the remote helper")

    def test_a_remote_fetched_after_start_is_found(self) -> None:
        write_files(self.project, {".portico/remotes/late.py": INTERFACE.format(name="Late")})
        self.assertEqual(self.ping("late"), "Late")

    def test_the_remotes_folder_may_appear_after_start(self) -> None:
        project = make_project(self, {"local.py": INTERFACE.format(name="Local")})
        worker = WorkerProcess(project)
        self.addCleanup(worker.close)
        self.assertEqual(worker.result(worker.call("ping", module="local")), "Local")
        self.assertEqual(worker.error(worker.request("resolve", module="fetched", version=[]))["code"], "module_not_found")
        write_files(project, {".portico/remotes/fetched.py": INTERFACE.format(name="Fetched")})
        self.assertEqual(worker.result(worker.call("ping", module="fetched", uuid="f")), "Fetched")

    def test_remotes_are_not_listed(self) -> None:
        frame = self.worker.terminal(self.worker.request("modules"))
        self.assertEqual([entry["module"] for entry in frame["modules"]], ["both", "user"])

    def test_schema_of_a_remote_points_into_the_remotes_folder(self) -> None:
        frame = self.worker.terminal(self.worker.request("schema", module="remote_only"))
        self.assertEqual(frame["source_file"], ".portico/remotes/remote_only.py")


if __name__ == "__main__":
    unittest.main()
