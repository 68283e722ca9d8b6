"""Slot loops (cuopt/source/slots.py): which element register k of a lane stands for."""
from __future__ import annotations

from cuopt.source.kernels import load
from cuopt.source.model import analyze
from cuopt.source.parse import text, walk
from cuopt.source.slots import slot_loop_of

PLAIN = """
    #pragma unroll
    for (int k = 0; k < 6; ++k) {
        const int c = lane + k * 32;
        if (c < C) atomicAdd(&db[c], 1.0f);
    }"""
VECTOR = """
    #pragma unroll
    for (int k = 0; k < 6; ++k) {
        const int v = 4 * (lane + k * 32);
        #pragma unroll
        for (int t = 0; t < 4; ++t) {
            const int c = v + t;
            if (c < C) atomicAdd(&db[c], 1.0f);
        }
    }"""


def _slot(loops: str, lane: str = "threadIdx.x % 32"):
    kernel = load(f"__global__ void k(float* db, int C)\n{{\n    const int lane = {lane};{loops}\n}}\n".encode()).kernels[0]
    m = analyze(kernel)
    call = next(n for n in walk(kernel.body) if n.type == "call_expression" and text(n).startswith("atomicAdd"))
    return slot_loop_of(m, call)


def _elements(slot, lane: int) -> list[int]:
    """The elements a lane's registers stand for, evaluating `slot.element` as C would (ints)."""
    expr = slot.element("s").replace("threadIdx.x % 32", str(lane)).replace("/", "//")
    return [eval(expr, {"s": s}) for s in range(slot.slots)]


def test_the_plain_form_is_slot_k_at_lane_plus_k_times_step() -> None:
    slot = _slot(PLAIN)
    assert (slot.slots, slot.index, slot.column, slot.width) == (6, "k", "c", 1)
    assert _elements(slot, 3) == [3 + 32 * k for k in range(6)]


def test_the_vector_form_is_slot_w_k_plus_t_at_its_element() -> None:
    slot = _slot(VECTOR)
    assert (slot.slots, slot.index, slot.column, slot.width) == (24, "4 * k + t", "c", 4)
    # register 4 * k + t holds c = 4 * (lane + 32 * k) + t, as the loop reads it
    assert _elements(slot, 5) == [4 * (5 + 32 * k) + t for k in range(6) for t in range(4)]


def test_no_slot_where_the_lane_or_the_width_do_not_hold() -> None:
    assert _slot(VECTOR, lane="blockIdx.x % 32") is None  # not the thread's place in its block
    assert _slot(VECTOR.replace("4 * (lane", "2 * (lane")) is None  # W-wide loop, 2-wide stride
    assert _slot(VECTOR.replace("const int c = v + t;", "const int c = v + 1;")) is None
