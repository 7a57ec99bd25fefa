"""Worker: the argument check of a call accepts exactly what ``inspect.Signature.bind`` accepts."""

from __future__ import annotations

import inspect
import itertools
import unittest

from portico.worker.methods import _Method


class Shapes:
    def required_and_default(self, a, b=2): ...
    def two_required(self, a, b): ...
    def none(self): ...
    def all_defaults(self, a=1, b=2, c=3): ...
    def var_positional(self, a, *rest): ...
    def keyword_only(self, a, *, k): ...
    def var_keyword(self, a, **extra): ...


class ArgumentCheckTest(unittest.TestCase):
    def test_check_agrees_with_signature_bind(self) -> None:
        names = ["a", "b", "c", "d", "k", "rest", "extra"]
        for name in [n for n in vars(Shapes) if not n.startswith("_")]:
            method = _Method("method", inspect.signature(getattr(Shapes(), name)))
            for positional in range(5):
                for count in range(4):
                    for keywords in itertools.combinations(names, count):
                        args, kwargs = list(range(positional)), {k: 0 for k in keywords}
                        with self.subTest(method=name, args=args, kwargs=kwargs):
                            self.assertEqual(self._accepted(method.signature.bind, args, kwargs), self._accepted(method.check, args, kwargs))

    def test_a_refused_call_keeps_binds_message(self) -> None:
        method = _Method("method", inspect.signature(Shapes().two_required))
        with self.assertRaisesRegex(TypeError, "missing a required argument: 'b'"):
            method.check([1], {})

    @staticmethod
    def _accepted(check, args, kwargs) -> bool:
        try:
            check(*args, **kwargs) if check.__name__ == "bind" else check(args, kwargs)
        except TypeError:
            return False
        return True


if __name__ == "__main__":
    unittest.main()
