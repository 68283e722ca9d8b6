"""C types as the kernel analysis reads them: size, signedness and kind of a scalar type, CUDA's vector
types and the 16-bit floats. One table of spellings, spec/dtypes.py's (`unsigned` is `unsigned int`,
`int64_t` is `long`), answers every question; qualifiers and `std::` are ignored."""
from __future__ import annotations

import re

from cuopt.spec.dtypes import C_SCALARS, C_VECTORS, HALF2_TYPES, HALF_TYPES, c_type, itemsize, normalize_c_type

__all__ = ["ARITHMETIC", "HALF2_TYPES", "HALF_TYPES", "INTEGRAL", "is_float", "is_integer", "is_signed_integer",
           "is_unsigned_integer", "size_of", "vector_element", "vector_type"]

# integer types as written (`bool` is no number to compute an index with)
INTEGRAL = frozenset(name for name, dtype in C_SCALARS.items() if dtype.startswith(("int", "uint")) and name != "bool")
# the number types a cast or a pin may name: the integers, bool, float and double (not the 16-bit floats,
# whose conversions are functions of their headers)
ARITHMETIC = INTEGRAL | {"bool", "float", "double"}
_PREFIX = {scalar: prefix for prefix, scalar in C_VECTORS.items()} | {"signed char": "char", "unsigned": "uint"}
_VECTOR_BYTES = 16  # the widest load: a vector type wider than this is two loads


def _scalar(type_: str) -> str | None:
    """The dtype of a scalar C type (`const unsigned` -> uint32); None for anything else."""
    return C_SCALARS.get(normalize_c_type(type_))


def is_integer(type_: str) -> bool:
    """`int`, `unsigned long long`, `int64_t`, `size_t`, ... (not bool)."""
    return normalize_c_type(type_) in INTEGRAL


def is_signed_integer(type_: str) -> bool:
    """An integer type whose values are signed on every target: `int`, `long`, `int64_t`, `ptrdiff_t`;
    not a plain `char` (unsigned on some hosts), not `size_t` nor any `unsigned`."""
    dtype = _scalar(type_)
    return is_integer(type_) and dtype is not None and dtype.startswith("int") and normalize_c_type(type_) != "char"


def is_unsigned_integer(type_: str) -> bool:
    """`unsigned`, `size_t`, `uint32_t`, ...: an integer type that holds no negative value."""
    dtype = _scalar(type_)
    return is_integer(type_) and dtype is not None and dtype.startswith("uint")


def is_float(type_: str) -> bool:
    """`float`, `double` or a 16-bit float (`__half`, `__nv_bfloat16`)."""
    dtype = _scalar(type_)
    return dtype is not None and dtype.startswith(("float", "bfloat"))


def size_of(type_: str) -> int | None:
    """Bytes of a scalar or CUDA vector type (`float4` is 16); None for a type the table lacks."""
    t = c_type(type_)
    return None if t is None else itemsize(t.dtype) * t.width


def vector_element(type_: str) -> str | None:
    """The scalar C type of a CUDA vector type (`float4` -> `float`, `uint2` -> `unsigned int`); None
    for anything else."""
    m = re.fullmatch(r"([a-z]+)[1-4]", normalize_c_type(type_))
    return C_VECTORS.get(m.group(1)) if m else None


def vector_type(element: str, width: int) -> str | None:
    """CUDA's `width`-wide vector of `element` that one load moves (`float`, 4 -> `float4`;
    `double`, 4 -> None: 32 bytes); None where CUDA has none."""
    element = normalize_c_type(element)
    prefix, size = _PREFIX.get(element), size_of(element)
    if prefix is None or size is None or element in HALF_TYPES or not 2 <= width <= 4 or size * width > _VECTOR_BYTES:
        return None
    return f"{prefix}{width}"
