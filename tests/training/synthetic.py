"""Synthetic self-play rows with a planted rule: the child whose action feature KEY is largest is
the fastest (log-speedup grows with that feature), a child whose feature FAIL is above 1.2 fails,
and a node's value grows with its state feature 0. Rows are dicts in the dataset format."""
from __future__ import annotations

import json
import math
import random
from pathlib import Path
from typing import Any

from cuopt.search import features
from cuopt.training import fit

KEY = 1  # the action feature that decides the best child
FAIL = 2  # the action feature that makes a child fail
STATUSES = ("mismatch", "compile-error", "fault", "timeout")


def action(rng: random.Random, i: int) -> dict[str, Any]:
    feats = [round(rng.gauss(0.0, 1.0), 4) for _ in features.ACTION_NAMES]
    fails = feats[FAIL] > 1.2
    unmeasured = not fails and rng.random() < 0.15
    gain = 0.25 * feats[KEY] + rng.gauss(0.0, 0.02)
    status = rng.choice(STATUSES) if fails else "unmeasured" if unmeasured else "ok"
    ok = status == "ok"
    return {"id": f"rule{i % 3}@{i + 1}:1", "rule": f"rule{i % 3}", "features": feats,
            "visits": 0 if unmeasured else 1 + (rng.randrange(4) if ok and gain > 0 else 0),
            "prior": 0.1, "status": status, "ms": round(0.5 * math.exp(-gain), 6) if ok else None,
            "log_speedup": round(gain, 6) if ok else None}


def row(rng: random.Random, index: int, split: str) -> dict[str, Any]:
    state = [round(rng.gauss(0.0, 1.0), 4) for _ in features.STATE_NAMES]
    actions = [action(rng, i) for i in range(rng.randint(3, 12))]
    return {"schema": features.SCHEMA_VERSION, "kernel": f"synthetic_{index % 40:03d}", "split": split,
            "gpu": "synthetic", "node": index, "depth": index % 3, "state": state, "state_ms": 0.5,
            "baseline_ms": 0.6, "actions": actions, "value": round(0.3 * math.log1p(math.exp(state[0])), 6)}


def rows(count: int, seed: int = 0, held_out: float = 0.25) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    return [row(rng, i, "heldout" if rng.random() < held_out else "train") for i in range(count)]


def write(path: Path, data: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in data))
    return path


def model(directory: Path) -> Path:
    """A small model trained on synthetic rows (3 epochs): its weights file, its metadata beside it."""
    out = directory / "policy.safetensors"
    fit.run([write(directory / "data.jsonl", rows(1500, seed=11))], out, fit.FitConfig(epochs=3, seed=0),
            lambda line: None)
    return out
