"""The policy network as torch trains it: a state encoder, an action scorer (state embedding ⊕ action features →
logit) and a value head (state embedding → expected further log-speedup, >= 0). Inputs are
normalised inside the model with the training set's mean and standard deviation. The search runs
the saved files through cuopt/search/network.py, without torch."""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import torch
from torch import nn

from cuopt.search import weights
from cuopt.search.network import FILE_FORMAT, FILE_VERSION, NORMALISATION, metadata_path


@dataclass(frozen=True)
class Architecture:
    state_dim: int
    action_dim: int
    hidden: int = 128
    embed: int = 64

    def as_dict(self) -> dict[str, int]:
        return asdict(self)


class PolicyNet(nn.Module):
    def __init__(self, arch: Architecture) -> None:
        super().__init__()
        self.arch = arch
        self.encoder = nn.Sequential(nn.Linear(arch.state_dim, arch.hidden), nn.ReLU(),
                                     nn.Linear(arch.hidden, arch.embed), nn.ReLU())
        self.scorer = nn.Sequential(nn.Linear(arch.embed + arch.action_dim, arch.hidden), nn.ReLU(),
                                    nn.Linear(arch.hidden, 1))
        self.value_head = nn.Sequential(nn.Linear(arch.embed, arch.hidden // 2), nn.ReLU(),
                                        nn.Linear(arch.hidden // 2, 1), nn.Softplus())
        for name, dim in zip(NORMALISATION, (arch.state_dim,) * 2 + (arch.action_dim,) * 2):
            fill = torch.ones if name.endswith("std") else torch.zeros
            self.register_buffer(name, fill(dim), persistent=False)

    def set_normalisation(self, stats: dict[str, torch.Tensor]) -> None:
        """Mean and standard deviation of the state and action features (a zero std counts as 1)."""
        for name in NORMALISATION:
            value = stats[name].to(torch.float32)
            if name.endswith("std"):
                value = torch.where(value > 1e-6, value, torch.ones_like(value))
            getattr(self, name).copy_(value)

    def normalisation(self) -> dict[str, torch.Tensor]:
        return {name: getattr(self, name).clone() for name in NORMALISATION}

    def embed(self, states: torch.Tensor) -> torch.Tensor:
        """[B, state_dim] raw features → [B, embed]."""
        return self.encoder((states - self.state_mean) / self.state_std)

    def logits(self, embeddings: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
        """One logit per action: `embeddings` [A, embed] is each action's state, `actions` [A, action_dim] raw."""
        x = torch.cat([embeddings, (actions - self.action_mean) / self.action_std], dim=1)
        return self.scorer(x).squeeze(1)

    def value(self, embeddings: torch.Tensor) -> torch.Tensor:
        """[B, embed] → [B] expected further log-speedup (softplus, so never negative)."""
        return self.value_head(embeddings).squeeze(1)


def normalisation_stats(states: torch.Tensor, actions: torch.Tensor) -> dict[str, torch.Tensor]:
    """Per-feature mean and standard deviation of the training states and actions."""
    return {"state_mean": states.mean(0), "state_std": states.std(0, unbiased=False),
            "action_mean": actions.mean(0), "action_std": actions.std(0, unbiased=False)}


def save(path: Path, net: PolicyNet, metadata: dict[str, Any]) -> None:
    """The weights and the normalisation as safetensors at `path`, and beside them (policy.json) the
    file format, the architecture and `metadata` as JSON."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tensors = {**net.state_dict(), **net.normalisation()}
    weights.write(path, {name: t.detach().cpu().numpy() for name, t in tensors.items()})
    header = {"format": FILE_FORMAT, "format_version": FILE_VERSION, "architecture": net.arch.as_dict()}
    metadata_path(path).write_text(json.dumps({**header, **metadata}, indent=2) + "\n")

