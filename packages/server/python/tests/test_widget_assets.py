"""Widgets: the worker op widget_assets, with the widget flags of `modules` and `schema` agreeing with it."""

from __future__ import annotations

import os
import shutil
import tempfile
import unittest
from typing import Any

from support import WorkerTestCase


ASSET_FILES = {
    "inline.py": """
        from portico import Interface

        class Inline(Interface):
            _esm = "export default { render({ el }) { el.textContent = 'hi'; } }"
            _css = ".x { color: red }"
    """,
    "named.py": """
        from portico import Interface

        class Named(Interface):
            _esm = "front/named.js"
            _css = "missing.css"  # names no file: so it is source text
    """,
    "front/named.js": "export default {};\n",
    "pathed.py": """
        import pathlib

        from portico import Interface

        class Pathed(Interface):
            _esm = pathlib.Path("front") / "pathed.mjs"
    """,
    "front/pathed.mjs": "export default {};\n",
    "path_missing.py": """
        import pathlib

        from portico import Interface

        class PathMissing(Interface):
            _esm = pathlib.Path("nowhere.js")
    """,
    "multiline.py": """
        from portico import Interface

        class Multiline(Interface):
            _esm = "front/named.js\\nexport default {}"
    """,
    "sib.py": "from portico import Interface\n\nclass Sib(Interface):\n    pass\n",
    "sib.widget.js": "export default {};\n",
    "sib.widget.css": ".sib {}\n",
    "wpkg/__init__.py": "from portico import Interface\n\nclass WPkg(Interface):\n    pass\n",
    "wpkg/__init__.widget.js": "export default {};\n",
    "css_only.py": "from portico import Interface\n\nclass CssOnly(Interface):\n    pass\n",
    "css_only.widget.css": ".c {}\n",
    "none.py": "from portico import Interface\n\nclass NoWidget(Interface):\n    pass\n",
    "not_str.py": "from portico import Interface\n\nclass NotStr(Interface):\n    _esm = 5\n",
    "escape.py": """
        import pathlib

        from portico import Interface

        class Escape(Interface):
            _esm = pathlib.Path("..") / "outside.js"
    """,
    "escape_abs.py": "from portico import Interface\n\nclass EscapeAbs(Interface):\n    _esm = '/etc/hostname.js'\n",
    "linked.py": "from portico import Interface\n\nclass Linked(Interface):\n    pass\n",
    "lib/__init__.py": "",
    "lib/base.py": """
        from portico import Interface

        class Base(Interface):
            _esm = "base.js"
    """,
    "lib/base.js": "export default {};\n",
    "child.py": """
        from lib.base import Base

        class Child(Base):
            pass
    """,
}


class WidgetAssetsTest(WorkerTestCase):
    FILES = ASSET_FILES

    @classmethod
    def setUpClass(cls) -> None:
        cls.outside = tempfile.mkdtemp(prefix="portico-outside-")
        with open(os.path.join(cls.outside, "evil.widget.js"), "w") as handle:
            handle.write("export default {};\n")
        super().setUpClass()
        os.symlink(os.path.join(cls.outside, "evil.widget.js"), os.path.join(cls.project, "linked.widget.js"))
        with open(os.path.join(os.path.dirname(cls.project), "outside.js"), "w") as handle:
            handle.write("export default {};\n")
        cls.addClassCleanup(os.remove, os.path.join(os.path.dirname(cls.project), "outside.js"))

    @classmethod
    def tearDownClass(cls) -> None:
        super().tearDownClass()
        shutil.rmtree(cls.outside, ignore_errors=True)

    def assets(self, module: str) -> dict[str, Any]:
        frame = self.worker.terminal(self.worker.request("widget_assets", module=module))
        if frame["op"] != "widget_assets":
            raise AssertionError(frame)
        return {"esm": frame["esm"], "css": frame["css"]}

    def error(self, module: str) -> dict[str, Any]:
        return self.worker.error(self.worker.request("widget_assets", module=module))

    def path(self, *parts: str) -> dict[str, str]:
        return {"path": os.path.realpath(os.path.join(self.project, *parts))}

    def test_reply_shape(self) -> None:
        request = self.worker.request("widget_assets", module="sib")
        frame = self.worker.terminal(request)
        self.assertEqual(frame, {"op": "widget_assets", "id": request, **self.assets("sib")})

    def test_inline_sources(self) -> None:
        self.assertEqual(
            self.assets("inline"),
            {"esm": {"inline": "export default { render({ el }) { el.textContent = 'hi'; } }"}, "css": {"inline": ".x { color: red }"}},
        )

    def test_a_string_naming_an_existing_file_is_a_path_else_source(self) -> None:
        self.assertEqual(self.assets("named"), {"esm": self.path("front", "named.js"), "css": {"inline": "missing.css"}})
        self.assertEqual(self.assets("multiline"), {"esm": {"inline": "front/named.js\nexport default {}"}, "css": None})

    def test_a_path_object_is_a_path(self) -> None:
        self.assertEqual(self.assets("pathed"), {"esm": self.path("front", "pathed.mjs"), "css": None})
        self.assertEqual(self.error("path_missing")["code"], "not_found")

    def test_sibling_files(self) -> None:
        self.assertEqual(self.assets("sib"), {"esm": self.path("sib.widget.js"), "css": self.path("sib.widget.css")})
        self.assertEqual(self.assets("wpkg"), {"esm": self.path("wpkg", "__init__.widget.js"), "css": None})
        self.assertEqual(self.assets("css_only"), {"esm": None, "css": self.path("css_only.widget.css")})

    def test_no_assets(self) -> None:
        self.assertEqual(self.assets("none"), {"esm": None, "css": None})
        self.assertEqual(self.assets("not_str"), {"esm": None, "css": None})

    def test_an_inherited_name_is_relative_to_the_module_that_declares_it(self) -> None:
        self.assertEqual(self.assets("child"), {"esm": self.path("lib", "base.js"), "css": None})

    def test_paths_outside_the_project_are_forbidden(self) -> None:
        for module in ("escape", "linked"):
            with self.subTest(module=module):
                error = self.error(module)
                self.assertEqual(error["code"], "forbidden")
                self.assertIn("outside the project", error["message"])
        # A string that names no file inside is source text, never a path outside.
        self.assertEqual(self.assets("escape_abs"), {"esm": {"inline": "/etc/hostname.js"}, "css": None})

    def test_unknown_and_broken_modules(self) -> None:
        self.assertEqual(self.error("nowhere")["code"], "module_not_found")
        self.assertEqual(self.error("os")["code"], "module_not_found")
        self.worker.send({"op": "widget_assets", "id": 9100})
        self.assertEqual(self.worker.error(9100)["code"], "bad_request")

    def test_modules_and_schema_flags_agree_with_the_assets(self) -> None:
        listing = {entry["module"]: entry for entry in self.worker.terminal(self.worker.request("modules"))["modules"]}
        for module in ("inline", "named", "pathed", "multiline", "sib", "wpkg", "css_only", "none", "not_str", "child"):
            with self.subTest(module=module):
                assets = self.assets(module)
                schema = self.worker.terminal(self.worker.request("schema", module=module))
                expected = {asset: value is not None for asset, value in assets.items()}
                self.assertEqual(schema["widget"], {**expected, "meta": {}} if any(expected.values()) else None)
                self.assertEqual(listing[module]["widget"], assets["esm"] is not None)


# -- the hooks without a worker -----------------------------------------------------------------


if __name__ == "__main__":
    unittest.main()
