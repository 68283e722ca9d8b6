"""Every rule's own tests (rules/*.toml [[tests]]): snippets it must rewrite, exactly, and
snippets it must leave alone."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

from cuopt.resources import data_dir
from cuopt.rewrite.context import Context
from cuopt.rewrite.engine import CRASHED, Engine
from cuopt.rewrite.rule import RuleTest, load_rules
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


def test_every_rule_has_tests_both_ways():
    for rule_id, rule in RULES.items():
        assert any(not t.refuse for t in rule.tests), f"{rule_id} has no test it must rewrite"
        assert any(t.refuse for t in rule.tests), f"{rule_id} has no test it must leave alone"


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
        return
    assert len(offers) == 1, f"expected one rewrite, got {[o.action.id for o in offers]}"
    got = offers[0].result.source.decode()
    assert got.strip("\n") == test.after.strip("\n"), got
    if test.expect_launch is not None:
        assert offers[0].result.launch == _launch(test.expect_launch), offers[0].result.launch.describe()
