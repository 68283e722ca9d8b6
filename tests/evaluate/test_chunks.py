from __future__ import annotations

import threading

import numpy as np
import pytest

from cuopt.evaluate import accuracy, chunks, compare as compare_module
from cuopt.evaluate.accuracy import error
from cuopt.evaluate.chunks import over_chunks
from cuopt.evaluate.compare import compare


def test_chunks_in_order_with_the_last_one_short() -> None:
    assert over_chunks(10, 4, lambda lo, hi: (lo, hi)) == [(0, 4), (4, 8), (8, 10)]
    assert over_chunks(0, 4, lambda lo, hi: (lo, hi)) == []


def test_several_chunks_run_on_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(chunks, "THREADS", 4)
    names = over_chunks(64, 8, lambda lo, hi: threading.current_thread().name)
    assert all(n.startswith("cuopt-chunks") for n in names)
    assert over_chunks(8, 8, lambda lo, hi: threading.current_thread().name) == [threading.current_thread().name]


def _buffers(n: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    ref = rng.standard_normal(n)
    out = (ref * (1 + 1e-6 * rng.standard_normal(n))).astype(np.float32)
    out[[5, n // 3, n - 1]] = [np.nan, np.inf, 3.0]
    ref[[7, n // 2]] = [np.nan, -np.inf]
    return out, ref, np.abs(rng.standard_normal(n)) * 1e-7


@pytest.mark.parametrize("threads", [1, 3])
def test_threaded_results_equal_one_pass(monkeypatch: pytest.MonkeyPatch, threads: int) -> None:
    """The same comparison and error, bit for bit, in one chunk and in many chunks on threads."""
    out, ref, slack = _buffers(10_007, 3)
    whole = compare("y", out, ref, 1e-5, 1e-6, slack), error(out, ref)
    monkeypatch.setattr(chunks, "THREADS", threads)
    monkeypatch.setattr(compare_module, "CHUNK", 1000)
    monkeypatch.setattr(accuracy, "CHUNK", 1000)
    chunked = compare("y", out, ref, 1e-5, 1e-6, slack), error(out, ref)
    assert chunked[0] == whole[0]
    assert chunked[0].mismatches >= 4 and chunked[0].first_bad == 5
    assert chunked[1].elements == whole[1].elements == 10_007 - 4
    assert (chunked[1].max_abs, chunked[1].max_rel) == (whole[1].max_abs, whole[1].max_rel)
    assert chunked[1].norm == pytest.approx(whole[1].norm, rel=1e-12)


def test_the_originals_own_error_in_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    out, ref, _ = _buffers(10_007, 4)
    monkeypatch.setattr(chunks, "THREADS", 3)
    monkeypatch.setattr(accuracy, "CHUNK", 1000)
    o, r = out.astype(np.float64), ref
    expected = np.where(np.isfinite(o) & np.isfinite(r), np.abs(o - r), 0.0)
    got = accuracy.own_error(out, ref)
    assert got.dtype == np.float64 and np.array_equal(got, expected)
    assert got[5] == 0.0 and got[7] == 0.0 and got[10_006] > 1.0  # NaN, NaN in the reference, 3.0 off
