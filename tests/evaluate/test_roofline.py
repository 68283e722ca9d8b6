"""Roofline arithmetic: the FP32 peak from device attributes and the floor of a kernel."""
from __future__ import annotations

import pytest

from cuopt.evaluate.device import FP32_LANES_PER_SM, peak_fp32_gflops, roofline_floor_ms

H200 = {"name": "NVIDIA H200", "arch": "sm_90", "sms": 132, "clock_khz": 1_980_000}


def test_peak_fp32_is_sms_times_lanes_times_two_times_clock() -> None:
    assert peak_fp32_gflops(H200) == pytest.approx(132 * 128 * 2 * 1.98)  # 66.9 TFLOP/s


def test_a100_has_64_fp32_lanes_per_sm() -> None:
    a100 = {"arch": "sm_80", "sms": 108, "clock_khz": 1_410_000}
    assert peak_fp32_gflops(a100) == pytest.approx(108 * 64 * 2 * 1.41)  # 19.5 TFLOP/s


@pytest.mark.parametrize("arch", ["sm_86", "sm_89", "sm_90"])
def test_128_lanes_from_ampere_ga10x_on(arch: str) -> None:
    assert FP32_LANES_PER_SM[arch] == 128


@pytest.mark.parametrize("missing", [
    {"arch": "sm_53"},  # not in the table
    {"arch": None},
    {"sms": 0},
    {"sms": None},
    {"clock_khz": 0},
    {"clock_khz": None},
])
def test_no_peak_without_the_attributes(missing: dict) -> None:
    assert peak_fp32_gflops({**H200, **missing}) is None


def test_no_peak_from_an_empty_device() -> None:
    assert peak_fp32_gflops({}) is None


def test_a_memory_bound_floor() -> None:
    # saxpy at n = 2^26: 3 * 4 * n bytes at 4000 GB/s, 2n FLOPs at 66.9 TFLOP/s
    n = 1 << 26
    floor = roofline_floor_ms(12 * n, 2 * n, 4000.0, peak_fp32_gflops(H200))
    assert floor is not None
    assert floor[1] == "memory"
    assert floor[0] == pytest.approx(12 * n / 4000e9 * 1e3)


def test_a_compute_bound_floor() -> None:
    # matmul at 2048^3: 48 MiB, 2 * 2048^3 FLOPs
    m = 2048
    fp32 = peak_fp32_gflops(H200)
    assert fp32 is not None
    floor = roofline_floor_ms(3 * 4 * m * m, 2 * m**3, 4000.0, fp32)
    assert floor is not None
    assert floor[1] == "compute"
    assert floor[0] == pytest.approx(2 * m**3 / (fp32 * 1e9) * 1e3)
    assert floor[0] > 3 * 4 * m * m / 4000e9 * 1e3


@pytest.mark.parametrize("flops, fp32", [(None, 66908.0), (0, 66908.0), (2 * 2048**3, None)])
def test_bytes_alone_without_flops_or_peak(flops: int | None, fp32: float | None) -> None:
    assert roofline_floor_ms(4000, flops, 4000.0, fp32) == (pytest.approx(1e-6), "memory")


def test_no_floor_when_nothing_counts() -> None:
    assert roofline_floor_ms(0, None, 4000.0, None) is None
    assert roofline_floor_ms(0, 0, 0.0, 1.0) is None


def test_flops_alone_without_bandwidth() -> None:
    assert roofline_floor_ms(1000, 2000, 0.0, 1.0) == (pytest.approx(2e-3), "compute")
