"""Worker: every error code of the bridge README, and module confinement to the project."""

from __future__ import annotations

import unittest

from support import WorkerTestCase

FILES = {
    "counter.py": """
        from portico import Interface

        class Counter(Interface):
            class Config:
                start: int = 0

            def version_big(self):
                return {"start": 100}

            def add(self, n: int = 1) -> int:
                return n

            def fail(self):
                raise ValueError("boom")

            def fail_type(self, a):
                return a + "x"  # a TypeError inside the method is not an argument problem

            def empty_error(self):
                raise RuntimeError()

            def give_bytes(self):
                return b"raw"

            def give_complex(self):
                return 1j

            def give_object(self):
                return object()

            async def async_fail(self):
                raise KeyError("k")

            def _secret(self):
                return "secret"

            limit = 5
    """,
    "limited.py": """
        from portico import Interface

        class Limited(Interface):
            __api_methods__ = ["visible"]

            def visible(self):
                return "visible"

            def hidden(self):
                return "hidden"
    """,
    "broken.py": "from portico import Interface\n\nclass Broken(Interface)\n    pass\n",
    "raises.py": """
        raise RuntimeError("import-time failure")
    """,
    "needs_missing.py": """
        import portico_test_no_such_dependency
    """,
    "empty.py": """
        from counter import Counter  # imported, not defined here: does not count
        VALUE = 1
    """,
    "two.py": """
        from portico import Interface

        class A(Interface):
            pass

        class B(Interface):
            pass
    """,
    "picked.py": """
        from portico import Interface

        __interface__ = "B"

        class A(Interface):
            pass

        class B(Interface):
            def which(self):
                return "B"
    """,
    "initfail.py": """
        from portico import Interface

        class InitFail(Interface):
            def __init__(self):
                raise OSError("no device")

            def ping(self):
                return "pong"
    """,
    "required.py": """
        from portico import Interface

        class Required(Interface):
            class Config:
                name: str

            def ping(self):
                return self.config.name
    """,
    # `codecs` is imported during interpreter start-up, before the project is on sys.path.
    "codecs.py": """
        from portico import Interface

        class Shadow(Interface):
            pass
    """,
    "pkg/__init__.py": "",
    "pkg/sub.py": """
        from portico import Interface

        class Sub(Interface):
            def where(self):
                return __name__
    """,
}


class WorkerErrorsTest(WorkerTestCase):
    FILES = FILES

    def call_error(self, method: str, *args: object, module: str = "counter", stream: bool = False, **kwargs: object) -> dict:
        return self.worker.error(self.worker.call(method, *args, module=module, uuid=f"e-{module}", stream=stream, **kwargs))

    def resolve_error(self, module: str, version: list | None = None) -> dict:
        return self.worker.error(self.worker.request("resolve", module=module, version=version or []))

    # -- modules ---------------------------------------------------------------------------------

    def test_module_not_found(self) -> None:
        error = self.resolve_error("nowhere")
        self.assertEqual(error["code"], "module_not_found")
        self.assertEqual(error["message"], f"Module 'nowhere' not found in project {self.project}")

    def test_modules_outside_the_project_are_never_imported(self) -> None:
        # `this` prints the Zen of Python when imported: the output proves whether it ran.
        for module in ("os", "this", "portico.worker", "unittest"):
            with self.subTest(module=module):
                self.assertEqual(self.resolve_error(module)["code"], "module_not_found")
        self.worker.settle(0.1)
        self.assertNotIn(b"Beautiful is better", bytes(self.worker.stdout))

    def test_invalid_module_names_are_not_found(self) -> None:
        for module in ("../counter", "counter/x", "", "__main__", "counter.", "a b"):
            with self.subTest(module=module):
                self.assertEqual(self.resolve_error(module)["code"], "module_not_found")

    def test_project_module_shadowed_by_an_imported_one_is_refused(self) -> None:
        error = self.resolve_error("codecs")
        self.assertEqual(error["code"], "module_error")
        self.assertIn("outside project", error["message"])

    def test_package_submodules_are_found_and_missing_ones_are_not(self) -> None:
        self.assertEqual(self.worker.result(self.worker.call("where", module="pkg.sub", uuid="pkg")), "pkg.sub")
        self.assertEqual(self.resolve_error("pkg.missing")["code"], "module_not_found")

    def test_syntax_error_names_the_module_file_and_line(self) -> None:
        error = self.resolve_error("broken")
        self.assertEqual(error["code"], "module_error")
        self.assertEqual(error["message"], "Module 'broken' failed to import: SyntaxError: expected ':' (broken.py, line 3)")
        self.worker.wait_output(b"Traceback", stream="stderr")  # the traceback goes to the log

    def test_import_time_exceptions_are_named(self) -> None:
        error = self.resolve_error("raises")
        self.assertEqual(error["message"], "Module 'raises' failed to import: RuntimeError: import-time failure")
        error = self.resolve_error("needs_missing")
        self.assertEqual(error["code"], "module_error")
        self.assertIn("ModuleNotFoundError", error["message"])

    def test_no_or_several_interface_classes(self) -> None:
        self.assertEqual(self.resolve_error("empty")["message"], "Module 'empty' defines no Interface subclass")
        error = self.resolve_error("two")
        self.assertEqual(error["code"], "module_error")
        self.assertIn("(A, B)", error["message"])
        self.assertIn("__interface__", error["message"])

    def test_interface_attribute_picks_the_class(self) -> None:
        request = self.worker.request("resolve", module="picked", version=[])
        self.assertEqual(self.worker.terminal(request)["kind"], "B")
        self.assertEqual(self.worker.result(self.worker.call("which", module="picked", uuid="picked")), "B")

    # -- config ----------------------------------------------------------------------------------

    def test_invalid_config_on_resolve_and_on_call(self) -> None:
        error = self.resolve_error("counter", [{"start": "x"}])
        self.assertEqual((error["code"], error["issues"]), ("invalid_config", [{"path": "start", "message": "expected int, got str"}]))
        error = self.call_error("ping", module="required")
        self.assertEqual(error["code"], "invalid_config")
        self.assertEqual(error["issues"], [{"path": "name", "message": "Missing required field 'name'"}])

    # -- methods ---------------------------------------------------------------------------------

    def test_method_not_found(self) -> None:
        error = self.call_error("nope")
        self.assertEqual((error["code"], error["message"]), ("method_not_found", "Method 'nope' not found on counter.Counter"))
        self.assertEqual(self.call_error("limit")["code"], "method_not_found")  # not callable

    def test_method_forbidden(self) -> None:
        for method in ("_secret", "__init__", "emit", "save_file", "version_big", "Config"):
            with self.subTest(method=method):
                self.assertEqual(self.call_error(method)["code"], "method_forbidden")
        self.assertEqual(self.call_error("hidden", module="limited")["code"], "method_forbidden")
        self.assertEqual(self.worker.result(self.worker.call("visible", module="limited", uuid="lim")), "visible")

    def test_invalid_argument_is_checked_before_the_method_runs(self) -> None:
        error = self.call_error("add", 1, 2)
        self.assertEqual(error["code"], "invalid_argument")
        self.assertEqual(error["message"], "Invalid arguments for add(): too many positional arguments")
        self.assertEqual(self.call_error("add", m=1)["code"], "invalid_argument")
        self.assertEqual(self.call_error("fail_type")["code"], "invalid_argument")

    def test_call_failed_names_the_exception(self) -> None:
        error = self.call_error("fail")
        self.assertEqual(
            (error["code"], error["exception"], error["message"]), ("call_failed", "ValueError", "fail() raised ValueError: boom")
        )
        error = self.call_error("fail_type", 1)
        self.assertEqual((error["code"], error["exception"]), ("call_failed", "TypeError"))
        self.assertEqual(self.call_error("empty_error")["message"], "empty_error() raised RuntimeError")
        self.assertEqual(self.call_error("async_fail")["exception"], "KeyError")

    def test_call_failed_when_init_raises(self) -> None:
        error = self.call_error("ping", module="initfail")
        self.assertEqual(error["code"], "call_failed")
        self.assertEqual(error["message"], "initfail.InitFail.__init__() raised OSError: no device")

    def test_unserializable_result_names_the_type(self) -> None:
        for method, needle in (("give_bytes", "bytes"), ("give_object", "object"), ("give_complex", "complex")):
            with self.subTest(method=method):
                error = self.call_error(method)
                self.assertEqual(error["code"], "unserializable_result")
                self.assertIn(needle, error["message"])

    def test_a_live_instances_call_fails_as_the_first_call_did(self) -> None:
        # The first call of each creates its instance (the general path); the second, on the
        # live instance with the method checked, takes on_call's fast path: the same error frame.
        for method, args in (("fail", ()), ("fail_type", (1,)), ("empty_error", ()), ("give_complex", ()), ("give_object", ()), ("give_bytes", ())):
            with self.subTest(method=method):
                uuid = f"again-{method}"
                first, second = (self.worker.error(self.worker.call(method, *args, module="counter", uuid=uuid)) for _ in range(2))
                self.assertEqual({**first, "id": None}, {**second, "id": None})
                self.assertIn(first["code"], ("call_failed", "unserializable_result"))

    # -- requests --------------------------------------------------------------------------------

    def test_bad_requests_with_an_id_are_answered(self) -> None:
        cases = [
            {"op": "frobnicate", "id": 9001},
            {"id": 9002},
            {"op": "call", "id": 9003, "uuid": "x", "module": "counter"},  # no method
            {"op": "call", "id": 9004, "uuid": "x", "module": "counter", "method": "add", "args": {}},
            {"op": "resolve", "id": 9005},
        ]
        for header in cases:
            with self.subTest(header=header):
                self.worker.send(header)
                self.assertEqual(self.worker.error(header["id"])["code"], "bad_request")

    def test_bad_requests_without_an_id_are_logged(self) -> None:
        self.worker.send({"op": "frobnicate"})
        self.worker.send({"op": "credit", "id": 1, "n": "lots"})
        self.worker.wait_output(b"frobnicate", stream="stderr")
        self.worker.wait_output(b"credit", stream="stderr")
        self.assertEqual(self.worker.result(self.worker.call("add", 3, uuid="still-alive")), 3)


if __name__ == "__main__":
    unittest.main()
