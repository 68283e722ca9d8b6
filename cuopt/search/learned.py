"""The learned policy: priors from the policy network's logits over the offered rewrites, value
from its value head. Needs `bind` (the kernel, spec, options and device) before a search."""
from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from cuopt.errors import CuoptError, ModelError
from cuopt.rewrite.context import Context
from cuopt.search import features, network
from cuopt.search.policy import Resources


@dataclass(frozen=True)
class Binding:
    """What the features need beyond a search state: the kernel, its spec, the options, the device
    and a lookup of a state's ptxas report."""

    spec: Any
    kernel_name: str
    options: frozenset[str]
    device: dict | None
    resources: Resources | None = None


class LearnedPolicy:
    name = "learned"

    def __init__(self, net: network.Network, metadata: dict[str, Any], path: Path,
                 binding: Binding | None = None, digest: str = "") -> None:
        self.net, self.metadata, self.path, self.binding, self.digest = net, metadata, path, binding, digest
        self.uniform_blend = uniform_blend(path, metadata)

    def bind(self, spec: Any, kernel_name: str, options: frozenset[str], device: dict | None,
             resources: Resources | None = None) -> LearnedPolicy:
        """This policy for one kernel (the same network)."""
        return LearnedPolicy(self.net, self.metadata, self.path,
                             Binding(spec, kernel_name, options, device, resources), self.digest)

    def describe(self) -> dict[str, Any]:
        """The name, the model file, the SHA-256 of its weights and metadata, its schema version and when it
        was trained."""
        return {"name": self.name, "model": str(self.path), "sha256": self.digest,
                "schema": (self.metadata.get("schema") or {}).get("version"), "created": self.metadata.get("created"),
                "uniform_blend": self.uniform_blend}

    def priors(self, state: Any, offers: Sequence[Any]) -> list[float]:
        """Softmax of the network's logits over the offers, in one batch, blended with uniform
        priors by the model file's `uniform_blend` share, so that a confident network still leaves
        the search room to try the other offers."""
        if not offers:
            return []
        ctx = self._context(state)
        actions = np.array([features.action_features(ctx, o) for o in offers], dtype=np.float32)
        emb = self._embed(state, ctx)
        logits = self.net.logits(np.repeat(emb, len(offers), axis=0), actions).astype(np.float64)
        net = np.exp(logits - logits.max())
        net /= net.sum()
        b = self.uniform_blend
        return net.tolist() if b == 0 else ((1 - b) * net + b / len(offers)).tolist()

    def value(self, state: Any) -> float:
        """The value head: expected further log-speedup from this variant (>= 0)."""
        return float(self.net.value(self._embed(state, self._context(state)))[0])

    def _embed(self, state: Any, ctx: Context) -> np.ndarray:
        b = self.binding
        resources = b.resources(state) if b is not None and b.resources is not None else None
        row = features.state_features(ctx, resources, b.device if b is not None else None)
        return self.net.embed(np.array([row], dtype=np.float32))

    def _context(self, state: Any) -> Context:
        """A search state (a Variant: source and launch) as the rewrite engine sees it."""
        if isinstance(state, Context):
            return state
        if self.binding is None:
            raise CuoptError("the learned policy needs bind(spec, kernel, options, device) before a search")
        b = self.binding
        return Context(state.source.encode(), state.launch, b.kernel_name, b.spec, b.options)


def load_learned(path: Path) -> LearnedPolicy:
    """A model file written by `cuopt-train fit` (its metadata beside it); ModelError when it is
    missing, not a cuopt model, or trained for another feature schema than this cuopt computes."""
    net, metadata = network.load(path)
    check_schema(path, metadata.get("schema"))
    return LearnedPolicy(net, metadata, path, digest=digest(path))


def digest(path: Path) -> str:
    """The SHA-256 of a model: its weights file's bytes followed by its metadata file's, since both
    decide the priors (the metadata carries the uniform blend)."""
    h = hashlib.sha256(path.read_bytes())
    h.update(network.metadata_path(path).read_bytes())
    return h.hexdigest()


def uniform_blend(path: Path, metadata: dict[str, Any]) -> float:
    """The model file's search-time share of uniform priors (0 when it records none)."""
    value = (metadata.get("search") or {}).get("uniform_blend", 0.0)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
        raise ModelError(f"{path}: search.uniform_blend {value!r}: expected a share from 0 to 1")
    return float(value)


def check_schema(path: Path, saved: Any) -> None:
    current = features.schema()
    if not isinstance(saved, dict):
        raise ModelError(f"{path}: the model file records no feature schema")
    if saved.get("version") != current["version"]:
        raise ModelError(f"{path}: trained for feature schema {saved.get('version')}; "
                         f"this cuopt computes schema {current['version']}")
    for part in ("state", "action"):
        if list(saved.get(part) or []) != list(current[part]):
            raise ModelError(f"{path}: trained on other {part} features than this cuopt computes "
                             f"(schema {current['version']}); retrain with `cuopt-train fit`")
