"""The `Policy` interface (priors over offered rewrites, value of a variant) and the policies
shipped without a model: heuristic (priors declared by the rules) and uniform."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Protocol, Sequence

from cuopt.errors import CuoptError


class Policy(Protocol):
    name: str

    def priors(self, state: Any, offers: Sequence[Any]) -> list[float]:
        """A probability per offered rewrite (sums to 1)."""

    def value(self, state: Any) -> float:
        """Expected further log-speedup from this variant (0 when unknown)."""


def _normalize(weights: list[float]) -> list[float]:
    total = sum(weights)
    return [w / total for w in weights] if total > 0 else [1.0 / len(weights)] * len(weights)


class UniformPolicy:
    name = "uniform"

    def priors(self, state: Any, offers: Sequence[Any]) -> list[float]:
        return [1.0 / len(offers)] * len(offers) if offers else []

    def value(self, state: Any) -> float:
        return 0.0


class HeuristicPolicy:
    """Each rule's declared prior, divided by the square root of the number of that rule's offers
    at a site: a rule with k parameter choices gets sqrt(k) times its prior in all, so many
    choices do not crowd out the other rules, yet each stays worth trying."""

    name = "heuristic"

    def __init__(self, rule_priors: dict[str, float]) -> None:
        self.rule_priors = rule_priors

    def priors(self, state: Any, offers: Sequence[Any]) -> list[float]:
        if not offers:
            return []
        groups: dict[tuple[str, int], int] = {}
        for o in offers:
            key = (o.action.rule, o.action.line)
            groups[key] = groups.get(key, 0) + 1
        weights = [self.rule_priors.get(o.action.rule, 1.0) / groups[(o.action.rule, o.action.line)] ** 0.5
                   for o in offers]
        return _normalize(weights)

    def value(self, state: Any) -> float:
        return 0.0


POLICIES: dict[str, Callable[[dict[str, float]], Policy]] = {
    "heuristic": HeuristicPolicy,
    "uniform": lambda rule_priors: UniformPolicy(),
}


def load_policy(name: str, rule_priors: dict[str, float]) -> Policy:
    """A shipped policy by name; a path to a model file is for the learned policy."""
    if name in POLICIES:
        return POLICIES[name](rule_priors)
    if Path(name).exists():
        raise CuoptError(f"--policy {name}: learned policy files are not supported by this version; "
                         f"use one of: {', '.join(POLICIES)}")
    raise CuoptError(f"--policy {name!r}: expected one of {', '.join(POLICIES)} or a model file")
