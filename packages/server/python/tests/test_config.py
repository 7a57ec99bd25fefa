"""Config declarations, the version grammar and validation issues (in-process, no worker)."""

from __future__ import annotations

import dataclasses
import datetime
import json
import os
import tempfile
import unittest
from typing import Any, ClassVar, Literal, Optional, Union

import support  # noqa: F401  (puts the portico package on sys.path)
from portico import Interface
from portico.config import check_config, normalize_version, parse_arguments, resolve

try:
    import pydantic
except ImportError:  # pragma: no cover - pydantic is optional
    pydantic = None


class Optimizer:
    lr: float = 0.1
    momentum: float = 0.0


class Counter(Interface):
    class Config:
        start: int = 0
        step: int = 1
        optimizer: Optimizer
        helper = "not a field"  # unannotated: a helper, not config
        _hidden: int = 3
        registry: ClassVar[dict[str, int]] = {}

    def version_big(self, step: int = 10, start: int | None = None) -> dict[str, Any]:
        patch: dict[str, Any] = {"step": step}
        if start is not None:
            patch["start"] = start
        return patch

    def version_double(self) -> dict[str, Any]:
        # Version methods see the config resolved so far.
        return {"step": self.config.step * 2, "optimizer.lr": self.config.optimizer.lr * 2}

    def version_nothing(self) -> None:
        return None

    def version_list(self) -> list[int]:
        return [1]

    def version_broken(self) -> dict[str, Any]:
        raise ValueError("no way")


class Typed(Interface):
    class Config:
        count: int = 0
        rate: float = 0.5
        name: str = "x"
        flag: bool = False
        maybe: Optional[int] = None
        either: int | None = None
        values: list[int] = [1, 2]
        pair: tuple[int, int] = (1, 2)
        weights: dict[str, float] = {}
        mode: Literal["fast", "slow"] = "fast"
        choice: Union[int, str] = 0
        anything: Any = None
        when: datetime.date = None  # an annotation we do not check


class Required(Interface):
    class Config:
        name: str
        size: int = 1


@dataclasses.dataclass
class Inner:
    depth: int = 1
    tags: list[str] = dataclasses.field(default_factory=list)


class WithDataclass(Interface):
    @dataclasses.dataclass
    class Config:
        inner: Inner
        width: int = 3
        label: str = dataclasses.field(default="w")


class Empty(Interface):
    pass


class ConfigFormsTest(unittest.TestCase):
    def test_plain_class_fields_are_annotated_names_with_defaults(self) -> None:
        resolved = resolve(Counter, [])
        self.assertEqual(resolved.issues, [])
        self.assertEqual(resolved.config, {"start": 0, "step": 1, "optimizer": {"lr": 0.1, "momentum": 0.0}})

    def test_unannotated_private_and_classvar_attributes_are_not_fields(self) -> None:
        resolved = resolve(Counter, [{"helper": 1, "_hidden": 1, "registry": {}}])
        self.assertEqual(sorted(issue["path"] for issue in resolved.issues), ["_hidden", "helper", "registry"])

    def test_field_without_default_is_required(self) -> None:
        resolved = resolve(Required, [])
        self.assertEqual(resolved.issues, [{"path": "name", "message": "Missing required field 'name'"}])
        self.assertEqual(resolve(Required, [{"name": "n"}]).config, {"name": "n", "size": 1})

    def test_dataclass_config_with_nested_dataclass_and_factories(self) -> None:
        resolved = resolve(WithDataclass, [{"inner.tags": ["a"]}])
        self.assertEqual(resolved.issues, [])
        self.assertEqual(resolved.config, {"inner": {"depth": 1, "tags": ["a"]}, "width": 3, "label": "w"})

    def test_no_config_is_empty_and_every_key_is_unknown(self) -> None:
        self.assertEqual(resolve(Empty, []).config, {})
        resolved = resolve(Empty, [{"x": 1}])
        self.assertEqual(resolved.issues, [{"path": "x", "message": "Unknown config key 'x' (no config fields are declared)"}])

    def test_resolved_config_is_json_with_defaults_filled_in(self) -> None:
        config = resolve(Typed, []).config
        self.assertEqual(json.loads(json.dumps(config)), config)
        self.assertEqual(config["pair"], [1, 2])  # tuple default → JSON list
        self.assertEqual(config["values"], [1, 2])


class VersionGrammarTest(unittest.TestCase):
    def test_dicts_deep_merge_left_to_right(self) -> None:
        resolved = resolve(Counter, [{"optimizer": {"lr": 1.0}}, {"optimizer": {"momentum": 0.5}}, {"start": 2}])
        self.assertEqual(resolved.config["optimizer"], {"lr": 1.0, "momentum": 0.5})
        self.assertEqual(resolved.config["start"], 2)

    def test_dotted_dict_keys_are_unflattened(self) -> None:
        resolved = resolve(Counter, [{"optimizer.lr": 0.5}])
        self.assertEqual(resolved.config["optimizer"], {"lr": 0.5, "momentum": 0.0})
        self.assertEqual(resolved.version, [{"optimizer": {"lr": 0.5}}])

    def test_version_method_by_name(self) -> None:
        self.assertEqual(resolve(Counter, ["~big"]).config["step"], 10)

    def test_version_method_with_positional_and_keyword_literals(self) -> None:
        self.assertEqual(resolve(Counter, ["~big(5)"]).config["step"], 5)
        config = resolve(Counter, ["~big(step=7, start=-2)"]).config
        self.assertEqual((config["step"], config["start"]), (7, -2))

    def test_version_method_sees_the_config_resolved_so_far(self) -> None:
        config = resolve(Counter, [{"step": 3}, "~double", "~double"]).config
        self.assertEqual(config["step"], 12)
        self.assertAlmostEqual(config["optimizer"]["lr"], 0.4)

    def test_version_method_returning_none_changes_nothing(self) -> None:
        resolved = resolve(Counter, ["~nothing"])
        self.assertEqual((resolved.issues, resolved.config["step"]), ([], 1))

    def test_dotted_assignment_parses_literals(self) -> None:
        config = resolve(Typed, ["count=3", "weights.a=0.5", "values=[4, 5]", "flag=True", "maybe=None"]).config
        self.assertEqual(config["count"], 3)
        self.assertEqual(config["weights"], {"a": 0.5})
        self.assertEqual(config["values"], [4, 5])
        self.assertIs(config["flag"], True)
        self.assertIsNone(config["maybe"])

    def test_dotted_assignment_falls_back_to_the_raw_string(self) -> None:
        self.assertEqual(resolve(Typed, ["name=foo"]).config["name"], "foo")
        self.assertEqual(resolve(Typed, ["name = hello world "]).config["name"], "hello world")

    def test_non_literal_arguments_are_an_issue_and_never_run(self) -> None:
        with tempfile.TemporaryDirectory() as scratch:
            marker = os.path.join(scratch, "pwned")
            resolved = resolve(Counter, [f"~big(__import__('os').mkdir({marker!r}))", "~big(__import__('os'))"])
            self.assertFalse(os.path.exists(marker))
        self.assertEqual(len(resolved.issues), 2)
        self.assertEqual(
            resolved.issues[1],
            {"path": None, "message": "Invalid version \"~big(__import__('os'))\": arguments must be Python literals"},
        )

    def test_argument_tricks_are_refused(self) -> None:
        for text in ("1)(2", "1), g(2", "*[1]", "**{'step': 1}", "step=len('x')", "1,"):
            with self.subTest(text=text):
                if text == "1,":
                    self.assertEqual(parse_arguments(text), ([1], {}))
                    continue
                with self.assertRaises(ValueError):
                    parse_arguments(text)

    def test_unknown_version_method(self) -> None:
        resolved = resolve(Counter, ["~huge"])
        self.assertEqual(resolved.issues, [{"path": None, "message": "Counter has no version method 'version_huge'"}])

    def test_plain_string_is_an_issue(self) -> None:
        resolved = resolve(Counter, ["foo"])
        self.assertEqual(
            resolved.issues,
            [{"path": None, "message": "Invalid version 'foo': use '~name' for a version method or 'key=value'"}],
        )

    def test_version_method_failures_are_issues(self) -> None:
        messages = [issue["message"] for issue in resolve(Counter, ["~broken", "~list", "~big(1, 2, 3)", "~big(", 42]).issues]
        self.assertEqual(len(messages), 5)
        self.assertEqual(messages[0], "Version method 'version_broken' raised ValueError: no way")
        self.assertEqual(messages[1], "Version method 'version_list' must return a dict, got list")
        self.assertTrue(messages[2].startswith("Invalid arguments for version_big(): too many positional arguments"))
        self.assertTrue(messages[3].startswith("Invalid version '~big('"))
        self.assertEqual(messages[4], "Invalid version item 42: expected a dict or a string")

    def test_normalized_version_list(self) -> None:
        version = [None, {}, {"a.b": 1, "a": {"c": 2}}, " ~ big ( step = 5 ) ", "~greet('hello  world')", " x=1 "]
        self.assertEqual(
            normalize_version(version),
            [{"a": {"b": 1, "c": 2}}, "~big(step=5)", "~greet('hello  world')", "x=1"],
        )
        self.assertEqual(normalize_version("~big"), ["~big"])
        self.assertEqual(normalize_version(None), [])
        self.assertEqual(resolve(Counter, [" ~big ( 3 ) "]).version, ["~big(3)"])


class ValidationTest(unittest.TestCase):
    def issues(self, cls: type, *version: Any) -> list[dict[str, Any]]:
        return resolve(cls, list(version)).issues

    def test_every_problem_is_reported_at_once(self) -> None:
        issues = self.issues(Required, {"nope": 1, "size": "big"}, "~missing", "bad")
        self.assertEqual(
            sorted((issue["path"] or "", issue["message"]) for issue in issues),
            [
                ("", "Invalid version 'bad': use '~name' for a version method or 'key=value'"),
                ("", "Required has no version method 'version_missing'"),
                ("name", "Missing required field 'name'"),
                ("nope", "Unknown config key 'nope' (declared fields: name, size)"),
                ("size", "expected int, got str"),
            ],
        )

    def test_int_refuses_bool_and_float(self) -> None:
        self.assertEqual(self.issues(Typed, {"count": True}), [{"path": "count", "message": "expected int, got bool"}])
        self.assertEqual(self.issues(Typed, {"count": 1.5}), [{"path": "count", "message": "expected int, got float"}])

    def test_float_accepts_int_and_keeps_it(self) -> None:
        resolved = resolve(Typed, [{"rate": 2}])
        self.assertEqual(resolved.issues, [])
        self.assertEqual(type(resolved.config["rate"]), int)
        self.assertEqual(self.issues(Typed, {"rate": False}), [{"path": "rate", "message": "expected float, got bool"}])

    def test_scalars(self) -> None:
        self.assertEqual(self.issues(Typed, {"name": 3}), [{"path": "name", "message": "expected str, got int"}])
        self.assertEqual(self.issues(Typed, {"flag": 1}), [{"path": "flag", "message": "expected bool, got int"}])

    def test_optional_and_union(self) -> None:
        self.assertEqual(self.issues(Typed, {"maybe": 3, "either": None, "choice": "s"}), [])
        self.assertEqual(self.issues(Typed, {"maybe": "x"}), [{"path": "maybe", "message": "expected int | None, got str"}])
        self.assertEqual(self.issues(Typed, {"either": []}), [{"path": "either", "message": "expected int | None, got list"}])
        self.assertEqual(self.issues(Typed, {"choice": None}), [{"path": "choice", "message": "expected int | str, got None"}])

    def test_list_items_are_checked_with_their_index_in_the_path(self) -> None:
        self.assertEqual(self.issues(Typed, {"values": [1, "2"]}), [{"path": "values.1", "message": "expected int, got str"}])
        self.assertEqual(self.issues(Typed, {"values": {}}), [{"path": "values", "message": "expected list[int], got dict"}])

    def test_tuple_is_a_list_of_fixed_length(self) -> None:
        self.assertEqual(resolve(Typed, [{"pair": [3, 4]}]).config["pair"], [3, 4])
        self.assertEqual(self.issues(Typed, {"pair": [1]}), [{"path": "pair", "message": "expected 2 items, got 1"}])
        self.assertEqual(self.issues(Typed, {"pair": [1, "b"]}), [{"path": "pair.1", "message": "expected int, got str"}])

    def test_dict_values_are_checked(self) -> None:
        self.assertEqual(self.issues(Typed, {"weights": {"a": 1, "b": "x"}}), [{"path": "weights.b", "message": "expected float, got str"}])
        self.assertEqual(self.issues(Typed, {"weights": [1]}), [{"path": "weights", "message": "expected dict[str, float], got list"}])

    def test_literal(self) -> None:
        self.assertEqual(self.issues(Typed, {"mode": "slow"}), [])
        self.assertEqual(
            self.issues(Typed, {"mode": "medium"}), [{"path": "mode", "message": "expected one of 'fast', 'slow', got 'medium'"}]
        )

    def test_any_and_unchecked_annotations_accept_values(self) -> None:
        self.assertEqual(self.issues(Typed, {"anything": {"x": [1]}, "when": "2024-01-01"}), [])

    def test_nested_config_issues_carry_the_nested_path(self) -> None:
        self.assertEqual(
            self.issues(Counter, {"optimizer": {"lr": "fast", "nope": 1}}),
            [
                {"path": "optimizer.nope", "message": "Unknown config key 'nope' (declared fields: lr, momentum)"},
                {"path": "optimizer.lr", "message": "expected float, got str"},
            ],
        )
        self.assertEqual(self.issues(Counter, {"optimizer": 3}), [{"path": "optimizer", "message": "expected Optimizer, got int"}])
        self.assertEqual(
            self.issues(WithDataclass, {"inner": {"tags": [1]}}), [{"path": "inner.tags.0", "message": "expected str, got int"}]
        )

    def test_check_config_validates_a_resolved_config_literally(self) -> None:
        config, issues = check_config(Counter, {"start": 4})
        self.assertEqual((config["start"], config["step"], issues), (4, 1, []))
        _, issues = check_config(Counter, {"optimizer.lr": 1})
        self.assertEqual([issue["path"] for issue in issues], ["optimizer.lr"])


if pydantic is not None:

    class Schedule(pydantic.BaseModel):
        warmup: int = 0
        until: datetime.date = datetime.date(2024, 1, 1)

    class PydanticModel(Interface):
        class Config(pydantic.BaseModel):
            lr: float = 0.1
            layers: list[int] = [32]
            schedule: Schedule = Schedule()

        def version_fast(self) -> dict[str, Any]:
            return {"lr": self.config.lr * 10}

    class PydanticFree(Interface):
        class Config(pydantic.BaseModel):
            model_config = pydantic.ConfigDict(extra="allow")
            a: int = 1

    class PydanticStrict(Interface):
        class Config(pydantic.BaseModel):
            model_config = pydantic.ConfigDict(extra="forbid")
            a: int = 1


@unittest.skipIf(pydantic is None, "pydantic is not installed")
class PydanticConfigTest(unittest.TestCase):
    def test_resolved_config_is_the_json_model_dump(self) -> None:
        resolved = resolve(PydanticModel, ["~fast", {"schedule.warmup": 5}])
        self.assertEqual(resolved.issues, [])
        self.assertEqual(resolved.config, {"lr": 1.0, "layers": [32], "schedule": {"warmup": 5, "until": "2024-01-01"}})

    def test_validation_errors_map_to_issues_with_joined_locations(self) -> None:
        issues = resolve(PydanticModel, [{"layers": [1, "x"], "schedule": {"warmup": "soon"}}]).issues
        self.assertEqual(sorted(issue["path"] for issue in issues), ["layers.1", "schedule.warmup"])
        self.assertTrue(all(issue["message"] for issue in issues))

    def test_unknown_keys_are_rejected_unless_the_model_allows_extra(self) -> None:
        issues = resolve(PydanticModel, [{"nope": 1, "schedule": {"bad": 2}}]).issues
        self.assertEqual(
            issues,
            [
                {"path": "nope", "message": "Unknown config key 'nope' (declared fields: lr, layers, schedule)"},
                {"path": "schedule.bad", "message": "Unknown config key 'bad' (declared fields: warmup, until)"},
            ],
        )
        self.assertEqual(resolve(PydanticFree, [{"b": 2}]).config, {"a": 1, "b": 2})
        strict = resolve(PydanticStrict, [{"b": 2}]).issues
        self.assertEqual([issue["path"] for issue in strict], ["b"])  # reported once, by pydantic


if __name__ == "__main__":
    unittest.main()
