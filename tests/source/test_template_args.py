"""Template arguments the host code fixes: read at their values when a file's instantiations are listed."""
from __future__ import annotations

from cuopt.source.kernels import load
from cuopt.source.templates import instantiations

KERNEL = "template <int N>\n__global__ void k(float* x) { x[threadIdx.x] *= N; }\n"


def found(host: str, kernel: str = KERNEL, name: str = "k") -> list[str]:
    source = load(kernel + host)
    return [str(inst) for inst, _, _ in instantiations(source.tree.root_node, name, source.macros)]


def test_a_local_constant_is_read_at_its_value() -> None:
    assert found("void run(float* x) { constexpr int block = 2 * 128; k<block><<<1, 256>>>(x); }") == ["k<256>"]


def test_an_integral_constant_s_value() -> None:
    assert found("void run(float* x) { auto vec = std::integral_constant<int, 4>{}; k<vec.value><<<1, 32>>>(x); }"
                 ) == ["k<4>"]
    assert found("void run(float* x) { k<std::integral_constant<int, 8>::value><<<1, 32>>>(x); }") == ["k<8>"]


def test_a_generic_lambda_gives_one_instantiation_per_tag_it_is_called_with() -> None:
    host = """void run(float* x, int n) {
    auto launch = [&](auto unroll) { k<decltype(unroll)::value><<<n, 256>>>(x); };
    if (n % 4 == 0) { launch(std::integral_constant<int, 4>{}); } else { launch(std::integral_constant<int, 1>{}); }
}
"""
    assert found(host) == ["k<4>", "k<1>"]


def test_a_constant_set_from_a_lambda_s_tag() -> None:
    host = """void run(float* x) {
    auto go = [&](auto tag) { constexpr int U = decltype(tag)::value; k<U><<<1, 32>>>(x); };
    go(std::integral_constant<int, 2>{});
}
"""
    assert found(host) == ["k<2>"]


def test_bool_tags_and_host_templates_with_if_constexpr() -> None:
    kernel = "template <typename T, bool Add>\n__global__ void k(T* x) { if (Add) x[0] += 1; }\n"
    host = """template <typename T>
void run(T* x) {
    if constexpr (std::is_same_v<T, float>) { k<T, std::true_type::value><<<1, 1>>>(x); }
    else { k<T, std::bool_constant<false>::value><<<1, 1>>>(x); }
}
void go(float* x) { run<float>(x); }
"""
    assert found(host, kernel) == ["k<float, true>", "k<float, false>"]


def test_what_the_code_does_not_fix_stays_as_written() -> None:
    assert found("void run(float* x, int n) { k<BLOCK><<<1, 32>>>(x); }") == ["k<BLOCK>"]


def test_a_launch_without_template_arguments_deduces_the_pointers_element_types() -> None:
    from cuopt.source.parse import parse
    from cuopt.source.template_args import deduced

    src = """template <typename T> __global__ void k(T* a, int n) {}
void f(float* out, int n, void* p, void* q) {
    __nv_bfloat16* d_y; float** pp;
    k<<<1, 32>>>(out, n);
    k<<<1, 32>>>(d_y + 4, n);
    k<<<1, 32>>>(static_cast<double*>(p), n);
    k<<<1, 32>>>((floatX*)q, n);
    k<<<1, 32>>>(pp, n);
    k<<<1, 32>>>(unknown, n);
}
"""
    assert deduced(parse(src).root_node, "k", {"T": 0}) == [
        ({"T": "float"}, 4), ({"T": "__nv_bfloat16"}, 5), ({"T": "double"}, 6), ({"T": "floatX"}, 7)]
