"""The `Policy` interface (priors over offered rewrites, value of a variant), the policies that
need no model: heuristic (priors declared by the rules) and uniform, and `load_policy`, which also
loads the learned policy (cuopt.learn.policy, imported only then)."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Protocol, Sequence

from cuopt.errors import CuoptError

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


def learned_path() -> Path:
    """The learned policy installed with cuopt: models/policy.pt."""
    from cuopt.resources import data_dir

    return data_dir("models") / "policy.pt"


def default_policy() -> str:
    """`learned` when a model is installed, else `heuristic`."""
    return "learned" if learned_path().is_file() else "heuristic"


def _learned(path: Path) -> Policy:
    from cuopt.learn.policy import load_learned

    return load_learned(path)


POLICIES: dict[str, Callable[[dict[str, float]], Policy]] = {
    "heuristic": HeuristicPolicy,
    "uniform": lambda rule_priors: UniformPolicy(),
    "learned": lambda rule_priors: _learned(learned_path()),
}


def load_policy(name: str, rule_priors: dict[str, float]) -> Policy:
    """A policy by name, or the learned policy in a model file (a path that exists or ends in .pt).
    A model that cannot be used raises ModelError (the caller may fall back to the heuristic)."""
    if name in POLICIES:
        return POLICIES[name](rule_priors)
    if Path(name).exists() or name.endswith(".pt"):
        return _learned(Path(name))
    raise CuoptError(f"--policy {name!r}: expected one of {', '.join(POLICIES)} or a model file")
