"""Every rule's own tests (rules/<id>/rule.toml [[tests]]): snippets it must rewrite, exactly, and
snippets it must leave alone, for the reason they give."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

from cuopt.resources import data_dir
from cuopt.rewrite.context import Context
from cuopt.rewrite.engine import CRASHED, Engine
from cuopt.rewrite.rule import RULE_FILE, RuleTest, load_rule, load_rules, rule_folders
from cuopt.source.kernels import load
from cuopt.spec import expr as E
from cuopt.spec.model import Launch, parse
from cuopt.targets import default_instance

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

RULES = load_rules(data_dir("rules"))
CASES = [(rule_id, t) for rule_id, rule in RULES.items() for t in rule.tests]
DEFAULT_LAUNCH = {"block": [256], "grid": ["cdiv(n, block.x)"]}


def _launch(raw: dict | None) -> Launch:
    raw = raw or DEFAULT_LAUNCH
    return Launch(tuple(raw["block"]), tuple(E.parse(g) for g in raw["grid"]), E.parse(raw.get("shared", 0)))


def context_for(test: RuleTest) -> Context:
    """The snippet's kernel; a template kernel as the first instantiation the snippet makes, if any."""
    source = test.before.strip("\n") + "\n"
    file = load(source)
    kernels = file.kernels
    assert len(kernels) == 1, "a rule test snippet holds exactly one kernel"
    name = kernels[0].name
    instance = default_instance(file, kernels[0]) if kernels[0].template else None
    if instance is not None:
        name = instance.entry
    spec = None
    if test.spec:
        spec = parse(tomllib.loads(test.spec), Path("test.cuopt.toml")).kernels[kernels[0].name]
    launch = spec.launch if spec is not None and test.launch is None else _launch(test.launch)
    return Context(source.encode(), launch, name, spec, frozenset(test.options))


def missing_cases(folder: Path) -> list[str]:
    """What the rule of `folder` lacks among its [[tests]]: a must case, a must-not case, reasons."""
    rule = load_rule(folder / RULE_FILE)
    out = []
    if not any(not t.refuse for t in rule.tests):
        out.append(f"rules/{folder.name} has no case it must rewrite")
    if not any(t.refuse for t in rule.tests):
        out.append(f"rules/{folder.name} has no case it must leave alone")
    unexplained = [t.name for t in rule.tests if t.refuse and not t.reason]
    if unexplained:
        out.append(f"rules/{folder.name}: must-not cases without a reason: {unexplained}")
    return out


@pytest.mark.parametrize("folder", rule_folders(data_dir("rules")), ids=lambda f: f.name)
def test_every_rule_folder_has_must_and_must_not_cases(folder: Path) -> None:
    assert not missing_cases(folder)


MUST = '[[tests]]\nname = "must"\nbefore = "__global__ void k() {}"\nafter = "__global__ void k() {}"\n'
MUST_NOT = '[[tests]]\nname = "must-not"\nrefuse = true\nbefore = "__global__ void k() {}"\n'


@pytest.mark.parametrize("tests,missing", [
    ("", ["no case it must rewrite", "no case it must leave alone"]),
    (MUST, ["no case it must leave alone"]),
    (MUST_NOT + 'reason = "why"\n', ["no case it must rewrite"]),
    (MUST + MUST_NOT, ["must-not cases without a reason: ['must-not']"]),
    (MUST + MUST_NOT + 'reason = "why"\n', []),
], ids=["none", "no must-not", "no must", "no reason", "both"])
def test_a_folder_without_must_or_must_not_cases_is_reported(tmp_path: Path, tests: str, missing: list[str]) -> None:
    folder = tmp_path / "probe"
    folder.mkdir()
    (folder / RULE_FILE).write_text(f'id = "probe"\ntitle = "t"\nwhy = "w"\ntransform = "probe"\n{tests}')
    found = missing_cases(folder)
    assert len(found) == len(missing) and all(m in f for m, f in zip(missing, found)), found


def test_every_folder_of_rules_is_a_rule() -> None:
    assert sorted(RULES) == sorted(f.name for f in data_dir("rules").iterdir() if f.is_dir())


@pytest.mark.parametrize("rule_id,test", CASES, ids=[f"{r}:{t.name}" for r, t in CASES])
def test_rule(rule_id: str, test: RuleTest) -> None:
    engine = Engine(RULES)
    ctx = context_for(test)
    refusals: list = []
    offers = engine.offers(ctx, only={rule_id}, refusals=refusals)
    assert not [r.reason for r in refusals if CRASHED in r.reason]
    if test.params is not None:
        offers = [o for o in offers if o.action.param_dict == test.params]
    if test.refuse:
        assert not offers, f"expected no rewrite, got {[o.action.id for o in offers]}"
        reasons = [r.reason for r in refusals]
        assert any(test.reason in r for r in reasons), f"no refusal says {test.reason!r}: {reasons}"
        return
    assert len(offers) == 1, f"expected one rewrite, got {[o.action.id for o in offers]}"
    got = offers[0].result.source.decode()
    assert got.strip("\n") == test.after.strip("\n"), got
    if test.expect_launch is not None:
        assert offers[0].result.launch == _launch(test.expect_launch), offers[0].result.launch.describe()
