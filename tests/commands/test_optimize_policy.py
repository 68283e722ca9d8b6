"""The shipped learned policy against the current feature schema: it loads, or optimize falls back
to the heuristic policy with exactly one warning."""
from __future__ import annotations

import pytest

from cuopt import ui
from cuopt.commands.optimize import _load_policy
from cuopt.rewrite.engine import Engine
from cuopt.search.policy import learned_path


def test_the_shipped_policy_loads_or_warns_once(monkeypatch: pytest.MonkeyPatch) -> None:
    if not learned_path().is_file():
        pytest.skip("no learned policy installed")
    warnings: list[str] = []
    monkeypatch.setattr(ui, "warn", warnings.append)
    policy = _load_policy(None, Engine.default())
    assert policy is not None
    assert len(warnings) <= 1, warnings
    if warnings:
        assert "heuristic" in warnings[0]
