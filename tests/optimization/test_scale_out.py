"""Scale-out on a CPU: several (stand-in) GPUs of one machine through `--gpus`, and a real local Ray
instance through `--ray local`: the dry run without a GPU ranks the same first rewrites, searches
run as Ray tasks, and a Ray worker killed mid-task loses only that task, which is retried once
(nothing written twice, nothing lost). The stand-in measures nothing (tests/optimization/stand_in_backend.py)."""
from __future__ import annotations

import json
import os
import signal
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from cuopt.cli import app
from tests.conftest import ROOT, requires_nvcc
from tests.optimization.test_optimize_standin import HOST, N, QuickStandInBackend

ray = pytest.importorskip("ray", reason="Ray is not installed (pip install 'cuopt[ray]')")

PID_FILE = "CUOPT_TEST_PID_FILE"


class TwoGpus(QuickStandInBackend):
    """Two stand-in GPUs of one model."""

    def device_info(self) -> dict[str, Any]:
        return {**super().device_info(), "count": 2}


class ReportsItsParent(QuickStandInBackend):
    """Writes the PID of the process that started it (a Ray worker) where $CUOPT_TEST_PID_FILE says."""

    def __init__(self, device: int = 0) -> None:
        super().__init__(device)
        if os.environ.get(PID_FILE):
            with open(os.environ[PID_FILE], "a") as f:
                f.write(f"{os.getppid()}\n")


def backend(cls: type) -> str:
    return f"{__name__}:{cls.__name__}"


def small_saxpys(samples: Path, d: Path, stems: tuple[str, ...]) -> list[Path]:
    """Copies of saxpy with a host launch site, at small sizes, one file each."""
    d.mkdir()
    spec = (samples / "saxpy.cuopt.toml").read_text().replace("n = 67108864", f"n = {N}") \
        .replace("{ n = 1000003 }", "{ n = 1003 }")
    out = []
    for stem in stems:
        (d / f"{stem}.cu").write_text((samples / "saxpy.cu").read_text() + HOST)
        (d / f"{stem}.cuopt.toml").write_text(spec)
        out.append(d / f"{stem}.cu")
    return out


def optimize(monkeypatch: pytest.MonkeyPatch, cls: type, *args: str | Path) -> list[dict[str, Any]]:
    monkeypatch.setenv("CUOPT_GPU_BACKEND", backend(cls))
    monkeypatch.setenv("PYTHONPATH", str(ROOT))  # Ray's workers import the stand-in from tests/
    monkeypatch.setenv("RAY_AUTH_MODE", "disabled")
    result = CliRunner().invoke(app, ["optimize", *map(str, args), "--json", "--no-sanitizer", "--max-evals", "8"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    return data if isinstance(data, list) else [data]


def backups(d: Path) -> list[str]:
    return sorted(p.name.split(".cu.")[0] for p in (d / ".cuopt" / "backups").glob("*.cu.*"))


@requires_nvcc
def test_every_gpu_of_the_machine_searches(monkeypatch: pytest.MonkeyPatch, samples: Path, tmp_path: Path) -> None:
    d = tmp_path / "two"
    files = small_saxpys(samples, d, ("a", "b", "c", "d"))
    results = optimize(monkeypatch, TwoGpus, d, "--budget", "90s", "--gpus", "all")
    assert [r["file"] for r in results] == [str(f) for f in files]
    assert {r["gpu"] for r in results} == {"0", "1"}
    assert all(r["status"] == "written" and r["evaluations"] == 8 for r in results), results
    assert backups(d) == ["a", "b", "c", "d"]  # each file backed up once


@requires_nvcc
def test_gpus_names_only_gpus_that_exist(monkeypatch: pytest.MonkeyPatch, samples: Path, tmp_path: Path) -> None:
    [cu] = small_saxpys(samples, tmp_path / "one", ("a",))
    monkeypatch.setenv("CUOPT_GPU_BACKEND", backend(TwoGpus))
    result = CliRunner().invoke(app, ["optimize", str(cu), "--gpus", "0,5"])
    assert result.exit_code == 1
    assert result.stderr.strip() == "cuopt: error: --gpus '0,5': no GPU 5 here (this machine has 2: 0-1)"


@requires_nvcc
def test_dry_run_through_ray_ranks_the_same_first_rewrites(monkeypatch: pytest.MonkeyPatch, samples: Path) -> None:
    monkeypatch.setenv("CUOPT_GPU_BACKEND", "tests.evaluate.fake_backend:NoSuchBackend")  # no GPU here
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    monkeypatch.setenv("RAY_AUTH_MODE", "disabled")
    for f in samples.glob("*.cu"):  # three families keep it quick: each sample compiles its variants twice
        if f.stem not in ("histogram", "softmax", "stencil2d"):
            f.unlink()
            f.with_name(f.stem + ".cuopt.toml").unlink()
    plain = CliRunner().invoke(app, ["optimize", str(samples), "--dry-run", "--json", "--policy", "heuristic"])
    assert plain.exit_code == 0, plain.output
    through_ray = CliRunner().invoke(app, ["optimize", str(samples), "--dry-run", "--json", "--policy", "heuristic",
                                           "--ray", "local"])
    assert through_ray.exit_code == 0, through_ray.output
    rows = json.loads(plain.stdout)
    kernels = {(r["file"], r["kernel"]) for r in rows}
    assert len(kernels) == len(list(samples.glob("*.cu"))) and all(r["compiled"] for r in rows)
    assert json.loads(through_ray.stdout) == rows


@requires_nvcc
def test_a_killed_ray_worker_loses_only_its_task(monkeypatch: pytest.MonkeyPatch, samples: Path,
                                                 tmp_path: Path) -> None:
    d = tmp_path / "ray"
    files = small_saxpys(samples, d, ("a", "b"))
    pids = tmp_path / "pids"
    monkeypatch.setenv(PID_FILE, str(pids))
    killed: list[int] = []

    def kill_the_first_worker() -> None:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not killed:
            workers = [int(p) for p in pids.read_text().split() if int(p) != os.getpid()] if pids.is_file() else []
            if workers:  # the driver counts its GPUs itself first: that one is not a Ray worker
                os.kill(workers[0], signal.SIGKILL)
                killed.append(workers[0])
            time.sleep(0.05)

    thread = threading.Thread(target=kill_the_first_worker, daemon=True)
    thread.start()
    results = optimize(monkeypatch, ReportsItsParent, d, "--budget", "120s", "--ray", "local")
    thread.join(5)
    assert killed, "no Ray worker was started"
    assert [r["file"] for r in results] == [str(f) for f in files]
    assert all(r["status"] == "written" for r in results), [(r["status"], r["message"]) for r in results]
    assert len(set(pids.read_text().split()) - {str(os.getpid())}) >= 2  # the killed task ran again elsewhere
    assert backups(d) == ["a", "b"]
    for f, r in zip(files, results):
        assert r["written"] == [str(f), str(f.with_name(f.stem + ".cuopt.toml"))]
        assert f.read_text() != (samples / "saxpy.cu").read_text() + HOST
