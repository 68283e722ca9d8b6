"""Whether two iterations of a loop can touch the same element: the independence test that
parallelizing a serial loop needs.

An access's index is an affine `Poly`. Where it is `a * U + q` with `0 <= q < U` known (q a ranged
quantity: the thread's guarded global index, a loop counter under its bound), it names the pair
`(a, q)`, as a row-major 2D subscript does. Two accesses in iterations `v` and `v'` of the loop
touch the same element only when every component agrees; the test proves that this forces
`v = v'` (the same iteration) or cannot happen at all. Anything it cannot prove is a dependence.
"""
from __future__ import annotations

from dataclasses import dataclass

from cuopt.source.affine import Poly

PRIME = "'"


@dataclass(frozen=True)
class Ranged:
    """A quantity known to lie in [0, bound)."""

    value: Poly
    bound: Poly


def components(index: Poly, ranged: list[Ranged]) -> list[Poly]:
    """`index` as the components of a row-major subscript, outermost first (itself when it is not
    of the form `a * U + q`, 0 <= q < U)."""
    for r in ranged:
        rest = index - r.value
        for a in [x.value for x in ranged] + [_quotient(rest, r.bound)]:
            if a is not None and a * r.bound == rest:
                return components(a, ranged) + [r.value]
    return [index]


def _quotient(p: Poly, divisor: Poly) -> Poly | None:
    """p / divisor when the divisor is a single symbol and p is linear in it."""
    symbols = divisor.symbols()
    if len(divisor.terms) != 1 or divisor.terms[0][1] != 1 or len(symbols) != 1:
        return None
    name = next(iter(symbols))
    return p.coefficient(name) if p.degree_in([name]) == 1 else None


def prime(p: Poly, names: set[str]) -> Poly:
    """`p` with each of `names` renamed to its primed twin (the other iteration's value)."""
    return Poly.of({tuple(sorted(s + PRIME if s in names else s for s in m)): c for m, c in p.terms})


def same_iteration(first: Poly, second: Poly, var: str, inner: set[str], ranged: list[Ranged]) -> bool:
    """True when `first` in iteration `var` and `second` in iteration `var'` can name the same
    element only if `var == var'` (or never). `inner`: counters of loops nested in the loop, whose
    values in the two iterations are unrelated."""
    a = components(first, ranged)
    b = [prime(c, {var} | inner) for c in components(second, ranged)]
    if len(a) != len(b):
        a, b = [first], [prime(second, {var} | inner)]
    other = var + PRIME
    pinned: dict[str, Poly] = {}  # an equation c * var + R = 0 forces var = -R / c: R here ...
    scale: dict[str, int] = {}  # ... and c here
    for x, y in zip(a, b):
        d = x - y
        names = d.symbols()
        if names & (inner | {s + PRIME for s in inner}):
            continue  # unrelated inner counters: no conclusion
        if var not in names and other not in names:
            if d.constant() not in (None, 0):
                return True  # the components can never agree
            continue
        cv, co = d.coefficient(var), d.coefficient(other)
        if d.degree_in([var, other]) != 1 or (cv.terms and cv.constant() is None) or \
                (co.terms and co.constant() is None):
            continue
        rest = d - cv * Poly.symbol(var) - co * Poly.symbol(other)
        c1, c2 = cv.constant() or 0, co.constant() or 0
        if c1 and c1 == -c2 and not rest.terms:
            return True  # c * (v - v') = 0
        if c1 and not c2:
            pinned[var], scale[var] = rest, c1
        elif c2 and not c1:
            pinned[other], scale[other] = rest, c2
    if var in pinned and other in pinned:  # v = -R/c and v' = -R'/c'
        return pinned[var] * Poly.const(scale[other]) == pinned[other] * Poly.const(scale[var])
    return False
