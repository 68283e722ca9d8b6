"""The one C type table: sizes, signedness, kind and vector types (cuopt/source/ctypes.py)."""
from __future__ import annotations

import pytest

from cuopt.source.ctypes import (INTEGRAL, is_float, is_integer, is_signed_integer, is_unsigned_integer, size_of,
                                 vector_element, vector_type)


@pytest.mark.parametrize("type_", ["int", "const int", "long", "long long", "short", "signed char", "int64_t",
                                   "int32_t", "std::int64_t", "ptrdiff_t", "long long int", "signed"])
def test_signed_integers(type_: str) -> None:
    assert is_integer(type_) and is_signed_integer(type_) and not is_unsigned_integer(type_)


@pytest.mark.parametrize("type_", ["unsigned", "unsigned int", "size_t", "uint32_t", "uint64_t",
                                   "unsigned long long", "const unsigned char"])
def test_unsigned_integers(type_: str) -> None:
    assert is_integer(type_) and is_unsigned_integer(type_) and not is_signed_integer(type_)


def test_plain_char_has_the_host_s_sign_and_bool_is_no_integer() -> None:
    assert is_integer("char") and not is_signed_integer("char") and not is_unsigned_integer("char")
    assert not is_integer("bool") and "bool" not in INTEGRAL


@pytest.mark.parametrize("type_", ["float", "double", "__half", "half", "__nv_bfloat16", "const float"])
def test_floats(type_: str) -> None:
    assert is_float(type_) and not is_integer(type_)


def test_unknown_types_are_neither() -> None:
    for type_ in ("T", "float4", "MyIndex", "float*"):
        assert not is_integer(type_) and not is_signed_integer(type_)
    assert not is_float("T") and size_of("T") is None


def test_sizes_of_scalars_and_vectors() -> None:
    assert [size_of(t) for t in ("char", "__half", "float", "unsigned", "double", "int64_t", "size_t")] == \
        [1, 2, 4, 4, 8, 8, 8]
    assert [size_of(t) for t in ("float2", "float4", "double2", "uchar4", "longlong2")] == [8, 16, 16, 4, 16]


def test_vector_types_are_one_load_wide() -> None:
    assert vector_type("float", 4) == "float4" and vector_type("unsigned", 2) == "uint2"
    assert vector_type("unsigned int", 4) == "uint4" and vector_type("signed char", 4) == "char4"
    assert vector_type("long long", 2) == "longlong2" and vector_type("unsigned char", 4) == "uchar4"
    assert vector_type("double", 4) is None  # 32 bytes: two loads
    assert vector_type("float", 8) is None and vector_type("__half", 2) is None and vector_type("T", 4) is None


def test_vector_elements() -> None:
    assert [vector_element(t) for t in ("float4", "float1", "uint2", "double2", "float", "T4")] == \
        ["float", "float", "unsigned int", "double", None, None]
