"""Worker: the `schema` op's config_fields (the reference server's shape) and its errors."""

from __future__ import annotations

import unittest

from schema_support import HAS_PYDANTIC, SchemaCase


class WorkerConfigFieldsTest(SchemaCase):
    # -- config_fields (the reference server's shape) --------------------------------------------

    def fields(self, module: str) -> dict:
        return {field["name"]: field for field in self.schema(module)["config_fields"]}

    def test_config_fields_of_a_plain_config(self) -> None:
        fields = self.fields("plain")
        self.assertEqual(list(fields), ["epochs", "name", "rate", "mode", "limit", "tags", "weights", "pair", "anything", "optimizer", "maybe", "flag"])
        self.assertEqual(
            fields["epochs"],
            {"name": "epochs", "type": "<class 'int'>", "default": 10, "required": False, "description": "How many passes over the data.", "fields": None},
        )
        self.assertEqual(fields["name"], {"name": "name", "type": "<class 'str'>", "default": None, "required": True, "description": None, "fields": None})
        self.assertEqual((fields["mode"]["type"], fields["mode"]["default"]), ("typing.Literal['sgd', 'adam']", "sgd"))
        self.assertEqual((fields["limit"]["type"], fields["tags"]["type"]), ("int | None", "list[str]"))
        optimizer = fields["optimizer"]
        # A nested config without a default: its own defaults apply, so it is not required.
        self.assertEqual((optimizer["type"], optimizer["required"], optimizer["default"]), ("<class 'plain.Optimizer'>", False, {"lr": 0.01, "momentum": None}))
        self.assertEqual(
            [(f["name"], f["type"], f["default"], f["description"]) for f in optimizer["fields"]],
            [("lr", "<class 'float'>", 0.01, "Learning rate."), ("momentum", "typing.Optional[float]", None, None)],
        )
        self.assertEqual([f["name"] for f in fields["maybe"]["fields"]], ["lr", "momentum"])  # Optional[Optimizer]

    def test_config_fields_of_a_dataclass_config(self) -> None:
        fields = self.fields("dc")
        self.assertEqual((fields["required"]["required"], fields["required"]["default"]), (True, None))
        self.assertEqual(
            fields["items"], {"name": "items", "type": "list[int]", "default": [1, 2], "required": False, "description": "Items, by docstring.", "fields": None}
        )
        self.assertEqual(fields["inner"]["default"], {"depth": 2})
        self.assertEqual(
            fields["inner"]["fields"], [{"name": "depth", "type": "<class 'int'>", "default": 2, "required": False, "description": "How deep.", "fields": None}]
        )

    @unittest.skipUnless(HAS_PYDANTIC, "pydantic is not installed")
    def test_config_fields_of_a_pydantic_config(self) -> None:
        fields = self.fields("pyd")
        self.assertEqual(
            fields["start"], {"name": "start", "type": "<class 'int'>", "default": 0, "required": False, "description": "Where to start.", "fields": None}
        )
        self.assertEqual((fields["mode"]["type"], fields["maybe"]["type"]), ("typing.Literal['a', 'b']", "typing.Optional[int]"))
        self.assertEqual((fields["needed"]["required"], fields["needed"]["default"]), (True, None))
        self.assertEqual(fields["listed"]["default"], [7])
        self.assertEqual([(f["name"], f["default"]) for f in fields["opt"]["fields"]], [("lr", 0.1), ("note", "")])
        # A model that contains itself is listed down to the depth bound, then no further.
        depth, node = 0, fields["tree"]
        while node["fields"] is not None:
            depth, node = depth + 1, node["fields"][0]
        self.assertEqual(depth, 6)

    def test_config_fields_carry_the_description_the_json_schema_gives(self) -> None:
        modules = ["plain", "dc"] + (["pyd"] if HAS_PYDANTIC else [])
        for module in modules:
            schema = self.schema(module)
            properties = schema["config_schema"]["properties"]
            for field in schema["config_fields"]:
                if field["fields"] is None:  # a nested config's schema carries its class docstring too
                    with self.subTest(module=module, field=field["name"]):
                        self.assertEqual(field["description"], properties[field["name"]].get("description"))
        plain = self.fields("plain")
        # A docstring, Annotated text (which wins over a docstring), dataclass metadata, Field(description=...).
        self.assertEqual((plain["epochs"]["description"], plain["rate"]["description"], plain["mode"]["description"]), ("How many passes over the data.", "Step size.", None))
        self.assertEqual((self.fields("dc")["required"]["description"], self.fields("dc")["opt"]["description"]), ("Must be given.", None))
        if HAS_PYDANTIC:
            pyd = self.fields("pyd")
            self.assertEqual((pyd["start"]["description"], pyd["rate"]["description"]), ("Where to start.", "Step size."))
            self.assertEqual([(f["name"], f["description"]) for f in pyd["opt"]["fields"]], [("lr", "learning rate"), ("note", "a note")])

    def test_methods_follow_the_callable_rule(self) -> None:
        methods = {method["name"]: method for method in self.schema("plain")["methods"]}
        # Not: _private, size (a property), limit (not callable), version_*, Config, Interface's own.
        self.assertEqual(list(methods), ["add", "build", "count", "fetch", "pure", "shared", "ticks"])
        self.assertEqual(
            methods["add"],
            {
                "name": "add",
                "signature": "(n: int = 1, *rest: int, label: str | None = None, **extra: Any) -> int",
                "doc": "Adds n.",
                "kind": "method",
                "parameters": [
                    {"name": "n", "kind": "positional_or_keyword", "default": 1, "annotation": "int"},
                    {"name": "rest", "kind": "var_positional", "annotation": "int"},
                    {"name": "label", "kind": "keyword_only", "default": None, "annotation": "str | None"},
                    {"name": "extra", "kind": "var_keyword", "annotation": "Any"},
                ],
                "returns": "int",
            },
        )
        self.assertEqual((methods["fetch"]["kind"], methods["fetch"]["returns"]), ("async", "dict[str, int]"))
        self.assertEqual((methods["count"]["kind"], methods["count"]["returns"]), ("generator", "Iterator[int]"))
        self.assertEqual((methods["ticks"]["kind"], methods["ticks"]["returns"]), ("async_generator", None))
        self.assertEqual(methods["pure"]["signature"], "(x: list[int]) -> int")  # static: nothing dropped
        self.assertEqual(methods["build"]["parameters"], [{"name": "value", "kind": "positional_or_keyword", "default": None, "annotation": None}])
        self.assertEqual(methods["shared"]["doc"], "Defined on the project's base class.")

    def test_api_methods_list_exactly_the_listed_callables(self) -> None:
        methods = self.schema("api")["methods"]
        self.assertEqual([(method["name"], method["kind"]) for method in methods], [("stream", "async_generator"), ("visible", "method")])

    def test_string_annotations_are_evaluated_when_possible(self) -> None:
        methods = {method["name"]: method for method in self.schema("future")["methods"]}
        self.assertEqual(methods["go"]["signature"], "(steps: list[int], when: float | None = None) -> dict[str, int]")
        self.assertEqual([p["annotation"] for p in methods["go"]["parameters"]], ["list[int]", "float | None"])
        # An annotation that does not evaluate stays as written.
        self.assertEqual(methods["broken"]["parameters"][0]["annotation"], "NotDefinedAnywhere")
        self.assertEqual(methods["broken"]["returns"], "int")

    # -- errors ----------------------------------------------------------------------------------

    def test_errors_use_the_resolve_codes(self) -> None:
        error = self.schema_error("nowhere")
        self.assertEqual((error["code"], error["message"]), ("module_not_found", f"Module 'nowhere' not found in project {self.project}"))
        self.assertEqual(self.schema_error("os")["code"], "module_not_found")
        error = self.schema_error("broken")
        self.assertEqual(error["code"], "module_error")
        self.assertIn("SyntaxError", error["message"])

    def test_missing_module_field_is_a_bad_request(self) -> None:
        self.worker.send({"op": "schema", "id": 7001})
        self.assertEqual(self.worker.error(7001)["code"], "bad_request")


if __name__ == "__main__":
    unittest.main()
