"""The policy network's forward pass in numpy, read from the model files that `cuopt-train fit`
wrote: the weights as safetensors (policy.safetensors) and the metadata as JSON beside them
(policy.json). cuopt/training/model.py defines the layers in torch; this mirrors them. The search
needs only this, so choosing a rewrite costs no torch import."""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from cuopt.errors import ModelError
from cuopt.search import weights

FILE_FORMAT = "cuopt-policy"
FILE_VERSION = 2  # 1: one torch.save file; 2: safetensors weights, metadata as JSON beside them
HEADER = ("format", "format_version", "architecture")  # the metadata file's keys that are not the model's metadata
NORMALISATION = ("state_mean", "state_std", "action_mean", "action_std")


@dataclass(frozen=True)
class Network:
    """Weights [out, in] and biases [out] of each layer, by the torch module's names, and the input
    normalisation (a standard deviation of zero counts as 1, as in training)."""

    weights: dict[str, np.ndarray]
    normalisation: dict[str, np.ndarray]

    def embed(self, states: np.ndarray) -> np.ndarray:
        """[B, state_dim] raw features → [B, embed]."""
        x = (states.astype(np.float32) - self.normalisation["state_mean"]) / self.normalisation["state_std"]
        return _relu(self._linear("encoder.2", _relu(self._linear("encoder.0", x))))

    def logits(self, embeddings: np.ndarray, actions: np.ndarray) -> np.ndarray:
        """One logit per action: row i of `embeddings` [A, embed] is action i's state."""
        a = (actions.astype(np.float32) - self.normalisation["action_mean"]) / self.normalisation["action_std"]
        x = np.concatenate([embeddings, a], axis=1)
        return self._linear("scorer.2", _relu(self._linear("scorer.0", x)))[:, 0]

    def value(self, embeddings: np.ndarray) -> np.ndarray:
        """[B, embed] → [B] expected further log-speedup (softplus, so never negative)."""
        x = self._linear("value_head.2", _relu(self._linear("value_head.0", embeddings)))[:, 0]
        return np.where(x > 20, x, np.log1p(np.exp(np.minimum(x, 20)))).astype(np.float32)  # torch's Softplus

    def _linear(self, name: str, x: np.ndarray) -> np.ndarray:
        return x @ self.weights[f"{name}.weight"].T + self.weights[f"{name}.bias"]


def _relu(x: np.ndarray) -> np.ndarray:
    return np.maximum(x, np.float32(0))


def shapes(arch: dict[str, int]) -> dict[str, tuple[int, ...]]:
    """Every parameter's shape for an architecture (state_dim, action_dim, hidden, embed)."""
    s, a, h, e = arch["state_dim"], arch["action_dim"], arch["hidden"], arch["embed"]
    layers = {"encoder.0": (h, s), "encoder.2": (e, h), "scorer.0": (h, e + a), "scorer.2": (1, h),
              "value_head.0": (h // 2, e), "value_head.2": (1, h // 2)}
    out: dict[str, tuple[int, ...]] = {}
    for name, (rows, cols) in layers.items():
        out[f"{name}.weight"], out[f"{name}.bias"] = (rows, cols), (rows,)
    for name in NORMALISATION:
        out[name] = (s,) if name.startswith("state") else (a,)
    return out


def metadata_path(path: Path) -> Path:
    """The metadata file beside a weights file: policy.safetensors → policy.json."""
    return path.with_suffix(".json")


def load(path: Path) -> tuple[Network, dict[str, Any]]:
    """The network and its metadata; ModelError when the files are not ours or are damaged."""
    if not path.is_file():
        raise ModelError(f"{path}: no such model file")
    meta_path = metadata_path(path)
    if meta_path == path:
        raise ModelError(f"{path}: a model's metadata; name its weights file (.safetensors) instead")
    if not meta_path.is_file():
        raise ModelError(f"{path}: no metadata file {meta_path.name} beside it")
    try:
        data = json.loads(meta_path.read_text())
    except (UnicodeDecodeError, ValueError):
        raise ModelError(f"{meta_path}: not JSON") from None
    if not isinstance(data, dict) or data.get("format") != FILE_FORMAT:
        raise ModelError(f"{meta_path}: not a cuopt model's metadata")
    if data.get("format_version") != FILE_VERSION:
        raise ModelError(f"{meta_path}: model file format {data.get('format_version')!r}; "
                         f"this cuopt reads format {FILE_VERSION}")
    try:
        arrays = weights.read(path)
    except weights.FormatError as exc:
        raise ModelError(f"{path}: not a cuopt model file ({exc})") from None
    arch = data.get("architecture")
    try:
        expected = shapes(arch)
    except (KeyError, TypeError) as exc:
        raise ModelError(f"{meta_path}: damaged cuopt model metadata (architecture {arch!r})") from exc
    for name, shape in expected.items():
        got = arrays.get(name)
        if got is None or got.shape != shape:
            found = "missing" if got is None else f"shape {got.shape}"
            raise ModelError(f"{path}: damaged cuopt model file ({name}: {found}, expected shape {shape})")
    net = {k: arrays[k].astype(np.float32) for k in expected if k not in NORMALISATION}
    stats = {k: arrays[k].astype(np.float32) for k in NORMALISATION}
    for k in ("state_std", "action_std"):
        stats[k] = np.where(stats[k] > 1e-6, stats[k], np.float32(1))
    return Network(net, stats), {k: v for k, v in data.items() if k not in HEADER}
