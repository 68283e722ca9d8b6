"""`cuopt bench` on a CPU with the stand-in GPU backend (saxpy computed with numpy, a fixed pseudo-random
"time" per cubin; compiles with the real nvcc): the roofline floor in the JSON and the table, with and
without the device attributes the FP32 peak needs."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from cuopt.evaluate.worker import FLUSH_BYTES

from tests.conftest import requires_nvcc
from tests.helpers import cuopt
from tests.optimization.stand_in_backend import StandInBackend

N = 100000
LANES = 128  # sm_90
CLOCK_KHZ = 1000  # a 1 MHz, one-SM device: the FP32 peak is 0.256 GFLOP/s, so the floor of saxpy is compute-bound
COPY_GBPS = 2 * (1 << 30) / 0.5e-3 / 1e9  # the stand-in copies 1 GiB in 0.5 ms


class BenchBackend(StandInBackend):
    """The stand-in without its big fills and copies (the L2 flush, the bandwidth measurement), which
    would take most of the run time on a CPU and measure nothing."""

    def device_info(self) -> dict[str, Any]:
        return {**super().device_info(), "name": "Bench stand-in GPU", "clock_khz": CLOCK_KHZ}

    def fill(self, buf: Any, byte: int, nbytes: int) -> None:
        if nbytes < FLUSH_BYTES:
            super().fill(buf, byte, nbytes)

    def copy(self, dst: Any, src: Any, nbytes: int) -> None:
        if nbytes < FLUSH_BYTES:
            super().copy(dst, src, nbytes)


class NoClockBackend(BenchBackend):
    """A device that does not report its clock: no FP32 peak."""

    def device_info(self) -> dict[str, Any]:
        return {**super().device_info(), "name": "No-clock stand-in GPU", "clock_khz": 0}


@pytest.fixture
def saxpy(samples: Path) -> Path:
    """saxpy with small sizes."""
    spec = samples / "saxpy.cuopt.toml"
    small = spec.read_text().replace("n = 67108864", f"n = {N}").replace("{ n = 1000003 }", "{ n = 1003 }")
    assert f"n = {N}" in small and "1000003" not in small
    spec.write_text(small)
    return samples / "saxpy.cu"


def bench(monkeypatch: pytest.MonkeyPatch, backend: type, *args: str) -> Any:
    monkeypatch.setenv("CUOPT_GPU_BACKEND", f"{__name__}:{backend.__name__}")
    return cuopt("bench", *args)


@requires_nvcc
def test_json_has_the_compute_bound_floor(monkeypatch: pytest.MonkeyPatch, saxpy: Path) -> None:
    result = bench(monkeypatch, BenchBackend, str(saxpy), "--json")
    assert result.exit_code == 0, result.output
    [row] = json.loads(result.stdout)
    assert row["status"] == "ok"
    assert row["bytes"] == 3 * 4 * N and row["flops"] == 2 * N
    fp32_gflops = 1 * LANES * 2 * CLOCK_KHZ / 1e6
    compute_ms = 2 * N / (fp32_gflops * 1e9) * 1e3
    assert compute_ms > 3 * 4 * N / (COPY_GBPS * 1e9) * 1e3
    assert row["floor_bound"] == "compute"
    assert row["floor_ms"] == pytest.approx(compute_ms)
    assert row["of_floor"] == pytest.approx(row["floor_ms"] / row["ms"])


@requires_nvcc
def test_without_the_clock_the_floor_counts_bytes_only(monkeypatch: pytest.MonkeyPatch, saxpy: Path) -> None:
    result = bench(monkeypatch, NoClockBackend, str(saxpy), "--json")
    assert result.exit_code == 0, result.output
    assert "no FP32 peak for this GPU (No-clock stand-in GPU, sm_90, 1 SMs, clock ? kHz)" in result.stderr
    [row] = json.loads(result.stdout)
    assert row["floor_bound"] == "memory"
    assert row["floor_ms"] == pytest.approx(3 * 4 * N / (COPY_GBPS * 1e9) * 1e3, rel=1e-3)
    assert row["of_floor"] == pytest.approx(row["floor_ms"] / row["ms"])


@requires_nvcc
def test_table_shows_the_floor(monkeypatch: pytest.MonkeyPatch, saxpy: Path) -> None:
    result = bench(monkeypatch, BenchBackend, str(saxpy))
    assert result.exit_code == 0, result.output
    assert f"peak copy bandwidth {COPY_GBPS:.0f} GB/s, peak FP32 0.000256 TFLOP/s" in result.stdout
    header = next(line for line in result.stdout.splitlines() if "kernel" in line)
    assert "floor" in header and "% floor" in header
    row = next(line for line in result.stdout.splitlines() if "saxpy.cu:saxpy" in line)
    assert "781.2 µs fp32" in row  # 2N FLOPs at 0.256 GFLOP/s
