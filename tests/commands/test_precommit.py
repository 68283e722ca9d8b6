"""The pre-commit hook end to end: the real `pre-commit try-repo` installs this repository in its
own environment and runs `cuopt-check` on a good and a bad .cu file of a throwaway git repository.

The hook repository is a committed snapshot of this working tree (tracked and untracked files
that git does not ignore): `try-repo` on a repository with uncommitted changes would leave out
untracked files."""
from __future__ import annotations

import importlib.util
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import ROOT, SAMPLES

BUDGET_S = 120  # pre-commit builds a virtualenv and installs typer, rich, numpy, tree-sitter(-cuda)


def _network() -> bool:
    try:
        socket.create_connection(("pypi.org", 443), timeout=5).close()
        return True
    except OSError:
        return False


pytestmark = [
    pytest.mark.skipif(importlib.util.find_spec("pre_commit") is None,
                       reason="pre-commit is not installed (pip install -e '.[test]')"),
    pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed"),
    pytest.mark.skipif(not (ROOT / ".git").exists(), reason=f"{ROOT} is not a git checkout"),
]


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.name=cuopt test", "-c", "user.email=test@cuopt.invalid",
                           "-c", "commit.gpgsign=false", *args],
                          cwd=cwd, check=True, capture_output=True, text=True).stdout


def snapshot(dest: Path) -> Path:
    """This working tree as a fresh repository with one commit."""
    listed = git(ROOT, "ls-files", "-z", "--cached", "--others", "--exclude-standard").split("\0")
    for name in filter(None, listed):
        src = ROOT / name
        if src.is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / name)
    git(dest, "init", "-q")
    git(dest, "add", "-A")
    git(dest, "commit", "-q", "-m", "snapshot")
    return dest


def test_pre_commit_hook_passes_good_files_and_fails_bad_ones(tmp_path: Path) -> None:
    if not _network():
        pytest.skip("no network: pre-commit installs the hook's dependencies from PyPI")
    hooks = snapshot(tmp_path / "hooks")
    project = tmp_path / "project"
    project.mkdir()
    git(project, "init", "-q")
    shutil.copy(SAMPLES / "saxpy.cu", project / "good.cu")
    shutil.copy(SAMPLES / "saxpy.cuopt.toml", project / "good.cuopt.toml")
    (project / "bad.cu").write_text("__global__ void k(float* a)\n{\n  a[0] = (1;\n}\n")
    git(project, "add", "-A")
    git(project, "commit", "-q", "-m", "kernels")
    env = {**os.environ, "PRE_COMMIT_HOME": str(tmp_path / "pre-commit-home")}
    deadline = time.monotonic() + BUDGET_S

    def try_repo(*files: str) -> subprocess.CompletedProcess[str]:
        argv = [sys.executable, "-m", "pre_commit", "try-repo", str(hooks), "cuopt-check", "--files", *files]
        try:
            return subprocess.run(argv, cwd=project, env=env, capture_output=True, text=True,
                                  timeout=max(1.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired as exc:
            pytest.fail(f"pre-commit try-repo took more than {BUDGET_S} s in all: {exc.stdout}{exc.stderr}")

    good = try_repo("good.cu")
    assert good.returncode == 0, good.stdout + good.stderr
    assert "cuopt check" in good.stdout and "Passed" in good.stdout

    bad = try_repo("good.cu", "bad.cu")
    assert bad.returncode == 1, bad.stdout + bad.stderr
    assert "Failed" in bad.stdout
    assert "bad.cu:3:12: error: parse: syntax error: missing ')'" in bad.stdout
