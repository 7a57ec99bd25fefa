"""Worker: the argument check of a call accepts exactly what ``inspect.Signature.bind`` accepts, and
the fields of a call are read as their checks read them."""

from __future__ import annotations

import inspect
import itertools
import random
import unittest

from portico.worker.methods import Method
from portico.worker.protocol import Refusal, call_fields, checked_call_fields


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
            method = Method("method", inspect.signature(getattr(Shapes(), name)))
            for positional in range(5):
                for count in range(4):
                    for keywords in itertools.combinations(names, count):
                        args, kwargs = list(range(positional)), {k: 0 for k in keywords}
                        with self.subTest(method=name, args=args, kwargs=kwargs):
                            self.assertEqual(self._accepted(method.signature.bind, args, kwargs), self._accepted(method.check, args, kwargs))

    def test_a_refused_call_keeps_binds_message(self) -> None:
        method = Method("method", inspect.signature(Shapes().two_required))
        with self.assertRaisesRegex(TypeError, "missing a required argument: 'b'"):
            method.check([1], {})

    def test_check_agrees_with_signature_bind_on_generated_calls(self) -> None:
        # The fast variant (``plain``, ``required``) beside its reference, Signature.bind: the
        # same verdict and the same message, on random signatures and random calls.
        rng = random.Random(20261126)
        kinds = [inspect.Parameter.POSITIONAL_OR_KEYWORD] * 4 + [
            inspect.Parameter.POSITIONAL_ONLY,
            inspect.Parameter.KEYWORD_ONLY,
            inspect.Parameter.VAR_POSITIONAL,
            inspect.Parameter.VAR_KEYWORD,
        ]
        for case in range(4000):
            signature = _random_signature(rng, kinds)
            method = Method("method", signature)
            names = [*signature.parameters, "x", "y"]
            args = list(range(rng.randrange(5)))
            kwargs = {name: 0 for name in rng.sample(names, rng.randrange(min(4, len(names)) + 1))}
            with self.subTest(case=case, signature=str(signature), args=args, kwargs=kwargs):
                self.assertEqual(self._verdict(lambda: signature.bind(*args, **kwargs)), self._verdict(lambda: method.check(args, kwargs)))

    @staticmethod
    def _verdict(check) -> str:
        try:
            check()
        except TypeError as exc:
            return f"refused: {exc}"
        return "binds"

    @staticmethod
    def _accepted(check, args, kwargs) -> bool:
        try:
            check(*args, **kwargs) if check.__name__ == "bind" else check(args, kwargs)
        except TypeError:
            return False
        return True


def _random_signature(rng: random.Random, kinds: list[inspect._ParameterKind]) -> inspect.Signature:
    """A valid signature of up to five parameters: kinds in their order, defaults where allowed."""
    chosen = sorted(rng.choice(kinds) for _ in range(rng.randrange(6)))
    params, defaulted = [], False
    for index, kind in enumerate(chosen):
        if kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD):
            if any(p.kind is kind for p in params):
                continue
            params.append(inspect.Parameter(f"v{index}", kind))
            continue
        positional = kind in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
        # After a default, a positional parameter needs one too.
        default = 1 if (positional and defaulted) or rng.random() < 0.3 else inspect.Parameter.empty
        defaulted = defaulted or (positional and default is not inspect.Parameter.empty)
        params.append(inspect.Parameter("abcdefgh"[index], kind, default=default))
    return inspect.Signature(params)


class CallFieldsTest(unittest.TestCase):
    def test_call_fields_agree_with_the_checks_field_by_field(self) -> None:
        # The fast variant (exact types, no checks) beside its reference: the same fields, or the same refusal.
        rng = random.Random(33)
        values = [None, True, 0, 7, 1.5, "", "s", [], [1], {}, {"a": 1}]
        names = ["id", "uuid", "module", "config", "method", "args", "kwargs", "stream"]
        typical = {"id": 3, "uuid": "u", "module": "m", "config": {}, "method": "f", "args": [], "kwargs": {}, "stream": False}
        for case in range(4000):
            header = {"op": "call", **typical}
            for name in rng.sample(names, rng.randrange(4)):
                if rng.random() < 0.2:
                    header.pop(name)
                else:
                    header[name] = rng.choice(values)
            with self.subTest(case=case, header=header):
                self.assertEqual(self._read(call_fields, header), self._read(checked_call_fields, header))

    @staticmethod
    def _read(fields, header):
        try:
            return fields(header)
        except Refusal as refusal:
            return (refusal.code, refusal.message)


if __name__ == "__main__":
    unittest.main()
