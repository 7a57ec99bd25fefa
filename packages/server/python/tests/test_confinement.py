"""Paths built with ``local_directory``, ``save_file`` and ``load_file`` stay inside the interface's
folder: a symlink in it is followed only while it leads to a place inside the folder."""

from __future__ import annotations

import os
import shutil
import tempfile
import unittest
from typing import Any

import support  # noqa: F401  (puts the portico package on sys.path)
from support import WorkerTestCase
from portico import Interface
from portico._view import ConfigView
from portico.interface import Binding, attach

SECRET = "secret bytes 7f3a beyond the folder"


class Thing(Interface):
    pass


def served(project: str, uuid: str = "abc123") -> Thing:
    obj = Thing.__new__(Thing)
    attach(obj, Binding(uuid=uuid, config=ConfigView({}), project=project, emit=lambda u, p: None))
    obj.__init__()
    return obj


class ConfinementTest(unittest.TestCase):
    def setUp(self) -> None:
        self.project = tempfile.mkdtemp(prefix="portico-confine-")
        self.outside = tempfile.mkdtemp(prefix="portico-outside-")
        self.addCleanup(shutil.rmtree, self.project, True)
        self.addCleanup(shutil.rmtree, self.outside, True)
        with open(os.path.join(self.outside, "secret.txt"), "w", encoding="utf-8") as handle:
            handle.write(SECRET)
        self.obj = served(self.project)
        self.root = self.obj.local_directory(create=True)
        os.makedirs(os.path.join(self.root, "real"))
        with open(os.path.join(self.root, "real", "inside.txt"), "w", encoding="utf-8") as handle:
            handle.write("inside")
        os.symlink(os.path.join(self.outside, "secret.txt"), os.path.join(self.root, "link"))
        os.symlink(self.outside, os.path.join(self.root, "dirlink"))
        os.symlink(os.path.join(self.outside, "absent.txt"), os.path.join(self.root, "dangling"))
        os.symlink(os.path.join(self.root, "real"), os.path.join(self.root, "alias"))
        os.symlink("real/inside.txt", os.path.join(self.root, "relative-alias"))

    def assertRefused(self, call: Any, *args: Any, **kwargs: Any) -> PermissionError:
        with self.assertRaises(PermissionError) as caught:
            call(*args, **kwargs)
        message = str(caught.exception)
        self.assertIn("outside the interface folder", message)
        self.assertNotIn(self.outside, message)
        return caught.exception

    def test_local_directory_refuses_a_symlinked_file_or_folder_leading_out(self) -> None:
        for parts in (("link",), ("dirlink",), ("dirlink", "secret.txt"), ("dirlink", "new", "deeper"), ("dangling",)):
            with self.subTest(parts=parts):
                self.assertRefused(self.obj.local_directory, *parts)

    def test_local_directory_creates_nothing_through_a_symlink_leading_out(self) -> None:
        self.assertRefused(self.obj.local_directory, "dirlink", "made", create=True)
        self.assertEqual(os.listdir(self.outside), ["secret.txt"])

    def test_the_refusal_is_also_a_value_error_as_for_dotdot(self) -> None:
        with self.assertRaises(ValueError):
            self.obj.local_directory("link")
        with self.assertRaises(PermissionError):
            self.obj.local_directory("..", "escape")

    def test_symlinks_that_stay_inside_are_followed(self) -> None:
        self.assertEqual(self.obj.local_directory("alias", "inside.txt"), os.path.join(self.root, "alias", "inside.txt"))
        with open(self.obj.local_directory("relative-alias"), encoding="utf-8") as handle:
            self.assertEqual(handle.read(), "inside")
        made = self.obj.local_directory("alias", "sub", create=True)
        self.assertTrue(os.path.isdir(os.path.join(self.root, "real", "sub")))
        self.assertEqual(made, os.path.join(self.root, "alias", "sub"))
        self.assertEqual(self.obj.load_file("alias/inside.txt"), "inside")

    def test_load_file_refuses_a_symlink_leading_out(self) -> None:
        self.assertRefused(self.obj.load_file, "link")
        self.assertRefused(self.obj.load_file, "dirlink/secret.txt")
        self.assertRefused(self.obj.load_file, "dangling", default="d")

    def test_save_file_refuses_a_symlink_leading_out_and_writes_nothing_there(self) -> None:
        self.assertRefused(self.obj.save_file, "link", "evil")
        self.assertRefused(self.obj.save_file, "dirlink/new.txt", "evil")
        self.assertRefused(self.obj.save_file, "dirlink/sub/new.txt", "evil")
        self.assertEqual(os.listdir(self.outside), ["secret.txt"])
        with open(os.path.join(self.outside, "secret.txt"), encoding="utf-8") as handle:
            self.assertEqual(handle.read(), SECRET)
        self.assertTrue(os.path.islink(os.path.join(self.root, "link")))

    def test_a_symlinked_interface_folder_is_its_own_root(self) -> None:
        # The folder itself may live elsewhere (a link to a bigger disk): paths inside it are fine.
        elsewhere = tempfile.mkdtemp(prefix="portico-elsewhere-")
        self.addCleanup(shutil.rmtree, elsewhere, True)
        os.symlink(elsewhere, os.path.join(self.project, ".portico", "interfaces", "linked"))
        obj = served(self.project, uuid="linked")
        obj.save_file("state.json", {"n": 1})
        self.assertEqual(obj.load_file("state.json"), {"n": 1})
        self.assertTrue(os.path.exists(os.path.join(elsewhere, "state.json")))


class WorkerRefusalTest(WorkerTestCase):
    """Through the worker, the refusal is the bridge's ``forbidden``, for a read and for a call."""

    FILES = {
        "reader.py": """
            from portico import Interface

            class Reader(Interface):
                def read(self, params):
                    return open(self.local_directory(*params["parts"]), "rb")

                def load(self, name):
                    return self.load_file(name)
        """,
    }

    @classmethod
    def setUpClass(cls) -> None:
        super().setUpClass()
        cls.outside = tempfile.mkdtemp(prefix="portico-outside-")
        with open(os.path.join(cls.outside, "secret.txt"), "w", encoding="utf-8") as handle:
            handle.write(SECRET)
        root = os.path.join(cls.project, ".portico", "interfaces", "r1")
        os.makedirs(root)
        os.symlink(os.path.join(cls.outside, "secret.txt"), os.path.join(root, "link"))
        os.symlink(cls.outside, os.path.join(root, "dirlink"))

    @classmethod
    def tearDownClass(cls) -> None:
        super().tearDownClass()
        shutil.rmtree(cls.outside, ignore_errors=True)

    def test_a_read_through_a_symlink_leading_out_is_forbidden_and_sends_nothing(self) -> None:
        for parts in (["link"], ["dirlink", "secret.txt"], ["..", "x"]):
            with self.subTest(parts=parts):
                request_id = self.worker.read({"parts": parts})
                error = self.worker.error(request_id)
                self.assertEqual(error["code"], "forbidden")
                self.assertIn("outside the interface folder", error["message"])
                self.assertNotIn(self.outside, error["message"])
                self.assertEqual(self.worker.chunks(request_id), [])

    def test_a_call_of_load_file_through_a_symlink_leading_out_is_forbidden(self) -> None:
        error = self.worker.error(self.worker.call("load", "link", module="reader", uuid="r1"))
        self.assertEqual(error["code"], "forbidden")
        self.assertEqual(error["exception"], "OutsideFolder")


if __name__ == "__main__":
    unittest.main()
