"""Host-side contents of spec buffers, reproducible from the seed."""
from __future__ import annotations

import numpy as np

from cuopt.spec.bind import BufferValue
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

