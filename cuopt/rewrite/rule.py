"""Rules as data: one folder per rule in rules/ (rules/<id>/rule.toml, with its cases beside it),
found by looking, validated on load (unknown keys are errors)."""
from __future__ import annotations

import itertools
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cuopt.errors import CuoptError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

RULE_KEYS = {"id", "title", "why", "transform", "prior", "changes_launch", "lint", "once", "requires", "params",
             "match", "fix", "tests"}
MATCH_KEYS = {"query", "capture", "conditions", "when"}
FIX_KEYS = {"insert_line_before", "replace", "render"}
TEST_KEYS = {"name", "params", "before", "after", "refuse", "reason", "launch", "expect_launch", "spec", "options"}


class RuleError(CuoptError):
    """A rule file that does not follow the schema."""


@dataclass(frozen=True)
class RuleTest:
    name: str
    before: str
    params: dict[str, Any] | None = None
    after: str | None = None
    refuse: bool = False
    launch: dict[str, Any] | None = None
    expect_launch: dict[str, Any] | None = None
    spec: str | None = None
    options: tuple[str, ...] = ()
    reason: str | None = None  # a must-not case: the gist of why the rule refuses it


@dataclass(frozen=True)
class Rule:
    id: str
    title: str
    why: str
    transform: str
    path: Path
    prior: float = 1.0
    changes_launch: bool = False
    lint: bool = False  # `cuopt check` reports its sites as findings
    once: bool = False  # the search applies it at most once per sequence
    requires: tuple[str, ...] = ()  # opt-in options (e.g. "fast-math")
    params: dict[str, tuple[Any, ...]] = field(default_factory=dict)
    match: dict[str, Any] = field(default_factory=dict)
    fix: dict[str, Any] = field(default_factory=dict)
    tests: tuple[RuleTest, ...] = ()

    def param_sets(self) -> list[dict[str, Any]]:
        """The cartesian product of the declared parameter choices (one empty set when none)."""
        names = list(self.params)
        return [dict(zip(names, combo)) for combo in itertools.product(*(self.params[n] for n in names))]


RULE_FILE = "rule.toml"


def load_rule(path: Path) -> Rule:
    """The rule of `path`, a folder's rule.toml (rules/<id>/rule.toml)."""
    where = f"{path.parent.name}/{path.name}"
    try:
        raw = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as exc:
        raise RuleError(f"{where}: not valid TOML: {exc}") from None
    unknown = set(raw) - RULE_KEYS
    if unknown:
        raise RuleError(f"{where}: unknown key {sorted(unknown)[0]!r}; expected: {', '.join(sorted(RULE_KEYS))}")
    for key in ("id", "title", "why", "transform"):
        if not isinstance(raw.get(key), str) or not raw[key].strip():
            raise RuleError(f"{where}: {key}: required, a non-empty string")
    if path.parent.name != raw["id"]:
        raise RuleError(f"{where}: id {raw['id']!r} must match the folder's name")
    params = raw.get("params", {})
    if not isinstance(params, dict) or not all(isinstance(v, list) and v for v in params.values()):
        raise RuleError(f"{where}: params: expected a table of non-empty lists of choices")
    match, fix = raw.get("match", {}), raw.get("fix", {})
    if set(match) - MATCH_KEYS:
        raise RuleError(f"{where}: match: unknown key {sorted(set(match) - MATCH_KEYS)[0]!r}")
    if set(fix) - FIX_KEYS:
        raise RuleError(f"{where}: fix: unknown key {sorted(set(fix) - FIX_KEYS)[0]!r}")
    if raw["transform"] == "template" and ("query" not in match or not fix):
        raise RuleError(f"{where}: a template rule needs [match] query and a [fix]")
    tests = []
    for i, t in enumerate(raw.get("tests", [])):
        if set(t) - TEST_KEYS:
            raise RuleError(f"{where}: tests[{i}]: unknown key {sorted(set(t) - TEST_KEYS)[0]!r}")
        if "name" not in t or "before" not in t or ("after" not in t and not t.get("refuse")):
            raise RuleError(f"{where}: tests[{i}]: needs name, before, and after (or refuse = true)")
        if "reason" in t and not t.get("refuse"):
            raise RuleError(f"{where}: tests[{i}]: reason goes with refuse = true (why the rule refuses it)")
        tests.append(RuleTest(t["name"], t["before"], t.get("params"), t.get("after"), bool(t.get("refuse")),
                              t.get("launch"), t.get("expect_launch"), t.get("spec"), tuple(t.get("options", ())),
                              t.get("reason")))
    return Rule(raw["id"], raw["title"].strip(), raw["why"].strip(), raw["transform"], path,
                float(raw.get("prior", 1.0)), bool(raw.get("changes_launch", False)), bool(raw.get("lint", False)),
                bool(raw.get("once", False)), tuple(raw.get("requires", ())), {k: tuple(v) for k, v in params.items()}, match, fix, tuple(tests))


def rule_folders(directory: Path) -> list[Path]:
    """Every folder of `directory` that holds a rule.toml: the rules, by id."""
    return sorted(path.parent for path in directory.glob(f"*/{RULE_FILE}"))


def load_rules(directory: Path) -> dict[str, Rule]:
    rules = {}
    for folder in rule_folders(directory):
        rule = load_rule(folder / RULE_FILE)
        rules[rule.id] = rule
    return rules
