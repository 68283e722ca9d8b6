"""Search priors: the heuristic policy (rule priors, shared among a rule's choices at one site),
the uniform policy, and `load_policy`'s errors."""
from __future__ import annotations

from pathlib import Path

import pytest

from cuopt.errors import CuoptError, ModelError
from cuopt.rewrite.engine import Engine
from cuopt.search.policies import load_policy
from cuopt.search.policy import HeuristicPolicy, UniformPolicy
from tests.helpers import Action, Offer

RULE_PRIORS = {"vectorize": 0.9, "coarsen": 0.8, "restrict-const": 0.4, "block-size": 0.5}


def offer(rule: str, line: int = 2, choice: str = "") -> Offer:
    return Offer(Action(f"{rule}@{line}:1{'/' + choice if choice else ''}", rule, line))


def test_one_offer_per_rule_follows_the_rule_priors() -> None:
    offers = [offer("vectorize"), offer("coarsen"), offer("restrict-const")]
    priors = HeuristicPolicy(RULE_PRIORS).priors(None, offers)
    assert priors == pytest.approx([0.9 / 2.1, 0.8 / 2.1, 0.4 / 2.1])


def test_priors_sum_to_one() -> None:
    offers = ([offer("block-size", choice=f"block={b}") for b in (64, 128, 512, 1024)]
              + [offer("vectorize", choice=f"width={w}") for w in (2, 4)]
              + [offer("coarsen", line=7, choice=f"factor={f}") for f in (2, 4, 8)] + [offer("restrict-const")])
    priors = HeuristicPolicy(RULE_PRIORS).priors(None, offers)
    assert len(priors) == len(offers)
    assert sum(priors) == pytest.approx(1.0)
    assert all(p > 0 for p in priors)


def test_the_choices_of_one_rule_at_one_site_get_equal_priors() -> None:
    offers = [offer("block-size", choice=f"block={b}") for b in (64, 128, 512, 1024)] + [offer("restrict-const")]
    priors = HeuristicPolicy(RULE_PRIORS).priors(None, offers)
    assert len(set(round(p, 12) for p in priors[:4])) == 1


def test_a_rules_choices_at_one_site_weigh_its_prior_times_sqrt_k() -> None:
    """docs/optimize.md: each of a rule's k choices at a site gets prior / sqrt(k), so the rule
    weighs prior * sqrt(k) in all: more than one choice, far less than k independent rules."""
    policy = HeuristicPolicy(RULE_PRIORS)
    offers = [offer("block-size", choice=f"block={b}") for b in (64, 128, 512, 1024)] + [offer("restrict-const")]
    priors = policy.priors(None, offers)
    assert priors[:4] == pytest.approx([priors[0]] * 4)
    assert sum(priors[:4]) / priors[4] == pytest.approx(0.5 * 4 ** 0.5 / 0.4)


def test_the_same_rule_at_two_sites_is_two_groups() -> None:
    offers = [offer("coarsen", line=3), offer("coarsen", line=9), offer("restrict-const", line=1)]
    priors = HeuristicPolicy(RULE_PRIORS).priors(None, offers)
    assert priors == pytest.approx([0.8 / 2.0, 0.8 / 2.0, 0.4 / 2.0])


def test_a_rule_without_a_declared_prior_weighs_one() -> None:
    priors = HeuristicPolicy({"coarsen": 0.25}).priors(None, [offer("coarsen"), offer("mystery")])
    assert priors == pytest.approx([0.2, 0.8])


def test_all_zero_priors_fall_back_to_uniform() -> None:
    priors = HeuristicPolicy({"a": 0.0, "b": 0.0}).priors(None, [offer("a"), offer("b"), offer("b", line=5)])
    assert priors == pytest.approx([1 / 3] * 3)


def test_no_offers_no_priors() -> None:
    assert HeuristicPolicy(RULE_PRIORS).priors(None, []) == []
    assert UniformPolicy().priors(None, []) == []


def test_uniform_ignores_the_rules() -> None:
    offers = [offer("vectorize"), offer("block-size", choice="block=64"), offer("block-size", choice="block=128")]
    assert UniformPolicy().priors(None, offers) == pytest.approx([1 / 3] * 3)


def test_shipped_policies_have_no_value_estimate() -> None:
    assert HeuristicPolicy(RULE_PRIORS).value(None) is None
    assert UniformPolicy().value(None) is None


def test_load_policy_by_name() -> None:
    heuristic = load_policy("heuristic", {"coarsen": 3.0})
    assert isinstance(heuristic, HeuristicPolicy) and heuristic.name == "heuristic"
    assert heuristic.priors(None, [offer("coarsen"), offer("other")]) == pytest.approx([0.75, 0.25])
    uniform = load_policy("uniform", {"coarsen": 3.0})
    assert isinstance(uniform, UniformPolicy) and uniform.name == "uniform"


def test_the_shipped_rules_declare_the_priors_the_policy_reads() -> None:
    rules = Engine.default().rules
    policy = load_policy("heuristic", {r.id: r.prior for r in rules.values()})
    offers = [offer(rule) for rule in sorted(rules)]
    priors = dict(zip(sorted(rules), policy.priors(None, offers)))
    assert max(priors, key=priors.__getitem__) == max(rules, key=lambda r: rules[r].prior)


def test_load_policy_refuses_an_unknown_name() -> None:
    with pytest.raises(CuoptError) as err:
        load_policy("greedy", {})
    assert str(err.value) == "--policy 'greedy': expected one of heuristic, uniform, learned or a model file"


def test_load_policy_reads_a_file_as_a_learned_model(tmp_path: Path) -> None:
    """test_learned.py covers the learned policy; a file that is not a model is a ModelError."""
    model = tmp_path / "policy.onnx"
    model.write_bytes(b"\0")
    with pytest.raises(ModelError, match=r"policy\.onnx: no metadata file policy\.json beside it"):
        load_policy(str(model), {})
    model.with_suffix(".json").write_text('{"format": "cuopt-policy", "format_version": 2}')
    with pytest.raises(ModelError, match=r"policy\.onnx: not a cuopt model file \(shorter than a header length\)"):
        load_policy(str(model), {})


def test_the_shipped_policies_need_no_binding() -> None:
    for policy in (HeuristicPolicy(RULE_PRIORS), UniformPolicy()):
        assert policy.bind(None, "saxpy", frozenset(), None) is policy
