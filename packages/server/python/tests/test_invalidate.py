"""Worker: the `invalidate` op (sent by the gateway after a source edit) drops modules, their
submodules, the worker's caches and the live instances of their classes, and answers
`invalidated {evicted, dropped}`."""

from __future__ import annotations

import os
import shutil
import sys
import textwrap
import unittest
from typing import Any

# The suite runs as `unittest discover -s tests`; this also allows `python3 -m unittest tests.test_invalidate`.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from support import WorkerProcess, make_project, write_files

COUNTER = """
    from portico import Interface

    class Counter(Interface):
        \"\"\"{doc}\"\"\"

        def __init__(self):
            self.count = 0

        def add(self):
            self.count += 1
            return "{tag}", self.count
"""

NAMED = """
    from portico import Interface

    class {name}(Interface):
        def who(self):
            return "{name} {tag}"
"""


def rewrite_keeping_mtime(project: str, name: str, text: str) -> None:
    """Replace a file's content but keep its mtime: the worker's own change check cannot see it."""
    path = os.path.join(project, name)
    before = os.stat(path)
    write_files(project, {name: text})
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))


class InvalidateTest(unittest.TestCase):
    def setUp(self) -> None:
        self.project = make_project(
            self,
            {
                "counter.py": COUNTER.format(doc="First.", tag="v1"),
                "pkg/__init__.py": NAMED.format(name="Pkg", tag="v1"),
                "pkg/sub.py": NAMED.format(name="Sub", tag="v1"),
                "pkgx.py": NAMED.format(name="Pkgx", tag="v1"),
                "single.py": NAMED.format(name="Single", tag="file"),
            },
        )
        self.worker = WorkerProcess(self.project)
        self.addCleanup(self.worker.close)
        self.worker.wait_for(lambda f: f["op"] == "ready")

    def invalidate(self, modules: Any) -> dict[str, Any]:
        request_id = self.worker.request("invalidate", modules=modules)
        return self.worker.wait_for(lambda f: f.get("id") == request_id and f["op"] in ("invalidated", "error"))

    def call(self, module: str, method: str, uuid: str) -> Any:
        return self.worker.result(self.worker.call(method, module=module, uuid=uuid))

    def resolve(self, module: str) -> dict[str, Any]:
        return self.worker.terminal(self.worker.request("resolve", module=module, version=[]))

    def test_reply_names_evicted_instances_and_dropped_modules(self) -> None:
        self.assertEqual(self.call("counter", "add", "c1"), ["v1", 1])
        self.assertEqual(self.call("counter", "add", "c1"), ["v1", 2])
        frame = self.invalidate(["counter"])
        self.assertEqual(frame, {"op": "invalidated", "id": frame["id"], "evicted": ["c1"], "dropped": ["counter"]})

    def test_new_code_is_imported_even_when_the_mtime_did_not_change(self) -> None:
        self.assertEqual(self.call("counter", "add", "c1"), ["v1", 1])
        rewrite_keeping_mtime(self.project, "counter.py", COUNTER.format(doc="Second.", tag="v2"))
        # Without invalidate the worker keeps what it imported (its check is the file's mtime).
        self.assertEqual(self.call("counter", "add", "c2"), ["v1", 1])
        self.assertEqual(sorted(self.invalidate(["counter"])["evicted"]), ["c1", "c2"])
        # The evicted uuid gets a fresh instance of the new class on its next call.
        self.assertEqual(self.call("counter", "add", "c1"), ["v2", 1])

    def test_listing_and_schema_follow_the_new_code(self) -> None:
        listing = self.worker.terminal(self.worker.request("modules"))["modules"]
        self.assertEqual(next(m["doc"] for m in listing if m["module"] == "counter"), "First.")
        rewrite_keeping_mtime(self.project, "counter.py", COUNTER.format(doc="Second.", tag="v2"))
        self.invalidate(["counter"])
        listing = self.worker.terminal(self.worker.request("modules"))["modules"]
        self.assertEqual(next(m["doc"] for m in listing if m["module"] == "counter"), "Second.")
        schema = self.worker.terminal(self.worker.request("schema", module="counter"))
        self.assertEqual(schema["doc"], "Second.")

    def test_a_package_takes_its_submodules_along_but_not_a_name_sharing_its_prefix(self) -> None:
        self.assertEqual(self.call("pkg", "who", "p"), "Pkg v1")
        self.assertEqual(self.call("pkg.sub", "who", "s"), "Sub v1")
        self.assertEqual(self.call("pkgx", "who", "x"), "Pkgx v1")
        rewrite_keeping_mtime(self.project, "pkg/sub.py", NAMED.format(name="Sub", tag="v2"))
        frame = self.invalidate(["pkg"])
        self.assertEqual(frame["evicted"], ["p", "s"])
        self.assertEqual(frame["dropped"], ["pkg", "pkg.sub"])
        self.assertEqual(self.call("pkg.sub", "who", "s"), "Sub v2")
        self.assertEqual(self.call("pkgx", "who", "x"), "Pkgx v1")  # kept: same instance, not re-created

    def test_a_module_moved_into_a_package_and_back(self) -> None:
        self.assertEqual(self.call("single", "who", "a"), "Single file")
        os.makedirs(os.path.join(self.project, "single"))
        shutil.move(os.path.join(self.project, "single.py"), os.path.join(self.project, "single", "__init__.py"))
        write_files(self.project, {"single/__init__.py": NAMED.format(name="Single", tag="package")})
        self.assertEqual(self.invalidate(["single"])["evicted"], ["a"])
        self.assertEqual(self.call("single", "who", "a"), "Single package")
        self.assertTrue(self.worker.proc.poll() is None)

        shutil.move(os.path.join(self.project, "single", "__init__.py"), os.path.join(self.project, "single.py"))
        os.rmdir(os.path.join(self.project, "single"))
        write_files(self.project, {"single.py": NAMED.format(name="Single", tag="file again")})
        self.invalidate(["single"])
        self.assertEqual(self.call("single", "who", "a"), "Single file again")

    def test_a_deleted_module_is_not_found_afterwards(self) -> None:
        self.assertEqual(self.resolve("pkgx")["op"], "resolved")
        os.remove(os.path.join(self.project, "pkgx.py"))
        self.invalidate(["pkgx"])
        frame = self.resolve("pkgx")
        self.assertEqual((frame["op"], frame["code"]), ("error", "module_not_found"))

    def test_a_new_module_is_found_after_a_failed_lookup(self) -> None:
        self.assertEqual(self.resolve("fresh")["code"], "module_not_found")
        write_files(self.project, {"fresh.py": textwrap.dedent(NAMED.format(name="Fresh", tag="new"))})
        self.invalidate(["fresh"])
        self.assertEqual(self.call("fresh", "who", "f"), "Fresh new")

    def test_modules_outside_the_project_are_never_dropped(self) -> None:
        frame = self.invalidate(["json", "os", "portico"])
        self.assertEqual((frame["op"], frame["evicted"], frame["dropped"]), ("invalidated", [], []))
        self.assertEqual(self.call("counter", "add", "c1"), ["v1", 1])  # the worker still works

    def test_unknown_modules_and_an_empty_list_are_fine(self) -> None:
        self.assertEqual(self.invalidate([])["op"], "invalidated")
        self.assertEqual(self.invalidate(["nope", "also.not"])["dropped"], [])

    def test_malformed_requests_are_refused(self) -> None:
        for modules in (None, "counter", [1], [""]):
            with self.subTest(modules=modules):
                frame = self.invalidate(modules)
                self.assertEqual((frame["op"], frame["code"]), ("error", "bad_request"))

    def test_a_method_added_on_disk_is_not_found_on_a_live_instance_which_says_why(self) -> None:
        self.assertEqual(self.call("single", "who", "s1"), "Single file")
        plain = self.worker.terminal(self.worker.call("shout", module="single", uuid="s1"))
        self.assertEqual((plain["code"], plain["message"]), ("method_not_found", "Method 'shout' not found on single.Single"))
        write_files(self.project, {"single.py": NAMED.format(name="Single", tag="edited") + "\n        def shout(self):\n            return 'HI'\n"})
        # The refusal cached before the edit, and one asked after a new import of the module, both say it.
        for _ in range(2):
            frame = self.worker.terminal(self.worker.call("shout", module="single", uuid="s1"))
            self.assertEqual(frame["code"], "method_not_found")
            self.assertIn("this live instance was made before single's source changed on disk", frame["message"])
            self.assertIn("--reload", frame["message"])
            self.assertEqual(self.call("single", "shout", "s2"), "HI")  # a new instance has it
        self.assertEqual(self.call("single", "who", "s1"), "Single file")  # the live one runs its old class


if __name__ == "__main__":
    unittest.main()
