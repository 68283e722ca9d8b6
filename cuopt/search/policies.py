"""The search's policy by name: heuristic, uniform, learned (the model installed with cuopt) or a
model file."""
from __future__ import annotations

from pathlib import Path
from typing import Callable

from cuopt.errors import CuoptError
from cuopt.resources import data_dir
from cuopt.search.policy import HeuristicPolicy, Policy, UniformPolicy

MODEL_SUFFIX = ".safetensors"


def learned_path() -> Path:
    """The learned policy installed with cuopt: models/policy.safetensors (policy.json beside it)."""
    return data_dir("models") / f"policy{MODEL_SUFFIX}"


def default_policy() -> str:
    """`learned` when a model is installed, else `heuristic`."""
    return "learned" if learned_path().is_file() else "heuristic"


def names_a_model(name: str) -> bool:
    """Whether a --policy value that is no policy's name means a model file: a path that exists or
    ends in .safetensors."""
    return Path(name).exists() or name.endswith(MODEL_SUFFIX)


def _learned(path: Path) -> Policy:
    from cuopt.search.learned import load_learned  # deferred: numpy and the features load for this policy only

    return load_learned(path)


POLICIES: dict[str, Callable[[dict[str, float]], Policy]] = {
    "heuristic": HeuristicPolicy,
    "uniform": lambda rule_priors: UniformPolicy(),
    "learned": lambda rule_priors: _learned(learned_path()),
}


def load_policy(name: str, rule_priors: dict[str, float]) -> Policy:
    """A policy by name, or the learned policy in a model file (see `names_a_model`). A model that
    cannot be used raises ModelError (the caller may fall back to the heuristic)."""
    if name in POLICIES:
        return POLICIES[name](rule_priors)
    if names_a_model(name):
        return _learned(Path(name))
    raise CuoptError(f"--policy {name!r}: expected one of {', '.join(POLICIES)} or a model file")
