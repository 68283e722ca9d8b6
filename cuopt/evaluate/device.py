"""Open the local GPU (through the worker) and know its limits."""
from __future__ import annotations

import importlib.util
import json
import os
from typing import Any

from cuopt.errors import NoGpuError
from cuopt.evaluate.client import WorkerClient
from cuopt.resources import cache_dir

NO_GPU_HINT = "use --dry-run to check specs and compile without a GPU"

# FP32 lanes per SM (results of a 32-bit float add, multiply or fused multiply-add per clock), from the
# throughput table of the CUDA C++ Programming Guide. An architecture missing here has no FP32 peak.
FP32_LANES_PER_SM: dict[str, int] = {
    "sm_70": 64, "sm_72": 64, "sm_75": 64,  # Volta, Turing
    "sm_80": 64,  # A100
    "sm_86": 128, "sm_87": 128, "sm_89": 128,  # GA10x, Orin, Ada
    "sm_90": 128,  # Hopper
    "sm_100": 128, "sm_120": 128,  # Blackwell
}


def open_gpu(timeout_s: float = 10.0, backend: str | None = None, device: int = 0) -> WorkerClient:
    """Start the GPU worker on GPU `device`; NoGpuError (exit code 2) when there is no usable GPU.
    $CUOPT_GPU_BACKEND picks another backend (a registry name or `module:Class`), for tests."""
    backend = backend or os.environ.get("CUOPT_GPU_BACKEND", "pycuda")
    if backend == "pycuda" and importlib.util.find_spec("pycuda") is None:
        raise NoGpuError(f"no CUDA GPU found: pycuda is not installed (pip install 'cuopt[gpu]'); {NO_GPU_HINT}")
    client = WorkerClient(backend, timeout_s=timeout_s, device=device)
    client.start()
    return client


def peak_bandwidth(client: WorkerClient) -> float:
    """Device-to-device copy bandwidth in GB/s (read + write), measured once per device and driver."""
    assert client.device is not None
    key = f"{client.device['name']}|driver {client.device['driver']}"
    path = cache_dir() / "devices.json"
    known = json.loads(path.read_text()) if path.is_file() else {}
    if key not in known:
        known[key] = {"copy_gbps": round(client.bandwidth(), 1)}
        path.write_text(json.dumps(known, indent=2))
    return float(known[key]["copy_gbps"])


def peak_fp32_gflops(device: dict[str, Any]) -> float | None:
    """Peak FP32 GFLOP/s from the device's attributes: SMs x FP32 lanes per SM x 2 (a fused
    multiply-add is two FLOPs) x the maximum SM clock. None when an attribute or the lane count is
    unknown."""
    lanes = FP32_LANES_PER_SM.get(str(device.get("arch")))
    sms, clock_khz = device.get("sms") or 0, device.get("clock_khz") or 0
    if lanes is None or sms <= 0 or clock_khz <= 0:
        return None
    return sms * lanes * 2 * clock_khz / 1e6


def roofline_floor_ms(nbytes: int, flops: float | None, bandwidth_gbps: float,
                      fp32_gflops: float | None) -> tuple[float, str] | None:
    """The least time a kernel can take: its bytes at the measured copy bandwidth or its FLOPs at
    the FP32 peak, whichever is longer, with what bounds it ("memory" or "compute"). The FLOP part
    counts only when both `flops` and `fp32_gflops` are known; None when neither part is positive."""
    memory = nbytes / (bandwidth_gbps * 1e9) * 1e3 if bandwidth_gbps > 0 else 0.0
    compute = flops / (fp32_gflops * 1e9) * 1e3 if flops and fp32_gflops else 0.0
    if memory <= 0 and compute <= 0:
        return None
    return (compute, "compute") if compute > memory else (memory, "memory")
