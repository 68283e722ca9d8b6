"""Input generation: reproducible from (seed, argument index), within the initializer's range."""
from __future__ import annotations

import numpy as np
import pytest

from cuopt.evaluate.inputs import POISON_BYTE, generate
from cuopt.spec.bind import BufferValue
from cuopt.spec.dtypes import numpy_dtype

FLOATS = ["float16", "bfloat16", "float32", "float64"]
INTS = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]


def buf(dtype: str, init: tuple, count: int = 10_000, role: str = "in") -> BufferValue:
    return BufferValue("x", role, dtype, count, init)


@pytest.mark.parametrize("dtype, init", [
    ("float32", ("uniform", -1.0, 1.0)), ("float64", ("normal", 0.0, 1.0)), ("int32", ("randint", -100.0, 100.0)),
    ("float16", ("uniform", 0.0, 4.0)), ("uint8", ("randint", 0.0, 256.0)), ("bfloat16", ("normal", 0.0, 1.0)),
])
def test_same_seed_and_index_reproduce(dtype: str, init: tuple) -> None:
    a = generate(buf(dtype, init), seed=3, index=2)
    b = generate(buf(dtype, init), seed=3, index=2)
    assert a.dtype == numpy_dtype(dtype)
    np.testing.assert_array_equal(a, b)


def test_different_index_or_seed_differs() -> None:
    b = buf("float32", ("uniform", -1.0, 1.0))
    base = generate(b, seed=0, index=2)
    assert not np.array_equal(base, generate(b, seed=0, index=3))
    assert not np.array_equal(base, generate(b, seed=1, index=2))


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("lo, hi", [(-1.0, 1.0), (0.5, 1.5), (-100.0, -50.0)])
def test_uniform_range(dtype: str, lo: float, hi: float) -> None:
    data = generate(buf(dtype, ("uniform", lo, hi), 50_000), 0, 0).astype(np.float64)
    assert data.dtype == np.float64
    assert lo <= data.min() and data.max() <= hi
    span = hi - lo
    assert data.min() < lo + 0.01 * span and data.max() > hi - 0.01 * span
    assert abs(data.mean() - (lo + hi) / 2) < 0.02 * span


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_normal_moments(dtype: str) -> None:
    data = generate(buf(dtype, ("normal", 3.0, 2.0), 100_000), 1, 0)
    assert data.dtype == numpy_dtype(dtype)
    assert data.mean() == pytest.approx(3.0, abs=0.05)
    assert data.std() == pytest.approx(2.0, abs=0.05)


@pytest.mark.parametrize("dtype, lo, hi", [("int32", -100, 100), ("uint8", 0, 256), ("int8", -128, 128),
                                           ("uint32", 0, 100), ("int64", -5, 5), ("uint16", 7, 9)])
def test_randint_range_and_dtype(dtype: str, lo: int, hi: int) -> None:
    data = generate(buf(dtype, ("randint", float(lo), float(hi)), 20_000), 0, 0)
    assert data.dtype == numpy_dtype(dtype)
    assert data.min() == lo and data.max() == hi - 1  # high bound exclusive, the whole range used


def test_randint_for_floats_gives_integral_values() -> None:
    data = generate(buf("float32", ("randint", -3.0, 4.0)), 0, 0)
    assert data.dtype == np.float32
    assert set(np.unique(data).tolist()) == {-3.0, -2.0, -1.0, 0.0, 1.0, 2.0, 3.0}


@pytest.mark.parametrize("dtype", FLOATS + INTS)
def test_zeros_and_ones(dtype: str) -> None:
    z = generate(buf(dtype, ("zeros",), 17), 0, 0)
    o = generate(buf(dtype, ("ones",), 17), 0, 0)
    assert z.dtype == o.dtype == numpy_dtype(dtype)
    assert z.shape == o.shape == (17,)
    assert (z == 0).all() and (o == 1).all()


def test_empty_buffer() -> None:
    assert generate(buf("float32", ("uniform", -1.0, 1.0), 0), 0, 0).shape == (0,)


def poisoned(dtype: str, count: int) -> np.ndarray:
    """What an `out` buffer holds before a run: every byte POISON_BYTE (the worker's fill)."""
    return np.full(count * numpy_dtype(dtype).itemsize, POISON_BYTE, np.uint8).view(numpy_dtype(dtype))


@pytest.mark.parametrize("dtype", FLOATS)
def test_poisoned_is_nan_for_floats(dtype: str) -> None:
    p = poisoned(dtype, 9)
    assert p.dtype == numpy_dtype(dtype) and p.shape == (9,)
    assert np.isnan(p).all()


@pytest.mark.parametrize("dtype", INTS)
def test_poisoned_integers_are_all_ones_bytes(dtype: str) -> None:
    p = poisoned(dtype, 5)
    assert p.dtype == numpy_dtype(dtype) and p.shape == (5,)
    assert (p.view(np.uint8) == POISON_BYTE).all()
    expected = -1 if dtype.startswith("int") else np.iinfo(dtype).max
    assert (p == expected).all()
