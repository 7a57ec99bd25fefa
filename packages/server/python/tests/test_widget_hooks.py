"""Widgets: the Interface hooks (widget_state / widget_update / widget_message) and pushes, without a worker."""

from __future__ import annotations

import unittest
from typing import Any

import portico
from portico import Interface, NotFound, ReadOnly
from portico._view import ConfigView
from portico.interface import Binding, attach


class Counter(Interface):
    class Config:
        start: int = 0


def bound(obj: Interface, pushes: list[Any] | None = None, config: dict[str, Any] | None = None) -> Interface:
    kwargs: dict[str, Any] = {}
    if pushes is not None:
        kwargs["push"] = lambda uuid, op, fields, buffers: pushes.append((uuid, op, fields, buffers))
    attach(obj, Binding(uuid="u", config=ConfigView(config or {"start": 2}), project=None, emit=lambda u, p: None, **kwargs))
    return obj


class HooksTest(unittest.TestCase):
    def test_exports(self) -> None:
        self.assertIs(portico.NotFound, NotFound)
        self.assertIs(portico.ReadOnly, ReadOnly)
        self.assertTrue(issubclass(NotFound, LookupError))
        self.assertTrue(issubclass(ReadOnly, Exception))
        self.assertIn("NotFound", portico.__all__)
        self.assertIn("ReadOnly", portico.__all__)

    def test_defaults(self) -> None:
        obj = bound(Counter())
        state = obj.widget_state()
        self.assertEqual(state, {"start": 2})
        state["start"] = 9  # a copy: the config stays as it was
        self.assertEqual(obj.config.start, 2)
        with self.assertRaises(ReadOnly):
            obj.widget_update({"start": 3})
        self.assertIsNone(obj.widget_message({"x": 1}, []))

    def test_hooks_are_documented(self) -> None:
        for name in ("widget_state", "widget_update", "widget_message", "push_widget_change", "push_widget_message"):
            with self.subTest(name=name):
                self.assertTrue(getattr(Interface, name).__doc__)
        self.assertIn("read(self, params)", Interface.__doc__ or "")

    def test_pushes_go_to_the_binding(self) -> None:
        pushes: list[Any] = []
        obj = bound(Counter(), pushes)
        obj.push_widget_change({"a": 1})
        obj.push_widget_change({"image": b"\x01\x02", "layers": [{"data": memoryview(b"\x03")}]})
        obj.push_widget_message({"b": 2}, [b"x", bytearray(b"y"), memoryview(b"z")])
        obj.push_widget_message("plain")
        self.assertEqual(
            pushes,
            [
                ("u", "widget_change", {"changes": {"a": 1}}, []),
                (
                    "u",
                    "widget_change",
                    {"changes": {"image": None, "layers": [{"data": None}]}, "buffer_paths": [["image"], ["layers", 0, "data"]]},
                    [b"\x01\x02", b"\x03"],
                ),
                ("u", "widget_msg", {"content": {"b": 2}}, [b"x", b"y", b"z"]),
                ("u", "widget_msg", {"content": "plain"}, []),
            ],
        )

    def test_push_arguments_are_checked(self) -> None:
        obj = bound(Counter())
        with self.assertRaises(TypeError):
            obj.push_widget_change([("a", 1)])  # type: ignore[arg-type]
        with self.assertRaises(TypeError):
            obj.push_widget_change({"a": object()})
        with self.assertRaises(TypeError):
            obj.push_widget_change({"a": 10**5000})  # ValueError inside (too many digits), TypeError outside
        with self.assertRaises(TypeError):
            obj.push_widget_message("x", ["not bytes"])  # type: ignore[list-item]

    def test_unbound_instances_push_nowhere(self) -> None:
        obj = Counter()
        obj.push_widget_change({"a": 1})
        obj.push_widget_message({"b": 2}, [b"x"])
        with self.assertRaises(TypeError):
            obj.push_widget_message(object())


if __name__ == "__main__":
    unittest.main()
