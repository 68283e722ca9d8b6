"""The independence test: two accesses in iterations v and v' of a loop name the same element
only when v = v' (or never)."""
from __future__ import annotations

from cuopt.source.affine import Poly, global_index
from cuopt.source.dependence import Ranged, components, same_iteration

G, V, I = global_index(0), Poly.symbol("v"), Poly.symbol("i")
M, N = Poly.symbol("m"), Poly.symbol("n")
RANGED = [Ranged(G, M), Ranged(V, M), Ranged(I, N)]


def test_a_row_major_index_is_a_pair_when_the_inner_part_is_bounded_by_the_stride() -> None:
    assert components(G * M + V, RANGED) == [G, V]
    assert components(V * M + G, RANGED) == [V, G]
    assert components(G * (M + Poly.const(1)) + V, [Ranged(G, M + Poly.const(1)), Ranged(V, M + Poly.const(1))]) == [G, V]
    assert components(G * M + V + Poly.const(1), RANGED) == [G * M + V + Poly.const(1)]  # v + 1 may reach m


def test_the_same_index_moving_with_the_loop_is_one_iteration() -> None:
    assert same_iteration(G * M + V, G * M + V, "v", set(), RANGED)
    assert same_iteration(V, V, "v", set(), RANGED)


def test_a_mirrored_element_is_written_by_the_same_iteration_only() -> None:
    assert same_iteration(G * M + V, V * M + G, "v", set(), RANGED)


def test_the_neighbour_of_another_iteration_is_a_dependence() -> None:
    assert not same_iteration(G * M + V, G * M + V - Poly.const(1), "v", set(), RANGED)


def test_an_index_that_does_not_move_with_the_loop_is_shared_by_every_iteration() -> None:
    assert not same_iteration(G, G, "v", set(), RANGED)


def test_components_that_never_agree_are_independent() -> None:
    assert same_iteration(G * Poly.const(2), G * Poly.const(2) + Poly.const(1), "v", set(), RANGED)


def test_inner_counters_are_unrelated_between_iterations() -> None:
    assert not same_iteration(V * N + I, I * N + V, "v", {"i"}, RANGED)  # (v, i) and (i', v') can meet
    assert same_iteration(G * M + V, G * M + V, "v", {"i"}, RANGED)
