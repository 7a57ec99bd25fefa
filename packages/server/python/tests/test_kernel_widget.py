"""The kernel widget's pieces that need no kernel and no anywidget (client/kernel_widget.py); the
whole path runs in real front ends in test/e2e/kernel-widgets.test.ts."""

from __future__ import annotations

import base64
import json
import unittest

from portico.client import kernel_widget
from portico.client.connection import set_fields


class Base:
    layout = None

    def keys(self):
        return []


class KernelWidgetPiecesTest(unittest.TestCase):
    def test_unusable_keys_name_each_key_and_why(self) -> None:
        bad = kernel_widget.unusable_keys({"fine": 1, "my-key": 2, "class": 3, "layout": 4, "keys": 5, "_portico_notice": 6, "_private": 7}, Base)
        self.assertEqual(
            bad,
            [
                "'my-key' (not a Python name)",
                "'class' (not a Python name)",
                "'layout' (a name ipywidgets or Portico uses)",
                "'keys' (a name ipywidgets or Portico uses)",
                "'_portico_notice' (a name ipywidgets or Portico uses)",
            ],
        )

    def test_the_widget_source_is_embedded_as_one_string_literal(self) -> None:
        source = "export default { render({ el }) { el.textContent = 'a \\u2028 \"quoted\" </script>'; } };\n"
        esm = kernel_widget.wrapper_esm(source)
        self.assertNotIn("__PORTICO_WIDGET_SOURCE__", esm)
        self.assertIn(f"const SOURCE = {json.dumps(source)};", esm)
        self.assertIn("_portico_notice", esm)

    def test_set_fields_send_binary_values_as_base64_buffers(self) -> None:
        fields = set_fields({"title": "t", "image": b"\x00\x01", "deep": {"blob": memoryview(b"ab")}})
        self.assertEqual(fields["changes"], {"title": "t", "image": None, "deep": {"blob": None}})
        self.assertEqual(fields["buffer_paths"], [["image"], ["deep", "blob"]])
        self.assertEqual([base64.b64decode(b) for b in fields["buffers"]], [b"\x00\x01", b"ab"])
        self.assertEqual(set_fields({"n": 1}), {"changes": {"n": 1}})

    def test_values_from_the_page_become_plain(self) -> None:
        self.assertEqual(kernel_widget._plain({"a": memoryview(b"x"), "b": [bytearray(b"y"), 1], "c": (2,)}), {"a": b"x", "b": [b"y", 1], "c": [2]})


if __name__ == "__main__":
    unittest.main()
