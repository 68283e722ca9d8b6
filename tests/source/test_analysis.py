"""Facts about a kernel that the rules ask (cuopt/source/analysis.py, loop headers in cuopt/source/model.py)."""
from __future__ import annotations

from cuopt.source.analysis import (ROW_FITS, assignment, bound_of, called, condition, cross_thread, fit_branches,
                                   global_accesses, global_index_nodes, mentions, read_expression, span, statements,
                                   truth, unreached)
from cuopt.source.kernels import load
from cuopt.source.model import analyze
from cuopt.source.parse import text, walk


def _model(body: str, params: str = "const float* x, float* y, int n"):
    kernel = load(f"__global__ void k({params})\n{{\n{body}\n}}\n".encode()).kernels[0]
    return analyze(kernel)


def test_the_guarded_form_and_its_bound() -> None:
    m = _model("int i = blockIdx.x * blockDim.x + threadIdx.x;\nif (i < n && n > 0) {\n  y[i] = x[i];\n}\ny[0] = 0;")
    sh = m.shape
    assert [text(s) for s in sh.prelude] == ["int i = blockIdx.x * blockDim.x + threadIdx.x;"]
    assert text(sh.guard) == "i < n && n > 0" and not sh.negated
    assert [text(s) for s in sh.body] == ["y[i] = x[i];"] and [text(s) for s in sh.after] == ["y[0] = 0;"]
    assert [(text(c), neg) for c, neg in sh.conjuncts()] == [("i < n", False), ("n > 0", False)]
    bound, op = bound_of(m, 0)
    assert (text(bound), op) == ("n", "<") and bound_of(m, 1) is None
    assert m.shape is sh  # computed once per kernel


def test_the_early_return_form_reads_its_guard_negated() -> None:
    m = _model("int i = blockIdx.x * blockDim.x + threadIdx.x;\nif (i >= n) return;\ny[i] = 2 * x[i];")
    assert m.shape.negated and [text(s) for s in m.shape.body] == ["y[i] = 2 * x[i];"]
    bound, op = bound_of(m, 0)
    assert (text(bound), op) == ("n", "<")
    assert bound_of(_model("int i = threadIdx.x;\nif (n <= blockIdx.x * blockDim.x + threadIdx.x) return;"), 0)[1] == "<"


def test_statements_leave_out_comments_pins_and_unroll_pragmas() -> None:
    m = _model("// copy\nstatic_assert(sizeof(float) == 4, \"pin\");\n#pragma unroll\nfor (int j = 0; j < 4; ++j) y[j] = 0;")
    assert [s.type for s in statements(m.kernel.body)] == ["for_statement"]


def test_global_index_occurrences_keep_their_casts() -> None:
    m = _model("size_t i = (size_t)(blockIdx.x * blockDim.x + threadIdx.x);\nif (i < n) y[i] = x[i];")
    found = global_index_nodes(m, m.kernel.body)
    assert sorted(text(n) for n in walk(m.kernel.body) if (n.start_byte, n.end_byte) in found) == \
        ["(blockIdx.x * blockDim.x + threadIdx.x)", "i", "i", "i"]  # inside the cast, not the cast


def test_calls_reads_and_global_accesses() -> None:
    m = _model("float* row = y + n;\nrow[threadIdx.x] = __ldg(&x[threadIdx.x]);\natomicAdd(&y[0], 1.0f);\n"
               "__syncthreads();\nfloat v = fmaxf(x[0], 0.0f);")
    calls = [n for n in walk(m.kernel.body) if n.type == "call_expression"]
    assert [called(c) for c in calls] == ["__ldg", "atomicAdd", "__syncthreads", "fmaxf"]
    assert [cross_thread(c) for c in calls] == [False, True, True, False] and called(m.kernel.body) == ""
    load_ = next(a for a in m.accesses if a.array == "x" and text(a.node) == "x[threadIdx.x]")
    assert text(read_expression(load_.node)) == "__ldg(&x[threadIdx.x])"
    assert {a.array for a in global_accesses(m)} == {"row", "x", "y"}


def test_conditions_of_ifs_whiles_and_fors() -> None:
    m = _model("if (n > 2) y[0] = 1;\nwhile (n < 4) n++;\nfor (int j = 0; j < n; ++j) y[j] = 0;")
    assert [text(condition(s)) for s in statements(m.kernel.body)] == ["n > 2", "n < 4", "j < n"]


def test_loop_headers_keep_start_bound_counter_type_and_increment() -> None:
    m = _model("for (long j = threadIdx.x; j < n; j = j + blockDim.x) y[j] = 0;\n"
               "int k;\nfor (k = 2; k <= n; k += 2) y[k] = 0;\nfor (int s = 1; s < n; s *= 2) y[s] = 0;")
    a, b, c = m.loops
    assert (a.counter_type, text(a.start_node), text(a.bound_node), a.increment.amount) == \
        ("long", "threadIdx.x", "n", "blockDim.x")
    assert a.step is None and str(a.stride) == "blockDim.x"  # `j = j + e` is a stride as `j += e` is
    assert (b.counter_type, text(b.start_node), b.cmp, b.step) == ("", "2", "<=", 2)
    assert (c.increment.op, c.increment.amount, c.step) == ("*", "2", None)


def test_mentions_are_names_not_members() -> None:
    m = _model("float x2 = x[0];\nint n2 = n + n;\ny[n] = x2 + make_float2(1.0f, 2.0f).x;")
    assert [text(n.parent) for n in mentions(m.kernel.body, "n")] == ["n + n", "n + n", "[n]"]
    assert len(mentions(m.kernel.body, "x", "x2")) == 3  # `.x` is a field


def test_assignments_as_statements_or_expressions() -> None:
    m = _model("y[0] = x[1];\nn += 2;\nn++;\nif (n) n = 0;")
    a, b, c, d = statements(m.kernel.body)
    assert [(text(x.target), x.op, text(x.value)) for x in (assignment(a), assignment(b))] == \
        [("y[0]", "=", "x[1]"), ("n", "+=", "2")]
    assert assignment(c) is None and assignment(d) is None
    assert assignment(a.named_children[0]).node == a.named_children[0]


def test_fit_branches_are_the_ifs_row_cache_opens_with_its_comment_and_an_else() -> None:
    body = ("float r[4];\n"
            "if (n <= 4 * 32) {  {fits}\n  r[0] = x[0];\n} else {\n  y[0] = x[0];\n}\n"
            "if (n <= 4) {  // cuopt: something else\n  y[1] = 1;\n} else {\n  y[1] = 2;\n}\n"
            "if (n <= 8) {  {fits}\n  y[2] = r[0];\n}\n")
    m = _model(body.replace("{fits}", ROW_FITS))
    assert [text(condition(n)) for n in fit_branches(m.kernel.body)] == ["n <= 4 * 32"]  # not without an else


def _first(m, source: str):
    return next(n for n in walk(m.kernel.body) if text(n) == source)


LAUNCH = {"blockDim.x": 256, "blockDim.y": 1, "blockDim.z": 1, "gridDim.x": 64, "gridDim.y": 1, "gridDim.z": 1}


def test_spans_of_thread_indices_constant_locals_and_remainders() -> None:
    m = _model("const int lane = threadIdx.x % 32;\nint w = threadIdx.x / 32;\nint r = lane + 24 * 32;\n"
               "r = r + 1;\ny[0] = lane + C * 2 - blockIdx.x + w + r;", "float* y, int C")
    env = {**LAUNCH, "C": 768}
    assert span(m, _first(m, "lane + C * 2 - blockIdx.x"), env) == (1536 - 63, 31 + 1536)
    assert span(m, _first(m, "threadIdx.x / 32"), env) == (0, 7)
    use = _first(m, "lane + C * 2 - blockIdx.x + w + r")
    assert span(m, use.named_children[0].child_by_field_name("right"), env) == (0, 7)  # `w`, written once
    assert span(m, use.child_by_field_name("right"), env) is None  # `r`, written again
    assert span(m, _first(m, "C * 2"), {}) is None  # no size


def test_a_condition_is_known_where_every_thread_gets_the_same_value() -> None:
    m = _model("const int lane = threadIdx.x % 32;\n"
               "if (C > 768) y[0] = 1;\nif (C <= lane + 24 * 32) y[1] = 1;\nif (lane < 16) y[2] = 1;\n"
               "if (!(C > 768) && n == 4 || x[0] > 0) y[3] = 1;\nif (C != 768 || n != 4) y[4] = 1;",
               "const float* x, float* y, int C, int n")
    ifs = [n for n in walk(m.kernel.body) if n.type == "if_statement"]
    at = {**LAUNCH, "C": 768, "n": 4}
    assert [truth(m, condition(i), at) for i in ifs] == [False, True, None, True, False]
    assert truth(m, condition(ifs[1]), {**at, "C": 780}) is None  # lanes 0..11 differ from 12..31
    assert truth(m, condition(ifs[1]), {**at, "C": 800}) is False  # no lane holds 800 elements
    assert truth(m, condition(ifs[3]), {**at, "n": 5}) is None  # false, or x[0] > 0
    assert truth(m, condition(ifs[0]), {"C": 768}) is False  # no launch needed for sizes alone


def test_unreached_is_code_whose_branch_no_size_set_takes() -> None:
    m = _model("const int lane = threadIdx.x % 32;\n"
               "if (C > 768) {\n  y[0] = 1;\n} else if (C > 100) {\n  y[1] = 1;\n} else {\n  y[2] = 1;\n}\n"
               "if (C <= lane + 24 * 32) {\n  y[3] = 1;\n} else {\n  y[4] = 1;\n}", "float* y, int C")
    store = {i: _first(m, f"y[{i}] = 1;") for i in range(5)}
    sizes = [{**LAUNCH, "C": 768}, {**LAUNCH, "C": 200}]
    cold = {i: unreached(m, n, m.kernel.body, sizes) for i, n in store.items()}
    assert {i: (text(c[0]), c[1]) for i, c in cold.items() if c} == \
        {0: ("C > 768", True), 2: ("C > 100", False), 4: ("C <= lane + 24 * 32", False)}
    assert unreached(m, store[2], m.kernel.body, [{**LAUNCH, "C": 768}]) is not None  # C > 100 always
    assert unreached(m, store[0], m.kernel.body, sizes + [{**LAUNCH, "C": 780}]) is None  # one size set takes it
    assert unreached(m, store[0], m.kernel.body, []) is None  # no spec: nothing is known


def test_a_span_reads_the_declaration_in_scope_at_each_use() -> None:
    m = _model("if (n > 0) {\n  int w = threadIdx.x;\n  y[0] = w;\n} else {\n  int w = 4096;\n  y[1] = w;\n}",
               "float* y, int n")
    at = {**LAUNCH, "n": 1}
    assert span(m, _first(m, "y[1] = w;").named_children[0].child_by_field_name("right"), at) == (4096, 4096)
    assert span(m, _first(m, "y[0] = w;").named_children[0].child_by_field_name("right"), at) == (0, 255)
