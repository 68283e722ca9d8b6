"""Locals written through a helper's reference parameters (cuopt/source/outparams.py)."""
from __future__ import annotations

from cuopt.source.kernels import load
from cuopt.source.outparams import assigned_outside, reference_writes

HELPERS = """
__device__ void welford(float v, float& mean, float& m2, float& n) { n += 1.0f; float d = v - mean; mean += d / n; m2 += d * (v - mean); }
__device__ float scaled(const float& v, float s) { return v * s; }
__device__ void bump(int& k) { ++k; }
__device__ void bump(int& k, int by) { k += by; }
"""


def _kernel(body: str):
    source = HELPERS + f"__global__ void k(const float* x, float* out, int n)\n{{\n{body}\n}}\n"
    return next(k for k in load(source.encode()).kernels if k.name == "k")


def _writes(body: str) -> list[tuple[str, str]]:
    kernel = _kernel(body)
    return [(call.child_by_field_name("function").text.decode(), name) for call, name in reference_writes(kernel.body)]


def test_names_passed_to_reference_parameters_are_written() -> None:
    body = "float m = 0, s = 0, c = 0; for (int j = 0; j < n; ++j) welford(x[j], m, s, (c));"
    assert _writes(body) == [("welford", "m"), ("welford", "s"), ("welford", "c")]


def test_const_references_values_and_other_functions_write_nothing() -> None:
    assert _writes("float a = 1; out[0] = scaled(a, 2.0f) + fmaxf(a, 0.0f) + expf(a);") == []
    assert _writes("float a = 1; welford(a, out[0], out[1], out[2]);") == []  # elements: accesses, not locals


def test_every_overload_s_reference_parameters_count() -> None:
    assert _writes("int k = 0; bump(k); bump(k, 2);") == [("bump", "k"), ("bump", "k")]


def test_a_loop_s_running_values_include_out_parameters() -> None:
    kernel = _kernel("float m = 0, s = 0, c = 0; for (int j = 0; j < n; ++j) { float v = x[j]; welford(v, m, s, c); }"
                     " out[0] = m;")
    loop = next(n for n in kernel.body.children if n.type == "for_statement")
    assert assigned_outside(loop.child_by_field_name("body")) == ["m", "s", "c"]


def test_an_address_passed_to_any_call_is_written() -> None:
    assert _writes("float s = 0, c = 0; sincosf(x[0], &s, &(c)); atomicAdd(&out[0], s);") == \
        [("sincosf", "s"), ("sincosf", "c")]


def test_a_lambda_writes_what_it_captures_by_reference_and_assigns() -> None:
    body = ("float s = 0, t = 0, u = 0; auto add = [&](float v) { float w = v; s += w; }; "
            "auto put = [&t, u](float v) mutable { t = v; u = v; }; auto get = [=](float v) { return v + s; }; "
            "add(x[0]); put(x[1]); out[0] = get(x[2]);")
    assert _writes(body) == [("add", "s"), ("put", "t")]
