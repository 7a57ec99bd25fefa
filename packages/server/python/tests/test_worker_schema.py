"""Worker: the `schema` op: config JSON Schema for each Config form, versions, methods, widget and
source location. The reference server's config_fields and the op's errors are in
test_worker_config_fields.py."""

from __future__ import annotations

import textwrap
import unittest

from schema_support import CLOSED, FILES, HAS_PYDANTIC, SchemaCase


class WorkerSchemaTest(SchemaCase):
    # -- the module ------------------------------------------------------------------------------

    def test_reply_shape(self) -> None:
        frame = self.schema("plain")
        self.assertEqual(
            set(frame),
            {"op", "id", "module", "kind", "doc", "config_schema", "config_fields", "version_methods", "methods", "runnable", "widget", "source_file", "source_line"},
        )
        self.assertEqual((frame["module"], frame["kind"]), ("plain", "Plain"))
        self.assertEqual(frame["doc"], "A plain config.\n\nSecond paragraph.")
        self.assertIsNone(frame["widget"])

    def test_runnable_says_whether_the_class_defines_call_inherited_or_not(self) -> None:
        # What a dispatch needs (portico.run calls __call__); the landing page offers "Run it" by it.
        self.assertTrue(self.schema("runner")["runnable"])
        self.assertFalse(self.schema("plain")["runnable"])
        self.assertFalse(self.schema("nodoc")["runnable"])

    def test_doc_is_never_inherited_from_interface(self) -> None:
        self.assertIsNone(self.schema("nodoc")["doc"])

    def test_source_location_is_relative_to_the_project(self) -> None:
        frame = self.schema("plain")
        line = textwrap.dedent(FILES["plain.py"]).splitlines().index("class Plain(Base):") + 1
        self.assertEqual((frame["source_file"], frame["source_line"]), ("plain.py", line))
        frame = self.schema("pkg")
        self.assertEqual((frame["source_file"], frame["source_line"]), ("pkg/__init__.py", 4))

    def test_source_location_outside_the_project_is_null(self) -> None:
        frame = self.schema("outside")
        self.assertEqual((frame["kind"], frame["source_file"], frame["source_line"]), ("Outside", None, None))

    def test_widget_from_class_attributes_and_sibling_files(self) -> None:
        self.assertEqual(self.schema("drawn")["widget"], {"esm": True, "css": False, "meta": {"size": "small"}})
        self.assertEqual(self.schema("sib")["widget"], {"esm": True, "css": True, "meta": {}})
        self.assertIsNone(self.schema("pkg")["widget"])

    # -- config_schema ---------------------------------------------------------------------------

    def test_plain_config(self) -> None:
        schema = self.schema("plain")["config_schema"]
        optimizer = {
            "type": "object",
            "properties": {
                "lr": {"type": "number", "default": 0.01, "description": "Learning rate."},
                "momentum": {"anyOf": [{"type": "number"}, {"type": "null"}], "default": None},
            },
            "required": [],
            **CLOSED,
        }
        self.assertEqual(
            schema,
            {
                "$schema": "https://json-schema.org/draft/2020-12/schema",
                "type": "object",
                "description": "Training settings.",
                "properties": {
                    "epochs": {"type": "integer", "default": 10, "description": "How many passes over the data."},
                    "name": {"type": "string"},
                    "rate": {"type": "number", "default": 0.5, "description": "Step size."},
                    "mode": {"enum": ["sgd", "adam"], "default": "sgd"},
                    "limit": {"anyOf": [{"type": "integer"}, {"type": "null"}], "default": None},
                    "tags": {"type": "array", "items": {"type": "string"}, "default": []},
                    "weights": {"type": "object", "additionalProperties": {"type": "number"}, "default": {}},
                    "pair": {
                        "type": "array",
                        "prefixItems": [{"type": "integer"}, {"type": "string"}],
                        "minItems": 2,
                        "maxItems": 2,
                        "default": [1, "a"],
                    },
                    "anything": {"default": None},
                    "optimizer": optimizer,
                    "maybe": {"anyOf": [optimizer, {"type": "null"}], "default": None},
                    "flag": {"type": "boolean", "default": False},
                },
                "required": ["name"],
                **CLOSED,
            },
        )

    def test_dataclass_config(self) -> None:
        schema = self.schema("dc")["config_schema"]
        self.assertEqual(
            schema["properties"],
            {
                "required": {"type": "string", "description": "Must be given."},
                "size": {"type": "integer", "default": 3, "description": "The size."},
                "items": {"type": "array", "items": {"type": "integer"}, "default": [1, 2], "description": "Items, by docstring."},
                "inner": {
                    "type": "object",
                    "properties": {"depth": {"type": "integer", "default": 2, "description": "How deep."}},
                    "required": [],
                    **CLOSED,
                    "default": {"depth": 2},  # from the default_factory
                },
                "opt": {"anyOf": [{"type": "number"}, {"type": "null"}], "default": None},
            },
        )
        self.assertEqual(schema["required"], ["required"])
        self.assertFalse(schema["additionalProperties"])
        self.assertNotIn("description", schema)  # @dataclass's generated docstring is not a description

    @unittest.skipUnless(HAS_PYDANTIC, "pydantic is not installed")
    def test_pydantic_config(self) -> None:
        schema = self.schema("pyd")["config_schema"]
        self.assertNotIn("$ref", str(schema["properties"]["opt"]))
        properties = schema["properties"]
        self.assertEqual((properties["start"]["default"], properties["start"]["description"]), (0, "Where to start."))
        self.assertEqual((properties["rate"]["default"], properties["rate"]["description"]), (0.5, "Step size."))
        self.assertEqual(properties["mode"]["enum"], ["a", "b"])
        self.assertEqual(properties["maybe"]["anyOf"], [{"type": "integer"}, {"type": "null"}])
        opt = properties["opt"]
        self.assertEqual(opt["type"], "object")
        self.assertEqual(opt["default"], {"lr": 0.1, "note": ""})
        self.assertEqual(opt["properties"]["lr"]["description"], "learning rate")
        self.assertEqual(opt["properties"]["note"]["description"], "a note")
        self.assertFalse(opt["additionalProperties"])
        self.assertEqual(properties["listed"]["default"], [7])  # from the default_factory
        self.assertTrue(properties["loose"]["additionalProperties"])  # extra="allow"
        self.assertEqual(schema["required"], ["needed"])
        self.assertFalse(schema["additionalProperties"])
        # A model that contains itself keeps one reference, to a definition at the top.
        tree = properties["tree"]
        self.assertEqual(tree["default"], {"children": []})
        self.assertEqual(tree["properties"]["children"]["items"], {"$ref": "#/$defs/Tree"})
        self.assertEqual(list(schema["$defs"]), ["Tree"])
        self.assertEqual(schema["$defs"]["Tree"]["properties"]["children"]["items"], {"$ref": "#/$defs/Tree"})

    def test_no_config_is_an_empty_object(self) -> None:
        self.assertEqual(
            self.schema("nodoc")["config_schema"],
            {"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object", "properties": {}, "required": [], **CLOSED},
        )

    # -- versions and methods --------------------------------------------------------------------

    def test_versions_include_inherited_ones(self) -> None:
        versions = self.schema("plain")["version_methods"]
        self.assertEqual([version["name"] for version in versions], ["big", "inherited", "tiny"])
        self.assertEqual(
            versions[0],
            {
                "name": "big",
                "signature": "(step: int = 10, *, scale: float = 1.5)",
                "doc": "Bigger steps.",
                "parameters": [
                    {"name": "step", "kind": "positional_or_keyword", "default": 10, "annotation": "int"},
                    {"name": "scale", "kind": "keyword_only", "default": 1.5, "annotation": "float"},
                ],
                "source_line": textwrap.dedent(FILES["plain.py"]).splitlines().index("    def version_big(self, step: int = 10, *, scale: float = 1.5):") + 1,
            },
        )
        self.assertEqual(versions[1]["source_line"], textwrap.dedent(FILES["base.py"]).splitlines().index("    def version_inherited(self):") + 1)
        self.assertEqual(versions[1]["doc"], "From the base.")
        self.assertEqual((versions[2]["signature"], versions[2]["doc"], versions[2]["parameters"]), ("()", None, []))


if __name__ == "__main__":
    unittest.main()
