"""MCTS over a deterministic stand-in environment (pure Python): selection, expansion and backup,
PUCT with priors, failures, duplicates, depth, every stop reason, the cache, reproducibility;
search options and durations."""
from __future__ import annotations

import math
import time
from typing import Any, Callable, Sequence

import pytest

from cuopt.errors import CuoptError
from cuopt.search.budget import Budget, parse_duration
from cuopt.search.mcts import MCTS, Measurement, Node, SearchOptions
from cuopt.search.policy import UniformPolicy
from tests.helpers import Action, Offer

BASELINE_MS = 10.0
# time factor of each action (states are tuples of action names; a state's time is the baseline
# times the factors of its actions, so the order does not matter and (a, b) == (b, a))
FACTORS = {"a": 0.8, "b": 0.9, "e": 0.97, "f": 0.99, "g": 1.05, "h": 1.1}
# an action that breaks the kernel, and how
FAILS = {"c": "wrong-answer", "d": "compile-error"}
RULES = {a: f"rule-{a}" for a in "abcdefgh"}
LINES = {a: i + 1 for i, a in enumerate("abcdefgh")}

State = tuple[str, ...]


def state_key(state: State) -> str:
    return "+".join(sorted(state)) or "original"


def table_time(state: State) -> Measurement:
    """The fixed table: a failing action fails the variant, otherwise the product of factors."""
    for a in state:
        if a in FAILS:
            return Measurement(FAILS[a], None, detail=f"{a} breaks it")
    return Measurement("ok", BASELINE_MS * math.prod(FACTORS[a] for a in state), 0.01)


class TableEnv:
    """Offers every action not yet applied; measures from the table; records what it was asked."""

    def __init__(self, actions: str = "abcd", cached: set[str] | frozenset[str] = frozenset(),
                 delay_s: float = 0.0, honour_budget: bool = False,
                 probe: Callable[[Sequence[State]], None] | None = None) -> None:
        self.actions = actions
        self.probe = probe
        self.cached = set(cached)
        self.delay_s = delay_s
        self.honour_budget = honour_budget
        self.evaluated: list[State] = []
        self.batches: list[list[State]] = []
        self.expanded: list[tuple[State, list[str]]] = []

    def key(self, state: State) -> str:
        return state_key(state)

    def expand(self, state: State, history: list[str]) -> list[tuple[Any, State]]:
        self.expanded.append((state, list(history)))
        return [(Offer(Action(f"{a}@{LINES[a]}", RULES[a], LINES[a])), state + (a,))
                for a in self.actions if a not in state]

    def evaluate(self, states: Sequence[State], budget: Budget) -> list[Measurement | None]:
        self.batches.append(list(states))
        if self.probe is not None:
            self.probe(states)
        out: list[Measurement | None] = []
        for s in states:
            if self.honour_budget and budget.exhausted():
                out.append(None)
                continue
            time.sleep(self.delay_s)
            self.evaluated.append(s)
            m = table_time(s)
            if state_key(s) in self.cached:
                m.extra["cached"] = True
            out.append(m)
        return out


class PriorTable:
    """Priors from a table by action name (unlisted actions weigh `rest`), normalised."""

    name = "table"

    def __init__(self, weights: dict[str, float], rest: float = 0.0, value: float | None = None) -> None:
        self.weights, self.rest, self.v = weights, rest, value

    def priors(self, state: Any, offers: Sequence[Any]) -> list[float]:
        w = [self.weights.get(o.action.id.split("@")[0], self.rest) for o in offers]
        total = sum(w)
        return [x / total for x in w] if total > 0 else [1.0 / len(w)] * len(w)

    def value(self, state: Any) -> float | None:
        return self.v


def search(env: TableEnv, policy: Any = None, seed: int = 0,
           on_evaluated: Callable[[Node], None] | None = None, **options: Any) -> MCTS:
    return MCTS(env, policy or UniformPolicy(), (), Measurement("ok", BASELINE_MS), SearchOptions(**options),
                seed=seed, on_evaluated=on_evaluated)


def budget(seconds: float = 60.0, max_evals: int | None = None) -> Budget:
    return Budget(seconds, max_evals)


def node_for(mcts: MCTS, state: State) -> Node:
    return next(n for n in mcts.nodes if n.state == state)


# -- selection, expansion, backup -------------------------------------------------------------------------

def test_the_first_evaluation_is_backed_up_along_its_path() -> None:
    env = TableEnv()
    mcts = search(env, PriorTable({"b": 1.0}), batch=1)
    assert mcts.run(budget(max_evals=1)) == "reached --max-evals 1"
    assert env.evaluated == [("b",)]
    root = mcts.root
    assert [c.state for c in root.children or []] == [("a",), ("b",), ("c",), ("d",)]
    assert [c.prior for c in root.children or []] == [0.0, 1.0, 0.0, 0.0]
    b = node_for(mcts, ("b",))
    expected = math.log(BASELINE_MS / 9.0)
    assert b.visits == 1 and b.value_sum == pytest.approx(expected) and b.best == pytest.approx(expected)
    assert root.visits == 1 and root.value_sum == pytest.approx(expected)
    assert b.children is None, "a leaf is expanded only when the search passes through it"
    assert all(c.visits == 0 and c.value_sum == 0 for c in root.children or [] if c is not b)
    assert not any(n.pending for n in mcts.nodes)


def test_the_search_descends_into_the_child_it_has_measured() -> None:
    env = TableEnv()
    mcts = search(env, PriorTable({"b": 1.0}), batch=1)
    mcts.run(budget(max_evals=2))
    assert env.evaluated[0] == ("b",)
    assert len(env.evaluated[1]) == 2 and env.evaluated[1][0] == "b"
    assert env.expanded[1] == (("b",), ["rule-b"]), "expand gets the rules of the path so far"


def test_all_prior_on_one_action_evaluates_that_action_first() -> None:
    for action in "abd":
        env = TableEnv()
        search(env, PriorTable({action: 1.0}), batch=1).run(budget(max_evals=1))
        assert env.evaluated == [(action,)]


def test_puct_takes_unvisited_children_by_prior_within_a_batch() -> None:
    env = TableEnv()
    mcts = search(env, PriorTable({"a": 0.1, "b": 0.3, "c": 0.5, "d": 0.1}), batch=3)
    mcts.run(budget(max_evals=3))
    assert env.batches[0][:2] == [("c",), ("b",)]
    assert env.batches[0][2] in {("a",), ("d",)}


class RuleEnv(TableEnv):
    """a, b and e are variants of one rule, f another."""

    def expand(self, state: State, history: list[str]) -> list[tuple[Any, State]]:
        return [(Offer(Action(f"{a}@{LINES[a]}", "x" if a in "abe" else "y", LINES[a])), state + (a,))
                for a in self.actions if a not in state]


@pytest.mark.parametrize("spread,first", [(1.0, [("a",), ("b",)]), (0.5, [("a",), ("f",)])])
def test_rule_spread_takes_other_rules_into_a_batch(spread: float, first: list[State]) -> None:
    env = RuleEnv(actions="abef")
    mcts = search(env, PriorTable({"a": 0.28, "b": 0.27, "e": 0.25, "f": 0.2}), batch=2, rule_spread=spread)
    mcts.run(budget(max_evals=2))
    assert env.batches[0] == first
    assert not any(n.pending for n in mcts.nodes)


def test_pending_leaves_carry_a_virtual_loss_while_they_are_measured() -> None:
    seen: list[tuple[int, float, list[tuple[bool, int, float]]]] = []
    env = TableEnv(probe=lambda states: seen.append((
        mcts.root.visits, mcts.root.value_sum,
        [(n.pending, n.visits, n.value_sum) for n in mcts.root.children or []])))
    mcts = search(env, PriorTable({"a": 0.4, "b": 0.3, "c": 0.2, "d": 0.1}), batch=3)
    mcts.run(budget(max_evals=3))
    assert seen[0] == (3, -3.0, [(True, 1, -1.0), (True, 1, -1.0), (True, 1, -1.0), (False, 0, 0.0)])
    a, b, c = (node_for(mcts, (x,)) for x in "abc")
    assert [(n.pending, n.visits) for n in (a, b, c)] == [(False, 1), (False, 1), (False, 1)]
    assert mcts.root.visits == 3
    assert mcts.root.value_sum == pytest.approx(math.log(10 / 8) + math.log(10 / 9) - 1.0)


@pytest.mark.parametrize("fpu, second", [(0.0, ("b",)), (10.0, ("a", "b"))])
def test_first_play_urgency_decides_between_a_new_child_and_going_deeper(fpu: float, second: State) -> None:
    env = TableEnv()
    search(env, PriorTable({"a": 0.6, "b": 0.4}), batch=1, fpu_reduction=fpu).run(budget(max_evals=2))
    assert env.evaluated[0] == ("a",)
    if len(second) == 1:
        assert env.evaluated[1] == second
    else:
        assert env.evaluated[1][0] == "a" and len(env.evaluated[1]) == 2


def test_backup_invariants_hold_for_a_whole_search() -> None:
    env = TableEnv()
    mcts = search(env, max_depth=3, batch=4)
    assert mcts.run(budget()) == "every reachable variant was evaluated"
    for n in mcts.nodes:
        settled = 0 if n is mcts.root or n.measurement is None else 1
        own = mcts.reward(n) if settled else 0.0
        children = n.children or []
        assert n.visits == settled + sum(c.visits for c in children), n.sequence
        assert n.value_sum == pytest.approx(own + sum(c.value_sum for c in children)), n.sequence
        below = [own] * settled + [c.best for c in children if c.visits]
        if below:
            assert n.best == pytest.approx(max(below)), n.sequence
        assert not n.pending


def test_the_best_node_is_the_fastest_state() -> None:
    env = TableEnv()
    mcts = search(env, max_depth=2)
    mcts.run(budget())
    best = mcts.best(3)
    assert [state_key(n.state) for n in best] == ["a+b", "a", "b"]
    assert best[0].measurement is not None and best[0].measurement.ms == pytest.approx(7.2)
    assert mcts.reward(best[0]) == pytest.approx(math.log(10.0 / 7.2))
    everything = mcts.best(100)
    assert len({n.key for n in everything}) == len(everything), "one node per distinct variant"
    assert everything[-1] is mcts.root, "the original is slower than every successful variant"


def test_best_includes_the_root_when_nothing_is_faster() -> None:
    env = TableEnv(actions="gh")
    mcts = search(env, max_depth=1)
    mcts.run(budget())
    assert mcts.best(1) == [mcts.root]


def test_the_policy_value_is_added_for_successful_leaves_only() -> None:
    env = TableEnv()
    mcts = search(env, PriorTable({}, rest=1.0, value=2.0), max_depth=1, value_weight=0.5)
    mcts.run(budget())
    a, c = node_for(mcts, ("a",)), node_for(mcts, ("c",))
    assert a.value_sum == pytest.approx(math.log(10 / 8) + 1.0)
    assert c.value_sum == pytest.approx(-1.0)


@pytest.mark.parametrize("prune_value, expanded", [(0.01, {"a"}), (0.0, {"a", "g"})])
def test_the_value_head_prunes_slower_variants_it_predicts_nothing_below(prune_value: float,
                                                                      expanded: set[str]) -> None:
    env = TableEnv(actions="agf")  # a faster, g slower, f barely faster
    mcts = search(env, PriorTable({}, rest=1.0, value=0.0), max_depth=2, prune_value=prune_value)
    stop = mcts.run(budget())
    children = {n.action.split("@")[0]: n for n in mcts.root.children or []}
    assert {k for k, n in children.items() if n.children is not None} >= expanded
    assert (children["g"].children is None) == ("g" not in expanded)
    assert children["g"].pruned == ("g" not in expanded)
    assert not children["a"].pruned and not children["f"].pruned  # faster than the original: kept
    if prune_value:
        assert stop == "every reachable variant was evaluated (1 not expanded: the value head predicted no further gain)"


def test_a_policy_without_a_value_head_prunes_nothing() -> None:
    mcts = search(TableEnv(actions="agf"), UniformPolicy(), max_depth=2)
    assert mcts.run(budget()) == "every reachable variant was evaluated"
    assert not any(n.pruned for n in mcts.nodes)


def test_a_predicted_gain_keeps_a_slower_variant_open() -> None:
    mcts = search(TableEnv(actions="agf"), PriorTable({}, rest=1.0, value=0.5), max_depth=2)
    mcts.run(budget())
    assert not any(n.pruned for n in mcts.nodes)


def test_the_baseline_must_be_a_successful_measurement() -> None:
    with pytest.raises(ValueError, match="the baseline must be a successful measurement"):
        MCTS(TableEnv(), UniformPolicy(), (), Measurement("wrong-answer"))


# -- failures, duplicates, depth ----------------------------------------------------------------------------

def test_failures_get_the_penalty_keep_their_status_and_are_never_expanded() -> None:
    env = TableEnv()
    mcts = search(env, max_depth=3, failure_penalty=-0.5)
    mcts.run(budget())
    failed = [n for n in mcts.nodes if n.measurement is not None and not n.measurement.ok]
    assert {state_key(n.state) for n in failed} >= {"c", "d", "a+c", "a+d", "b+c", "b+d"}
    for n in failed:
        expected = FAILS["c"] if "c" in n.state else FAILS["d"]
        assert n.measurement is not None and n.measurement.status == expected
        assert mcts.reward(n) == -0.5
        assert n.children is None and n.exhausted
        if n.duplicate_of is None:
            assert n.value_sum == pytest.approx(-0.5) and n.visits == 1
    assert not [s for s, _ in env.expanded if {"c", "d"} & set(s)], "a failed variant was expanded"


def test_a_variant_reached_by_two_orders_is_evaluated_once() -> None:
    env = TableEnv()
    mcts = search(env, max_depth=2, batch=8)
    assert mcts.run(budget()) == "every reachable variant was evaluated"
    keys = [state_key(s) for s in env.evaluated]
    assert len(keys) == len(set(keys)), keys
    assert sorted(keys) == sorted(["a", "b", "c", "d", "a+b", "a+c", "a+d", "b+c", "b+d"])
    for batch in env.batches:
        assert len({state_key(s) for s in batch}) == len(batch), "a batch measured one variant twice"
    assert mcts.evaluations == 9
    assert mcts.duplicates == 1
    ab, ba = node_for(mcts, ("a", "b")), node_for(mcts, ("b", "a"))
    dup, original = (ab, ba) if ab.duplicate_of is not None else (ba, ab)
    assert dup.duplicate_of == original.index and original.duplicate_of is None
    assert dup.measurement is original.measurement


def test_duplicates_below_a_duplicate_are_not_measured_again() -> None:
    env = TableEnv()
    mcts = search(env, max_depth=3)
    mcts.run(budget())
    keys = [state_key(s) for s in env.evaluated]
    assert len(keys) == len(set(keys)) == 11
    assert mcts.duplicates == 3  # b+a, and a+b+c / a+b+d reached through it


@pytest.mark.parametrize("depth, evaluations", [(1, 4), (2, 9)])
def test_max_depth_is_respected(depth: int, evaluations: int) -> None:
    env = TableEnv()
    mcts = search(env, max_depth=depth)
    assert mcts.run(budget()) == "every reachable variant was evaluated"
    assert max(n.depth for n in mcts.nodes) == depth
    assert max(len(s) for s in env.evaluated) == depth
    assert all(len(s) < depth for s, _ in env.expanded), "a variant at the maximum depth was expanded"
    assert mcts.evaluations == evaluations


# -- stopping ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("max_evals, batch, batches", [(3, 8, [3]), (5, 4, [4, 1]), (7, 2, [2, 2, 2, 1])])
def test_max_evals_stops_without_evaluating_more(max_evals: int, batch: int, batches: list[int]) -> None:
    env = TableEnv(actions="abcdefgh")
    b = budget(max_evals=max_evals)
    mcts = search(env, batch=batch)
    assert mcts.run(b) == f"reached --max-evals {max_evals}"
    assert [len(x) for x in env.batches] == batches
    assert len(env.evaluated) == mcts.evaluations == b.evaluations == max_evals


def test_the_time_budget_stops_the_search() -> None:
    env = TableEnv(actions="abefgh", delay_s=0.01)
    b = budget(seconds=0.05)
    start = time.monotonic()
    reason = search(env, batch=2).run(b)
    assert reason == "the time budget ran out"
    assert time.monotonic() - start < 2.0
    assert 1 <= len(env.evaluated) < 100


def test_variants_not_measured_before_the_deadline_do_not_count() -> None:
    env = TableEnv(actions="abefgh", delay_s=0.06, honour_budget=True)
    mcts = search(env, batch=8)
    assert mcts.run(budget(seconds=0.2)) == "the time budget ran out"
    assert len(env.batches[0]) == 6
    measured = [n for n in mcts.nodes if n.measurement is not None and n is not mcts.root]
    assert 1 <= len(env.evaluated) < 6
    assert mcts.evaluations == len(env.evaluated) == len(measured)
    assert not any(n.pending for n in mcts.nodes)


def test_an_exhausted_tree_stops_the_search() -> None:
    env = TableEnv()
    b = budget(max_evals=1000)
    assert search(env, max_depth=2).run(b) == "every reachable variant was evaluated"
    assert b.evaluations == 9


def test_a_tree_without_rewrites_is_exhausted_at_once() -> None:
    env = TableEnv(actions="")
    mcts = search(env)
    assert mcts.run(budget()) == "every reachable variant was evaluated"
    assert env.batches == [] and mcts.root.exhausted


def test_ctrl_c_stops_after_the_current_batch_with_its_reason() -> None:
    env = TableEnv(actions="abcdefgh")
    b = budget()
    reason = "interrupted (Ctrl-C); confirming the best so far"

    def progress(m: MCTS) -> None:
        b.stopped = reason

    mcts = search(env, batch=3)
    assert mcts.run(b, progress) == reason
    assert len(env.batches) == 1 and mcts.evaluations == 3


def test_a_stopped_budget_evaluates_nothing() -> None:
    env = TableEnv()
    b = budget()
    b.stopped = "interrupted"
    assert search(env).run(b) == "interrupted"
    assert env.evaluated == []


# -- the measurement cache -----------------------------------------------------------------------------------

def test_cached_measurements_do_not_count_as_evaluations() -> None:
    everything = {"a", "b", "c", "d", "a+b", "a+c", "a+d", "b+c", "b+d"}
    env = TableEnv(cached=everything)
    b = budget(max_evals=2)
    mcts = search(env, max_depth=2)
    assert mcts.run(b) == "every reachable variant was evaluated"
    assert mcts.evaluations == 0 and b.evaluations == 0
    assert len(env.evaluated) == 9


def test_only_fresh_measurements_count_towards_max_evals() -> None:
    env = TableEnv(cached={"a", "b", "c", "d"})
    b = budget(max_evals=2)
    mcts = search(env, max_depth=2, batch=2)
    assert mcts.run(b) == "reached --max-evals 2"
    fresh = [s for s in env.evaluated if state_key(s) not in env.cached]
    assert len(fresh) == mcts.evaluations == b.evaluations == 2


def test_on_evaluated_is_called_for_each_measured_variant() -> None:
    seen: list[State] = []
    env = TableEnv()
    search(env, max_depth=2, on_evaluated=lambda n: seen.append(n.state)).run(budget())
    assert seen == env.evaluated


# -- reproducibility -----------------------------------------------------------------------------------------

def test_the_same_seed_and_measurements_give_the_same_search() -> None:
    runs = []
    for _ in range(2):
        env = TableEnv(actions="abcdefgh")
        mcts = search(env, seed=3, batch=3)
        mcts.run(budget(max_evals=30))
        runs.append((env.evaluated, [n.sequence for n in mcts.best(5)]))
    assert runs[0] == runs[1]


def test_the_seed_breaks_ties() -> None:
    firsts = set()
    for seed in range(8):
        env = TableEnv(actions="abefgh")
        search(env, seed=seed, batch=1).run(budget(max_evals=1))
        firsts.add(env.evaluated[0])
    assert len(firsts) > 1, "uniform priors: the seed should decide which child comes first"


# -- search options ------------------------------------------------------------------------------------------

def test_search_options_from_pairs() -> None:
    opts = SearchOptions.from_pairs(["c-puct=2", "max-depth=3", "failure_penalty=-2.5", "batch = 4"])
    assert opts.c_puct == 2.0 and isinstance(opts.c_puct, float)
    assert opts.max_depth == 3 and isinstance(opts.max_depth, int)
    assert opts.failure_penalty == -2.5
    assert opts.batch == 4
    assert SearchOptions.from_pairs([]) == SearchOptions()


@pytest.mark.parametrize("pair", ["speed=3", "c-puct", "=2"])
def test_search_options_refuse_unknown_keys(pair: str) -> None:
    with pytest.raises(CuoptError) as err:
        SearchOptions.from_pairs([pair])
    message = str(err.value)
    assert message.startswith(f"--search-option {pair!r}: expected KEY=VALUE with KEY one of ")
    assert "c-puct, max-depth, batch, failure-penalty, fpu-reduction, value-weight" in message


@pytest.mark.parametrize("pair, raw, kind", [("max-depth=2.5", "2.5", "int"), ("c-puct=fast", "fast", "float"),
                                             ("batch=", "", "int")])
def test_search_options_refuse_bad_values(pair: str, raw: str, kind: str) -> None:
    with pytest.raises(CuoptError) as err:
        SearchOptions.from_pairs([pair])
    assert str(err.value) == f"--search-option {pair!r}: {raw!r} is not a {kind}"


@pytest.mark.parametrize("pair", ["batch=0", "batch=-1"])
def test_search_options_refuse_a_batch_that_evaluates_nothing(pair: str) -> None:
    """A batch of 0 (or less) selects no leaf: the search would spin, measuring nothing, until the
    whole time budget is gone."""
    with pytest.raises(CuoptError, match=r"--search-option 'batch="):
        SearchOptions.from_pairs([pair])


@pytest.mark.parametrize("pair", ["rule-spread=0", "rule-spread=1.5", "rule-spread=-0.5"])
def test_search_options_refuse_a_rule_spread_outside_0_to_1(pair: str) -> None:
    with pytest.raises(CuoptError, match=r"must be in \(0, 1\]"):
        SearchOptions.from_pairs([pair])
    assert SearchOptions.from_pairs(["rule-spread=0.5"]).rule_spread == 0.5


# -- durations -----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("text, seconds", [("30s", 30), ("10m", 600), ("1h", 3600), ("1h30m", 5400), ("90", 90),
                                           (" 2M ", 120), ("1.5m", 90), ("0.5", 0.5)])
def test_parse_duration(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text, why", [("10x", "expected a duration such as 30s, 10m or 1h"),
                                       ("-1m", "expected a duration such as 30s, 10m or 1h"),
                                       ("", "expected a duration such as 30s, 10m or 1h"),
                                       ("1m1x", "expected a duration such as 30s, 10m or 1h"),
                                       ("0s", "must be positive"), ("0m0s", "must be positive")])
def test_parse_duration_errors(text: str, why: str) -> None:
    with pytest.raises(CuoptError) as err:
        parse_duration(text)
    assert str(err.value) == f"--budget {text!r}: {why}"


def test_a_plain_zero_duration_is_refused_like_0s() -> None:
    with pytest.raises(CuoptError) as err:
        parse_duration("0")
    assert str(err.value) == "--budget '0': must be positive"


def test_budget_counts_evaluations_and_time() -> None:
    b = Budget(60.0, max_evals=2)
    assert not b.exhausted() and 59 < b.remaining <= 60
    b.evaluations = 2
    assert b.exhausted()
    assert Budget(0.0).exhausted()
    assert Budget(60.0).share(4) == pytest.approx(15.0, abs=0.1)
