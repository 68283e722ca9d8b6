"""The shipped learned policy against the current feature schema: it loads, or optimize falls back
to the heuristic policy with exactly one warning."""
from __future__ import annotations

import pytest

from cuopt.api import resolve_policy
from cuopt.search.policies import learned_path


def test_the_shipped_policy_loads_or_warns_once() -> None:
    if not learned_path().is_file():
        pytest.skip("no learned policy installed")
    warnings: list[str] = []
    chosen = resolve_policy(None, warnings.append)
    assert chosen in ("learned", "heuristic")
    assert len(warnings) <= 1, warnings
    if warnings:
        assert "heuristic" in warnings[0] and chosen == "heuristic"
