"""A stand-in GPU for end-to-end tests of `cuopt optimize` on a CPU.

Every kernel whose symbol demangles to a name starting with `saxpy` computes saxpy with numpy, whatever its launch.
The "time" of a kernel is a fixed pseudo-random number derived from its cubin, so every variant
has a stable, different speed. It is for testing the search, confirmation and write-back logic;
it measures nothing."""
from __future__ import annotations

import zlib
from pathlib import Path
from typing import Any, Sequence

from cuopt.evaluate.compile import base_name
from tests.evaluate.fake_backend import FakeBackend


class StandInBackend(FakeBackend):
    def load(self, cubin: str, symbol: str, arg_format: str, dynamic_shared: int) -> Any:
        speed = 0.4 + (zlib.crc32(Path(cubin).read_bytes()) % 1000) / 1000.0
        return (base_name(symbol) or symbol, speed, arg_format)

    def timed_launch(self, fn: Any, grid: Sequence[int], block: Sequence[int], shared: int,
                     args: Sequence[Any]) -> float:
        self.launch(fn, grid, block, shared, args)
        return fn[1]

    def launch(self, fn: Any, grid: Sequence[int], block: Sequence[int], shared: int, args: Sequence[Any]) -> None:
        super().launch((fn[0], fn[2]), grid, block, shared, args)
