"""Symbolic integer polynomials for index expressions.

A `Poly` maps monomials (sorted tuples of symbol names, repeated for powers) to integer
coefficients. Symbols are `threadIdx.x`, `blockIdx.y`, `blockDim.x`, `gridDim.x`, loop variables
and scalar parameters. Index expressions that cannot be written this way are opaque (None).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterable, Mapping

THREAD = ("threadIdx.x", "threadIdx.y", "threadIdx.z")
BLOCK = ("blockIdx.x", "blockIdx.y", "blockIdx.z")
DIM = ("blockDim.x", "blockDim.y", "blockDim.z")
GRID = ("gridDim.x", "gridDim.y", "gridDim.z")
BUILTINS = frozenset(THREAD + BLOCK + DIM + GRID)

Monomial = tuple[str, ...]


@dataclass(frozen=True)
class Poly:
    terms: tuple[tuple[Monomial, int], ...]  # sorted, no zero coefficients

    @staticmethod
    def of(mapping: dict[Monomial, int]) -> Poly:
        return Poly(tuple(sorted((m, c) for m, c in mapping.items() if c != 0)))

    @staticmethod
    def const(value: int) -> Poly:
        return Poly.of({(): value})

    @staticmethod
    def symbol(name: str) -> Poly:
        return Poly.of({(name,): 1})

    @property
    def mapping(self) -> dict[Monomial, int]:
        return dict(self.terms)

    def __add__(self, other: Poly) -> Poly:
        out = self.mapping
        for m, c in other.terms:
            out[m] = out.get(m, 0) + c
        return Poly.of(out)

    def __neg__(self) -> Poly:
        return Poly.of({m: -c for m, c in self.terms})

    def __sub__(self, other: Poly) -> Poly:
        return self + (-other)

    def __mul__(self, other: Poly) -> Poly:
        out: dict[Monomial, int] = {}
        for m1, c1 in self.terms:
            for m2, c2 in other.terms:
                m = tuple(sorted(m1 + m2))
                out[m] = out.get(m, 0) + c1 * c2
        return Poly.of(out)

    def symbols(self) -> set[str]:
        return {s for m, _ in self.terms for s in m}

    def constant(self) -> int | None:
        """The value if the polynomial is a constant."""
        if not self.terms:
            return 0
        if len(self.terms) == 1 and self.terms[0][0] == ():
            return self.terms[0][1]
        return None

    def degree_in(self, names: Iterable[str]) -> int:
        names = set(names)
        return max((sum(1 for s in m if s in names) for m, _ in self.terms), default=0)

    def coefficient(self, name: str) -> Poly:
        """The coefficient of `name` when the polynomial is linear in it (terms without it dropped)."""
        out: dict[Monomial, int] = {}
        for m, c in self.terms:
            if name in m:
                rest = list(m)
                rest.remove(name)
                out[tuple(rest)] = out.get(tuple(rest), 0) + c
        return Poly.of(out)

    def without(self, names: Iterable[str]) -> Poly:
        """Terms that mention none of `names`."""
        names = set(names)
        return Poly.of({m: c for m, c in self.terms if not names & set(m)})

    def substitute(self, name: str, value: Poly) -> Poly:
        out = Poly.const(0)
        for m, c in self.terms:
            term = Poly.const(c)
            for s in m:
                term = term * (value if s == name else Poly.symbol(s))
            out = out + term
        return out

    def depends_on(self, name: str) -> bool:
        return any(name in m for m, _ in self.terms)

    def __str__(self) -> str:
        if not self.terms:
            return "0"
        parts = []
        for m, c in self.terms:
            body = "*".join(m)
            if not body:
                parts.append(str(c))
            elif c == 1:
                parts.append(body)
            elif c == -1:
                parts.append(f"-{body}")
            else:
                parts.append(f"{c}*{body}")
        return " + ".join(parts).replace("+ -", "- ")


def poly_value(p: Poly | None, env: Mapping[str, int]) -> int | None:
    """A polynomial's value where `env` gives every symbol; None otherwise."""
    if p is None or any(s not in env for s in p.symbols()):
        return None
    return sum(c * math.prod(env[s] for s in m) for m, c in p.terms)


def to_expr(p: Poly) -> str:
    """A spec expression for a polynomial over size names: `rows*cols`, `n - k + 1`."""
    terms = sorted(p.terms, key=lambda t: (not t[0], t[1] < 0, -len(t[0]), t[0]))
    out = ""
    for m, c in terms:
        body = "*".join(m)
        mag = abs(c)
        piece = body if mag == 1 and body else (f"{mag}*{body}" if body else str(mag))
        if not out:
            out = f"-{piece}" if c < 0 else piece
        else:
            out += f" - {piece}" if c < 0 else f" + {piece}"
    return out or "0"


def global_index(axis: int) -> Poly:
    """blockIdx.a * blockDim.a + threadIdx.a."""
    return Poly.symbol(BLOCK[axis]) * Poly.symbol(DIM[axis]) + Poly.symbol(THREAD[axis])


def axis_of_global_index(p: Poly) -> int | None:
    """The axis if `p` is exactly the canonical global thread index along it."""
    for axis in range(3):
        if p == global_index(axis):
            return axis
    return None
