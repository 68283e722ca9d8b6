"""Element-wise passes over large output buffers, a chunk at a time, on threads: numpy releases
the GIL on arrays this large, so comparing a 32-Mi-element output takes a fraction of a second
rather than seconds. Results come back in chunk order, so whatever sums them adds in the same
order whatever the number of threads."""
from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, TypeVar

T = TypeVar("T")
THREADS = max(1, min(8, os.cpu_count() or 1))

_pool: ThreadPoolExecutor | None = None
_lock = threading.Lock()


def _executor() -> ThreadPoolExecutor:
    global _pool
    with _lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=THREADS, thread_name_prefix="cuopt-chunks")
        return _pool


def over_chunks(size: int, chunk: int, fn: Callable[[int, int], T]) -> list[T]:
    """`fn(lo, hi)` for each chunk [lo, hi) of [0, size), in order; in parallel when there are several."""
    bounds = [(lo, min(lo + chunk, size)) for lo in range(0, size, chunk)]
    if len(bounds) <= 1 or THREADS == 1:
        return [fn(lo, hi) for lo, hi in bounds]
    return list(_executor().map(lambda b: fn(*b), bounds))
