"""Monte Carlo Tree Search over rewrite sequences.

A node is a variant; its children are the rewrites the environment offers on it. Selection is
PUCT with priors from a `Policy`; a leaf is evaluated (batched, so compiles run in parallel)
and its reward, log(baseline time / variant time) or a penalty for a failure, is backed up the
path. Identical variants (same normalised source and launch) are measured once."""
from __future__ import annotations

import math
import random
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable, Protocol, Sequence

from cuopt.errors import CuoptError
from cuopt.search.budget import Budget
from cuopt.search.policy import Policy


TIME_STOP = "the time budget ran out"  # why a search stops when its time is spent


@dataclass
class Measurement:
    status: str  # "ok" or a failure kind
    ms: float | None = None
    spread: float = 0.0
    detail: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.status == "ok" and self.ms is not None


class Environment(Protocol):
    def key(self, state: Any) -> str:
        """Identity of a variant (normalised source + launch)."""

    def expand(self, state: Any, history: list[str]) -> list[tuple[Any, Any]]:
        """(offer, child state) pairs for a variant reached by the rules in `history`; each offer
        has `.action.id`, `.action.rule`, `.action.line`."""

    def evaluate(self, states: Sequence[Any], budget: Budget) -> list[Measurement | None]:
        """Measure variants; None for one not measured because the budget ran out."""


@dataclass
class SearchOptions:
    """Declared search options; `from_pairs` refuses unknown ones."""

    c_puct: float = 1.5
    max_depth: int = 6
    batch: int = 8
    failure_penalty: float = -1.0
    fpu_reduction: float = 0.2
    value_weight: float = 0.5
    prune_value: float = 0.01  # a variant no faster than its parent, predicted to gain less, is not expanded
    rule_spread: float = 1.0  # within a batch, a child's prior times this per sibling of its rule already in it

    @staticmethod
    def from_pairs(pairs: Sequence[str]) -> SearchOptions:
        opts = SearchOptions()
        known = {k: type(v) for k, v in vars(opts).items()}
        for pair in pairs:
            key, sep, raw = pair.partition("=")
            key = key.strip().replace("-", "_")
            if not sep or key not in known:
                raise CuoptError(f"--search-option {pair!r}: expected KEY=VALUE with KEY one of "
                                 f"{', '.join(k.replace('_', '-') for k in known)}")
            try:
                value = known[key](raw)
            except ValueError:
                raise CuoptError(f"--search-option {pair!r}: {raw!r} is not a {known[key].__name__}") from None
            if key in ("batch", "max_depth") and value < 1 or \
                    key in ("c_puct", "fpu_reduction", "prune_value") and value < 0:
                raise CuoptError(f"--search-option {pair!r}: must be {'at least 1' if known[key] is int else '>= 0'}")
            if key == "rule_spread" and not 0 < value <= 1:
                raise CuoptError(f"--search-option {pair!r}: must be in (0, 1]")
            setattr(opts, key, value)
        return opts


@dataclass(eq=False)
class Node:
    index: int
    key: str
    state: Any
    parent: Node | None
    action: str | None
    rule: str | None
    prior: float
    depth: int
    children: list[Node] | None = None
    visits: int = 0
    value_sum: float = 0.0
    best: float = -math.inf
    measurement: Measurement | None = None
    duplicate_of: int | None = None
    pending: bool = False
    exhausted: bool = False
    offer: Any = None  # the environment's offer that made this node (for self-play data)
    evaluated_at: int | None = None  # the search's fresh-evaluation count when this node's came back
    pruned: bool = False  # the value head predicted nothing more below it: not expanded

    @property
    def mean(self) -> float:
        return self.value_sum / self.visits if self.visits else 0.0

    @property
    def sequence(self) -> list[str]:
        out, node = [], self
        while node.parent is not None:
            out.append(node.action)
            node = node.parent
        return list(reversed(out))

    @property
    def path(self) -> list[Node]:
        out, node = [], self
        while node is not None:
            out.append(node)
            node = node.parent
        return list(reversed(out))


class MCTS:
    def __init__(self, env: Environment, policy: Policy, root_state: Any, baseline: Measurement,
                 options: SearchOptions | None = None, seed: int = 0,
                 on_evaluated: Callable[[Node], None] | None = None) -> None:
        if not baseline.ok:
            raise ValueError("the baseline must be a successful measurement")
        self.env = env
        self.policy = policy
        self.options = options or SearchOptions()
        self.rng = random.Random(seed)
        self.baseline_ms = float(baseline.ms)  # type: ignore[arg-type]
        self.on_evaluated = on_evaluated
        root = Node(0, env.key(root_state), root_state, None, None, None, 1.0, 0, measurement=baseline)
        self.nodes = [root]
        self.measured: dict[str, Node] = {root.key: root}
        self.evaluations = 0
        self.duplicates = 0

    @property
    def root(self) -> Node:
        return self.nodes[0]

    def reward(self, node: Node) -> float:
        m = node.measurement
        assert m is not None
        if not m.ok:
            return self.options.failure_penalty
        return math.log(self.baseline_ms / max(m.ms, 1e-9))  # type: ignore[arg-type]

    def best(self, count: int = 1) -> list[Node]:
        """The fastest successfully measured distinct variants, fastest first (root included)."""
        seen, out = set(), []
        for n in sorted((n for n in self.nodes if n.measurement is not None and n.measurement.ok),
                        key=lambda n: (n.measurement.ms, n.depth, n.index)):  # type: ignore[union-attr]
            if n.key not in seen:
                seen.add(n.key)
                out.append(n)
        return out[:count]

    # -- the loop -----------------------------------------------------------------------------
    def run(self, budget: Budget, progress: Callable[[MCTS], None] | None = None) -> str:
        """Search until the budget is spent or the tree is exhausted; returns why it stopped."""
        while not budget.exhausted():
            batch: list[Node] = []
            size = self.options.batch
            if budget.max_evals is not None:
                size = max(1, min(size, budget.max_evals - budget.evaluations))
            for _ in range(self.options.batch * 4):
                if len(batch) >= size:
                    break
                leaf = self._select()
                if leaf is None:
                    break
                if leaf.measurement is None and leaf.key in self.measured:
                    original = self.measured[leaf.key]
                    leaf.measurement, leaf.duplicate_of = original.measurement, original.index
                    self.duplicates += 1
                    self._settle(leaf)
                    continue
                if leaf.measurement is None:
                    if any(b.key == leaf.key for b in batch):
                        continue  # the same variant is already in this batch
                    leaf.pending = True
                    self._virtual_loss(leaf, +1)
                    batch.append(leaf)
                    continue
                self._settle(leaf)
            if not batch:
                if self.root.exhausted:
                    pruned = sum(n.pruned for n in self.nodes)
                    return "every reachable variant was evaluated" + (
                        f" ({pruned} not expanded: the value head predicted no further gain)" if pruned else "")
                continue
            results = self.env.evaluate([n.state for n in batch], budget)
            for leaf, m in zip(batch, results):
                self._virtual_loss(leaf, -1)
                leaf.pending = False
                if m is None:
                    continue
                leaf.measurement = m
                self.measured.setdefault(leaf.key, leaf)
                if not (m.extra.get("cached") or m.extra.get("same_binary_as")):
                    self.evaluations += 1
                    budget.evaluations += 1
                    leaf.evaluated_at = self.evaluations
                self._settle(leaf)
                if self.on_evaluated is not None:
                    self.on_evaluated(leaf)
            if progress is not None:
                progress(self)
        if budget.stopped:
            return budget.stopped
        if budget.max_evals is not None and budget.evaluations >= budget.max_evals:
            return f"reached --max-evals {budget.max_evals}"
        return TIME_STOP

    def _select(self) -> Node | None:
        node = self.root
        while True:
            m = node.measurement
            if m is None:
                return node
            if not m.ok or node.depth >= self.options.max_depth:
                node.exhausted = True
                return node if node is not self.root else None
            if node.children is None:
                self._expand(node)
            open_children = [c for c in node.children or [] if not c.exhausted and not c.pending]
            if not open_children:
                if all(c.exhausted for c in node.children or []):
                    node.exhausted = True
                    self._propagate_exhaustion(node)
                return None
            node = self._pick(node, open_children)

    def _expand(self, node: Node) -> None:
        pairs = self.env.expand(node.state, [n.rule for n in node.path if n.rule is not None])
        priors = self.policy.priors(node.state, [offer for offer, _ in pairs]) if pairs else []
        node.children = []
        for (offer, state), prior in zip(pairs, priors):
            child = Node(len(self.nodes), self.env.key(state), state, node, offer.action.id, offer.action.rule,
                         prior, node.depth + 1, offer=offer)
            self.nodes.append(child)
            node.children.append(child)
        if not node.children:
            node.exhausted = True

    def _pick(self, node: Node, children: list[Node]) -> Node:
        """PUCT; with `rule_spread` below 1, a batch spreads over rules: each sibling of the same
        rule already pending (in this batch) scales a child's prior by `rule_spread`."""
        sqrt_n = math.sqrt(max(1, node.visits))
        parent_q = self._q(node)
        spread = self.options.rule_spread
        pending = Counter(c.rule for c in node.children or [] if c.pending) if spread < 1 else Counter()
        best, best_score = None, -math.inf
        for c in children:
            q = self._q(c) if c.visits else parent_q - self.options.fpu_reduction
            prior = c.prior * spread ** pending[c.rule]
            score = q + self.options.c_puct * prior * sqrt_n / (1 + c.visits) + self.rng.random() * 1e-9
            if score > best_score:
                best, best_score = c, score
        assert best is not None
        return best

    @staticmethod
    def _q(node: Node) -> float:
        """Half the mean return, half the best one below: a single-player search cares about the
        best variant, the mean keeps it from chasing one lucky measurement."""
        if not node.visits:
            return 0.0
        best = node.best if node.best > -math.inf else node.mean  # only virtual visits so far
        return 0.5 * node.mean + 0.5 * best

    def _settle(self, leaf: Node) -> None:
        """Back the leaf's value up its path. A leaf the value head gives up on (no faster than
        its parent, less than `prune_value` further gain predicted) is not expanded."""
        reward = value = self.reward(leaf)
        predicted = self.policy.value(leaf.state) if leaf.measurement is not None and leaf.measurement.ok else None
        if predicted is not None:
            value += self.options.value_weight * predicted
        for n in leaf.path:
            n.visits += 1
            n.value_sum += value
            n.best = max(n.best, value)
        pruned = predicted is not None and leaf.children is None and leaf.parent is not None \
            and leaf.depth < self.options.max_depth and predicted < self.options.prune_value \
            and reward <= self.reward(leaf.parent)
        if pruned:
            leaf.pruned = True
        if leaf.measurement is not None and (not leaf.measurement.ok or leaf.depth >= self.options.max_depth or pruned):
            leaf.exhausted = True
            self._propagate_exhaustion(leaf)

    def _propagate_exhaustion(self, node: Node) -> None:
        parent = node.parent
        while parent is not None and parent.children is not None and all(c.exhausted for c in parent.children):
            parent.exhausted = True
            parent = parent.parent

    def _virtual_loss(self, leaf: Node, sign: int) -> None:
        for n in leaf.path:
            n.visits += sign
            n.value_sum -= sign * 1.0
