"""Warp-shuffle reductions as C text, shared by the rules that emit them (row-parallel,
reduce-tree): the combining operations, their identities, and the butterfly over a warp."""
from __future__ import annotations

from cuopt.source.accumulations import EXTREMES

WARP = 32
FLOATS = {"float", "double"}
INTS = {"int": ("(-2147483647 - 1)", "2147483647"), "unsigned int": ("0u", "0xffffffffu"),
        "unsigned": ("0u", "0xffffffffu"), "long long": ("(-9223372036854775807LL - 1)", "9223372036854775807LL"),
        "unsigned long long": ("0ull", "0xffffffffffffffffull")}


def identity(kind: str, type_: str) -> str:
    """The value a partial of `kind` ("+", "-", "*" or an EXTREMES function) starts from."""
    if kind in ("+", "-"):
        return f"({type_})0"
    if kind == "*":
        return f"({type_})1"
    low, high = ("-INFINITY", "INFINITY") if type_ in FLOATS else INTS[type_]
    return low if EXTREMES[kind] == "max" else high


def combine(kind: str, a: str, b: str) -> str:
    if kind in ("+", "-"):
        return f"{a} + {b}"
    if kind == "*":
        return f"{a} * {b}"
    return f"{kind}({a}, {b})"


def butterfly(p: str, kind: str) -> str:
    """One line that leaves the combination of `p` over the warp in every lane."""
    return (f"for (int cuopt_o = {WARP // 2}; cuopt_o > 0; cuopt_o /= 2) "
            f"{p} = {combine(kind, p, f'__shfl_xor_sync(0xffffffffu, {p}, cuopt_o)')};")
