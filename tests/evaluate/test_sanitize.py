"""compute-sanitizer's verdicts, read from its output and exit code, with a stand-in tool."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from cuopt.evaluate import sanitize as sanitize_module
from cuopt.evaluate.client import KernelRef, LaunchDims
from cuopt.evaluate.sanitize import TOOLS, sanitize

from tests.evaluate.fake_sanitizer import install

KERNEL, DIMS = KernelRef("k.cubin", "k"), LaunchDims((1, 1, 1), (32, 1, 1))


def run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, behaviour: dict[str, str], **kwargs) -> list:
    install(tmp_path / "bin", behaviour)
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    return sanitize(KERNEL, {"sizes": {"n": 32}}, DIMS, **kwargs)  # type: ignore[arg-type]


def test_every_tool_runs_and_reports_in_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    reports = run(tmp_path, monkeypatch, {"memcheck": "clean", "racecheck": "clean"})
    assert [r.tool for r in reports] == list(TOOLS) == ["memcheck", "racecheck"]
    assert all(r.clean and r.conclusive and r.detail == "no errors" for r in reports)


def test_the_tools_run_at_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each stand-in waits until the other has started: one after the other, neither could finish clean."""
    reports = run(tmp_path, monkeypatch, {"memcheck": "together", "racecheck": "together"})
    assert all(r.clean and r.conclusive for r in reports), reports
    assert sorted((tmp_path / "bin" / "log").read_text().split()) == ["memcheck", "racecheck"]


def test_an_error_and_a_hazard_are_reported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    memcheck, racecheck = run(tmp_path, monkeypatch, {"memcheck": "error", "racecheck": "hazard"})
    assert not memcheck.clean and memcheck.conclusive
    assert memcheck.detail == "Invalid __global__ read of size 16 bytes"
    assert not racecheck.clean and racecheck.detail == "Error: Race reported between Write access and Read access"


def test_a_tool_that_cannot_run_or_hangs_is_inconclusive(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    memcheck, racecheck = run(tmp_path, monkeypatch, {"memcheck": "broken", "racecheck": "hang"}, timeout_s=1.0)
    assert memcheck.clean and not memcheck.conclusive and memcheck.detail.startswith("could not run (exit 1)")
    assert racecheck.clean and not racecheck.conclusive and racecheck.detail == "timed out after 1 s"


def test_without_the_tool_there_is_no_report(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sanitize_module, "find_sanitizer", lambda: None)
    assert sanitize(KERNEL, None, DIMS) == []  # type: ignore[arg-type]
