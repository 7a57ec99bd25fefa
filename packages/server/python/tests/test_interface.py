"""The Interface surface an author touches: config view, uuid, emit, data directory, files."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import threading
import unittest
from typing import Any

import support  # noqa: F401  (puts the portico package on sys.path)
import portico
from portico import CallCancelled, Interface
from portico._view import ConfigView
from portico.interface import Binding, attach


class Thing(Interface):
    def ping(self) -> str:
        return "pong"


def served(project: str, uuid: str = "abc123", config: dict[str, Any] | None = None) -> tuple[Thing, list[Any]]:
    """A Thing bound the way the worker binds it, with events collected in a list."""
    events: list[Any] = []
    obj = Thing.__new__(Thing)
    attach(obj, Binding(uuid=uuid, config=ConfigView(config or {}), project=project, emit=lambda u, p: events.append((u, p))))
    obj.__init__()
    return obj, events


class PackageTest(unittest.TestCase):
    def test_exports(self) -> None:
        self.assertEqual(portico.__version__, "0.1.0")
        self.assertIs(portico.Interface, Interface)
        self.assertTrue(issubclass(CallCancelled, Exception))


class ConfigViewTest(unittest.TestCase):
    def setUp(self) -> None:
        self.view = ConfigView({"start": 1, "optimizer": {"lr": 0.1}, "layers": [1, {"k": 2}]})

    def test_attribute_and_item_access_including_nested_dicts(self) -> None:
        self.assertEqual(self.view.start, 1)
        self.assertEqual(self.view["start"], 1)
        self.assertEqual(self.view.optimizer.lr, 0.1)
        self.assertEqual(self.view["optimizer"]["lr"], 0.1)
        self.assertEqual(self.view.layers[1].k, 2)

    def test_assignment_raises(self) -> None:
        with self.assertRaises(AttributeError):
            self.view.start = 2  # type: ignore[misc]
        with self.assertRaises(TypeError):
            self.view["start"] = 2  # type: ignore[index]
        with self.assertRaises(AttributeError):
            self.view.optimizer.lr = 1  # type: ignore[misc]
        with self.assertRaises(AttributeError):
            self.view.layers.append(3)  # lists are tuples

    def test_missing_field_is_an_attribute_error(self) -> None:
        with self.assertRaisesRegex(AttributeError, "no field 'nope'"):
            self.view.nope  # noqa: B018

    def test_to_dict_is_a_plain_copy_and_the_view_is_a_mapping(self) -> None:
        self.assertEqual(self.view.to_dict(), {"start": 1, "optimizer": {"lr": 0.1}, "layers": [1, {"k": 2}]})
        self.assertEqual(dict(self.view)["start"], 1)
        self.assertEqual(len(self.view), 3)


class InterfaceTest(unittest.TestCase):
    def setUp(self) -> None:
        self.project = tempfile.mkdtemp(prefix="portico-test-")
        self.addCleanup(shutil.rmtree, self.project, True)

    def test_config_and_uuid_are_read_only(self) -> None:
        obj, _ = served(self.project, config={"start": 3})
        self.assertEqual((obj.uuid, obj.config.start), ("abc123", 3))
        with self.assertRaises(AttributeError):
            obj.config = {}  # type: ignore[misc]
        with self.assertRaises(AttributeError):
            obj.uuid = "x"  # type: ignore[misc]

    def test_unserved_instance_has_an_empty_config_and_no_directory(self) -> None:
        obj = Thing()
        self.assertIsNone(obj.uuid)
        self.assertEqual(dict(obj.config), {})
        obj.emit({"fine": True})  # dropped, but still checked
        with self.assertRaises(TypeError):
            obj.emit(object())
        with self.assertRaises(RuntimeError):
            obj.local_directory()

    def test_emit_passes_uuid_and_payload_and_refuses_non_json(self) -> None:
        obj, events = served(self.project)
        obj.emit({"progress": 0.5})
        thread = threading.Thread(target=obj.emit, args=(["from a thread"],))
        thread.start()
        thread.join()
        self.assertEqual(events, [("abc123", {"progress": 0.5}), ("abc123", ["from a thread"])])

    def test_emit_refuses_what_json_cannot_write_with_type_error(self) -> None:
        obj = Thing()
        with self.assertRaises(TypeError):
            obj.emit(10**5000)  # json's ValueError: more digits than int() writes

    def test_local_directory_layout_and_create(self) -> None:
        obj, _ = served(self.project)
        root = os.path.join(self.project, ".portico", "interfaces", "abc123")
        self.assertEqual(obj.local_directory(), root)
        path = obj.local_directory("runs", "a/b", create=True)
        self.assertEqual(path, os.path.join(root, "runs", "a", "b"))
        self.assertTrue(os.path.isdir(path))
        self.assertFalse(os.path.exists(obj.local_directory("later")))

    def test_local_directory_refuses_escaping_parts(self) -> None:
        obj, _ = served(self.project)
        for parts in (("..",), ("a", "../../b"), ("/etc",), ("a\\..\\b",)):
            with self.subTest(parts=parts), self.assertRaises(ValueError):
                obj.local_directory(*parts)

    def test_a_uuid_that_is_not_one_plain_name_cannot_reach_the_file_system(self) -> None:
        obj, _ = served(self.project, uuid="../escape")
        with self.assertRaises(ValueError):
            obj.local_directory()

    def test_save_and_load_json_text_and_bytes(self) -> None:
        obj, _ = served(self.project)
        path = obj.save_file("state.json", {"count": 2, "tags": ("a",)})
        self.assertEqual(path, os.path.join(obj.local_directory(), "state.json"))
        with open(path, encoding="utf-8") as handle:
            self.assertEqual(json.load(handle), {"count": 2, "tags": ["a"]})
        self.assertEqual(obj.load_file("state.json"), {"count": 2, "tags": ["a"]})
        obj.save_file("notes/readme.txt", "héllo")
        self.assertEqual(obj.load_file("notes/readme.txt"), "héllo")
        obj.save_file("blob.bin", b"\xff\x00")
        self.assertEqual(obj.load_file("blob.bin"), b"\xff\x00")
        self.assertEqual(obj.load_file("missing.json", default={"d": 1}), {"d": 1})

    def test_save_overwrites_atomically_without_leaving_temp_files(self) -> None:
        obj, _ = served(self.project)
        for count in range(3):
            obj.save_file("state.json", {"count": count})
        self.assertEqual(obj.load_file("state.json"), {"count": 2})
        self.assertEqual(os.listdir(obj.local_directory()), ["state.json"])

    def test_save_refuses_what_it_cannot_store(self) -> None:
        obj, _ = served(self.project)
        with self.assertRaises(TypeError):
            obj.save_file("data.txt", {"not": "text"})
        with self.assertRaises(TypeError):
            obj.save_file("data.json", object())
        with self.assertRaises(ValueError):
            obj.save_file("../outside.txt", "x")


if __name__ == "__main__":
    unittest.main()
