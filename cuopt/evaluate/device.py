"""Open the local GPU (through the worker) and know its limits."""
from __future__ import annotations

import importlib.util
import json
import os

from cuopt.errors import NoGpuError
from cuopt.evaluate.client import WorkerClient
from cuopt.resources import cache_dir

NO_GPU_HINT = "use --dry-run to check specs and compile without a GPU"


def open_gpu(timeout_s: float = 10.0, backend: str | None = None) -> WorkerClient:
    """Start the GPU worker; NoGpuError (exit code 2) when there is no usable GPU.
    $CUOPT_GPU_BACKEND picks another backend (a registry name or `module:Class`), for tests."""
    backend = backend or os.environ.get("CUOPT_GPU_BACKEND", "pycuda")
    if backend == "pycuda" and importlib.util.find_spec("pycuda") is None:
        raise NoGpuError(f"no CUDA GPU found: pycuda is not installed (pip install 'cuopt[gpu]'); {NO_GPU_HINT}")
    client = WorkerClient(backend, timeout_s=timeout_s)
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
