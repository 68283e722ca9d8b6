"""A CPU stand-in for the GPU backend, for testing the worker protocol without a GPU.

"Kernels" are Python functions chosen by symbol; device memory is numpy byte arrays; a launch
calls the function with the arguments. Symbols: `saxpy` (correct; in float64 when the argument
format says `a` is a double, as the float64 shadow's does, and in bfloat16 when it says `a` is 16
bits, as a bf16 kernel's does), `saxpy_off_by_one`, `saxpy_coarse`
(rounds `a * x` to float16: within a loose tolerance, far less accurate), `saxpy_fma` (one
rounding instead of two: a few outputs an ulp off the original's, more accurate), `saxpy_nan` (a NaN
as the last output), `saxpy_clamped` (reads x clamped to [-1, 1]: right on the default random inputs,
wrong on data beyond them), `fault` (a sticky error),
`too_big` (a recoverable launch error), `hang` (never returns).
"""
from __future__ import annotations

import re
import time
from typing import Any, Sequence

import numpy as np

from cuopt.evaluate.backend import GpuError
from cuopt.spec.dtypes import numpy_dtype


class _Mem:
    def __init__(self, nbytes: int) -> None:
        self.data = np.zeros(max(1, nbytes), np.uint8)

    def __int__(self) -> int:
        return id(self)


class FakeBackend:
    def __init__(self, device: int = 0) -> None:
        self.memory: dict[int, _Mem] = {}
        self.formats: dict[str, str] = {}

    def device_info(self) -> dict[str, Any]:
        return {"name": "Fake GPU", "arch": "sm_90", "sms": 1, "l2_bytes": 0, "memory_bytes": 1 << 30,
                "max_shared_optin": 227 * 1024, "clock_khz": 1_000_000, "driver": 0, "count": 1}

    def load(self, cubin: str, symbol: str, arg_format: str, dynamic_shared: int) -> Any:
        if symbol == "missing":
            raise GpuError("named symbol not found", sticky=False)
        return (symbol, arg_format)

    def alloc(self, nbytes: int) -> Any:
        mem = _Mem(nbytes)
        self.memory[id(mem)] = mem
        return mem

    def free(self, buf: Any) -> None:
        self.memory.pop(id(buf), None)

    def upload(self, buf: Any, host: np.ndarray) -> None:
        buf.data[: host.nbytes] = host.view(np.uint8).ravel()

    def download(self, buf: Any, host: np.ndarray) -> None:
        host.view(np.uint8).ravel()[:] = buf.data[: host.nbytes]

    def copy(self, dst: Any, src: Any, nbytes: int) -> None:
        dst.data[:nbytes] = src.data[:nbytes]

    def fill(self, buf: Any, byte: int, nbytes: int) -> None:
        buf.data[:nbytes] = byte

    def launch(self, fn: Any, grid: Sequence[int], block: Sequence[int], shared: int, args: Sequence[Any]) -> None:
        symbol, fmt = fn
        if symbol == "fault":
            raise GpuError("an illegal memory access was encountered", sticky=True)
        if symbol == "too_big":
            raise GpuError("too many resources requested for launch", sticky=False)
        if symbol == "hang":
            while True:
                time.sleep(1)
        n, a, x, y = args
        dtype = np.float64 if fmt[1:2] == "d" else np.float32
        if fmt[1:2] == "H":  # a bf16 scalar arrives as its bits (ml_dtypes loads only here: 0.7 s)
            dtype = numpy_dtype("bfloat16").type
            a = np.array(a, np.uint16).view(dtype)[()]
        xs = self.memory[x].data.view(dtype)[:n]
        ys = self.memory[y].data.view(dtype)[:n]
        limit = n - 1 if symbol == "saxpy_off_by_one" else n
        if symbol == "saxpy_fma":
            ys[:limit] = (np.float64(a) * xs[:limit] + ys[:limit]).astype(dtype)
            return
        if symbol == "saxpy_clamped":
            xs = np.clip(xs, -1, 1)
        product = dtype(a) * xs[:limit]
        if symbol == "saxpy_coarse":
            product = product.astype(np.float16).astype(dtype)
        ys[:limit] = product + ys[:limit]
        if symbol == "saxpy_nan":
            ys[-1] = np.nan

    def timed_launch(self, fn: Any, grid: Sequence[int], block: Sequence[int], shared: int,
                     args: Sequence[Any]) -> float:
        self.launch(fn, grid, block, shared, args)
        return 1.0 if fn[0] == "saxpy" else 2.0

    def timed_copy(self, dst: Any, src: Any, nbytes: int) -> float:
        self.copy(dst, src, nbytes)
        return 0.5

    def synchronize(self) -> None:
        pass

    def close(self) -> None:
        self.memory.clear()


class SizedBackend(FakeBackend):
    """FakeBackend for builds of one size set: a cubin named `<stem>.n<N>.cubin` refuses to run at
    any n but N, as a kernel compiled with `-Dn=N` would compute the wrong thing."""

    def load(self, cubin: str, symbol: str, arg_format: str, dynamic_shared: int) -> Any:
        built_for = re.search(r"\.n(\d+)\.cubin$", cubin)
        assert built_for is not None, cubin
        return (symbol, arg_format, int(built_for.group(1)))

    def launch(self, fn: Any, grid: Sequence[int], block: Sequence[int], shared: int, args: Sequence[Any]) -> None:
        symbol, fmt, built_for = fn
        if args[0] != built_for:
            raise GpuError(f"built for n={built_for}, launched at n={args[0]}", sticky=False)
        super().launch((symbol, fmt), grid, block, shared, args)
