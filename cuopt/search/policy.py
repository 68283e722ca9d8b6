"""The `Policy` interface (priors over offered rewrites, value of a variant) and the policies that
need no model: heuristic (priors declared by the rules) and uniform. cuopt.search.policies picks
one by name; cuopt.search.learned is the learned one."""
from __future__ import annotations

from typing import Any, Callable, Protocol, Sequence

Resources = Callable[[Any], dict[str, int] | None]  # a state's ptxas report, None when not compiled


class Policy(Protocol):
    name: str

    def priors(self, state: Any, offers: Sequence[Any]) -> list[float]:
        """A probability per offered rewrite (sums to 1)."""

    def value(self, state: Any) -> float | None:
        """Expected further log-speedup from this variant; None for a policy without a value head."""

    def bind(self, spec: Any, kernel_name: str, options: frozenset[str], device: dict | None,
             resources: Resources | None = None) -> Policy:
        """This policy for one kernel on one device; `resources` gives ptxas's figures of a state
        once compiled. A policy that needs none of it returns itself."""

    def describe(self) -> dict[str, Any]:
        """What identifies this policy in a trace: its name and, for a model, its file and digest."""


def _normalize(weights: list[float]) -> list[float]:
    total = sum(weights)
    return [w / total for w in weights] if total > 0 else [1.0 / len(weights)] * len(weights)


class UniformPolicy:
    name = "uniform"

    def priors(self, state: Any, offers: Sequence[Any]) -> list[float]:
        return [1.0 / len(offers)] * len(offers) if offers else []

    def value(self, state: Any) -> float | None:
        return None

    def bind(self, spec: Any, kernel_name: str, options: frozenset[str], device: dict | None,
             resources: Resources | None = None) -> UniformPolicy:
        return self

    def describe(self) -> dict[str, Any]:
        return {"name": self.name}


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

    def value(self, state: Any) -> float | None:
        return None

    def bind(self, spec: Any, kernel_name: str, options: frozenset[str], device: dict | None,
             resources: Resources | None = None) -> HeuristicPolicy:
        return self

    def describe(self) -> dict[str, Any]:
        return {"name": self.name}
