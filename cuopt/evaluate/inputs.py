"""Host-side contents of spec buffers, reproducible from the seed."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from cuopt.capture.manifest import CaptureError, array_problem
from cuopt.spec.bind import BufferValue, Instance
from cuopt.spec.dtypes import is_float, numpy_dtype

POISON_BYTE = 0xFF  # all-ones bytes: NaN for every float dtype, -1 / max for integers


def generate(buf: BufferValue, seed: int, index: int) -> np.ndarray:
    """The initial contents of an in/inout buffer; `index` is the argument position."""
    dtype = numpy_dtype(buf.dtype)
    kind, *args = buf.init
    rng = np.random.Generator(np.random.PCG64([seed, index]))
    n = buf.count
    if kind == "zeros":
        return np.zeros(n, dtype)
    if kind == "ones":
        return np.ones(n, dtype)
    if kind == "randint":
        lo, hi = int(args[0]), int(args[1])
        if is_float(buf.dtype):
            return rng.integers(lo, hi, n).astype(dtype)
        return rng.integers(lo, hi, n, dtype=dtype)
    work = np.float64 if dtype == np.float64 else np.float32
    if kind == "uniform":
        lo, hi = args
        data = rng.random(n, dtype=work)
        data *= hi - lo
        data += lo
    else:  # normal
        mean, std = args
        data = rng.standard_normal(n, dtype=work)
        data *= std
        data += mean
    return data.astype(dtype, copy=False)


def initial(buf: BufferValue, seed: int, index: int) -> np.ndarray:
    """The initial contents of a buffer: its captured array when it has one, else generated."""
    return captured(buf.before, buf) if buf.before is not None else generate(buf, seed, index)


def expected(instance: Instance) -> dict[str, np.ndarray]:
    """The captured contents the written buffers must have after the launch, by name."""
    return {a.name: captured(a.after, a) for a in instance.args
            if isinstance(a, BufferValue) and a.role != "in" and a.after is not None}


def captured(path: str, buf: BufferValue) -> np.ndarray:
    """A captured .npy array, checked to hold the buffer's count of its dtype (the capture may have
    been taken again since the spec was bound)."""
    problem = array_problem(Path(path), buf.dtype, buf.count)
    if problem is not None:
        raise CaptureError(f"{path}: {problem}; the capture changed while in use: run again")
    return np.load(path, allow_pickle=False)

