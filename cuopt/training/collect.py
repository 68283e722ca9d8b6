"""Self-play data: after a search, one dataset row per expanded variant — its features, the
features of every rewrite offered on it, the search's visit counts and what the GPU measured —
appended to a JSON Lines file (the format is in docs/policy.md)."""
from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from cuopt.optimization.environment import recorded_resources
from cuopt.rewrite.context import Context
from cuopt.search import features
from cuopt.search.mcts import MCTS, Measurement, Node
from cuopt.source.preprocess import NO_MACROS, Macros
from cuopt.spec.model import KernelSpec


def rows(search: MCTS, kernel: str, spec: KernelSpec, options: frozenset[str], device: dict[str, Any],
         meta: dict[str, Any], macros: Macros = NO_MACROS) -> list[dict[str, Any]]:
    """One row per expanded, successfully measured node of `search` that has children (its
    variants seen through `macros`, the original file's)."""
    out = []
    best = _subtree_best(search)
    for node in search.nodes:
        m = _measured(search, node)
        if not node.children or m is None or not m.ok:
            continue
        ctx = Context(node.state.source.encode(), node.state.launch, kernel, spec, options, macros)
        actions = [_action(search, ctx, m, child, best.get(child.index)) for child in node.children
                   if child.offer is not None]
        out.append({"schema": features.SCHEMA_VERSION, **meta, "node": node.index, "depth": node.depth,
                    "state": _rounded(features.state_features(ctx, recorded_resources(m), device)),
                    "state_ms": m.ms, "baseline_ms": search.baseline_ms, "actions": actions,
                    "value": math.log(m.ms / best[node.index])})  # type: ignore[operator]
    return out


def append(path: Path, new_rows: list[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as f:
        for r in new_rows:
            f.write(json.dumps(r, separators=(",", ":")) + "\n")


def _action(search: MCTS, ctx: Context, pm: Measurement, child: Node, subtree_ms: float | None) -> dict[str, Any]:
    m = _measured(search, child)
    status = "unmeasured" if m is None else m.status
    ok = m is not None and m.ok
    return {"id": child.action, "rule": child.rule, "features": _rounded(features.action_features(ctx, child.offer)),
            "visits": child.visits, "prior": round(child.prior, 6), "status": status,
            "ms": m.ms if ok else None,  # type: ignore[union-attr]
            "log_speedup": math.log(pm.ms / m.ms) if ok else None,  # type: ignore[operator, union-attr]
            "subtree_log_speedup": math.log(pm.ms / subtree_ms) if subtree_ms else None}  # type: ignore[operator]


def _measured(search: MCTS, node: Node) -> Measurement | None:
    if node.measurement is not None:
        return node.measurement
    original = search.measured.get(node.key)
    return original.measurement if original is not None else None


def _subtree_best(search: MCTS) -> dict[int, float]:
    """The fastest successful time at or below each node (its own time when nothing below is faster)."""
    best: dict[int, float] = {}
    for node in reversed(search.nodes):  # children are created after their parents
        m = _measured(search, node)
        times = [m.ms] if m is not None and m.ok else []
        times += [best[c.index] for c in node.children or [] if c.index in best]
        if times:
            best[node.index] = min(times)  # type: ignore[type-var]
    return best


def _rounded(values: list[float]) -> list[float]:
    return [round(v, 6) for v in values]
