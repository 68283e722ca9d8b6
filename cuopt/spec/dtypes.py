"""Element types of spec buffers and scalars, and how C parameter types map onto them."""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

DTYPES: dict[str, int] = {  # name -> bytes per element
    "float16": 2, "float32": 4, "float64": 8, "bfloat16": 2,
    "int8": 1, "int16": 2, "int32": 4, "int64": 8,
    "uint8": 1, "uint16": 2, "uint32": 4, "uint64": 8,
}

FLOAT_TOLERANCE: dict[str, tuple[float, float]] = {  # dtype -> (rtol, atol)
    "float16": (1e-2, 1e-3),
    # bfloat16 keeps 8 significant bits: one unit in the last place is 2**-7 (7.8e-3) of a value in
    # [1, 2). rtol 1.6e-2 is just over two such units, what a variant that rounds an intermediate to
    # bf16 once more (or sums in fp32 in another order) can differ by; atol 8e-3 is one unit at 1.0,
    # as float16's 1e-3 is one of its units there.
    "bfloat16": (1.6e-2, 8e-3),
    "float32": (1e-4, 1e-5),
    "float64": (1e-9, 1e-12),
}

C_SCALARS: dict[str, str] = {  # C scalar type as written -> dtype: the one table of C types (cuopt/source/ctypes.py)
    "float": "float32", "double": "float64", "half": "float16", "__half": "float16",
    "__nv_bfloat16": "bfloat16", "nv_bfloat16": "bfloat16",
    "char": "int8", "signed char": "int8", "unsigned char": "uint8", "bool": "uint8",
    "short": "int16", "short int": "int16", "signed short": "int16",
    "unsigned short": "uint16", "unsigned short int": "uint16",
    "int": "int32", "signed": "int32", "signed int": "int32",
    "unsigned": "uint32", "unsigned int": "uint32",
    "long": "int64", "long int": "int64", "long long": "int64", "long long int": "int64",
    "unsigned long": "uint64", "unsigned long int": "uint64",
    "unsigned long long": "uint64", "unsigned long long int": "uint64",
    "size_t": "uint64", "ptrdiff_t": "int64",
    "int8_t": "int8", "int16_t": "int16", "int32_t": "int32", "int64_t": "int64",
    "uint8_t": "uint8", "uint16_t": "uint16", "uint32_t": "uint32", "uint64_t": "uint64",
}
C_VECTORS: dict[str, str] = {  # CUDA vector type prefix -> scalar C type
    "float": "float", "double": "double", "half": "__half", "int": "int", "uint": "unsigned int",
    "char": "char", "uchar": "unsigned char", "short": "short", "ushort": "unsigned short",
    "long": "long", "ulong": "unsigned long", "longlong": "long long", "ulonglong": "unsigned long long",
}
# 16-bit float C types and their two-wide vectors (cuda_fp16.h, cuda_bf16.h): the one list the
# rewrites and the float64 twin read
HALF_TYPES = ("__half", "half", "__nv_bfloat16", "nv_bfloat16")
HALF2_TYPES = {"__half2": "float16", "half2": "float16", "__nv_bfloat162": "bfloat16", "nv_bfloat162": "bfloat16"}
HALF_DTYPES = ("float16", "bfloat16")
_QUALIFIERS = {"const", "volatile", "__restrict__", "restrict", "__restrict", "struct"}


@dataclass(frozen=True)
class CType:
    """A C parameter type reduced to what a spec needs: element dtype and vector width."""

    dtype: str
    width: int = 1


def is_float(dtype: str) -> bool:
    return dtype.startswith("float") or dtype == "bfloat16"


def numpy_dtype(dtype: str) -> np.dtype:
    """The numpy dtype of a spec dtype (bfloat16 through the ml_dtypes package)."""
    import numpy as np  # deferred: `cuopt check` reads dtypes and must start without numpy

    if dtype == "bfloat16":
        import ml_dtypes  # deferred: 0.7 s to import, and only bf16 needs it

        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(dtype)


def itemsize(dtype: str) -> int:
    return DTYPES[dtype]


def moved_bytes(role: str, dtype: str, count: int) -> int:
    """Bytes a buffer moves through a kernel: in and out once, inout twice."""
    return count * itemsize(dtype) * (2 if role == "inout" else 1)


def normalize_c_type(text: str) -> str:
    """`const  unsigned   int` -> `unsigned int` (qualifiers dropped, spaces folded)."""
    words = [w for w in re.split(r"\s+", text.replace("*", " ").strip()) if w and w not in _QUALIFIERS]
    return " ".join(words).removeprefix("std::")


def c_type(text: str) -> CType | None:
    """Map a C element type (`float`, `unsigned char`, `float4`) to a dtype; None if unknown."""
    name = normalize_c_type(text)
    if name in C_SCALARS:
        return CType(C_SCALARS[name])
    m = re.fullmatch(r"([a-z]+)([1-4])", name)
    if m and m.group(1) in C_VECTORS:
        base = C_SCALARS[C_VECTORS[m.group(1)]]
        return CType(base, int(m.group(2)))
    if name in HALF2_TYPES:
        return CType(HALF2_TYPES[name], 2)
    return None


def int_range(dtype: str) -> tuple[int, int]:
    """Smallest and largest value of an integer dtype."""
    bits = 8 * DTYPES[dtype]
    return (0, 2**bits - 1) if dtype.startswith("uint") else (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1)


def check_randint(dtype: str, lo: float, hi: float) -> str | None:
    """Why randint(lo, hi), drawing from [lo, hi), does not suit `dtype`; None when it does."""
    if lo != int(lo) or hi != int(hi):
        return f"randint({lo:g}, {hi:g}) needs integer bounds"
    if hi <= lo:
        return f"randint({lo:g}, {hi:g}) is empty: the upper bound is exclusive and must exceed the lower"
    if not is_float(dtype):
        small, large = int_range(dtype)
        if lo < small or hi - 1 > large:
            return f"randint({lo:g}, {hi:g}) does not fit {dtype} ({small} to {large})"
    return None
