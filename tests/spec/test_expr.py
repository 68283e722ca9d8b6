"""Spec expressions: parsing, evaluation, printing, and refusal of anything that is not arithmetic."""
from __future__ import annotations

import builtins
import random
import time

import pytest

from cuopt.spec import expr as E
from cuopt.spec.expr import ExprError, evaluate, names, parse, substitute


def ev(source: str | int, **env: int) -> int:
    return evaluate(parse(source), env)


# -- evaluation -----------------------------------------------------------------------------------
@pytest.mark.parametrize("source, value", [
    ("2 + 3 * 4", 14),
    ("(2 + 3) * 4", 20),
    ("2 * 3 + 4", 10),
    ("10 - 4 - 3", 3),  # left associative
    ("10 - (4 - 3)", 9),
    ("100 // 10 // 5", 2),
    ("100 // (10 // 5)", 50),
    ("7 % 4 * 3", 9),  # same precedence, left to right
    ("2 * 7 % 4", 2),
    ("1 + 7 % 4", 4),
    ("17 // 5 * 5 + 17 % 5", 17),
    ("-3 + 5", 2),
    ("-(3 + 5)", -8),
    ("- -3", 3),
    ("--3", 3),
    ("+3", 3),
    ("2 * -3", -6),
    ("2 - -3", 5),
    ("-7 // 2", -4),  # floor division, like Python
    ("-(7 // 2)", -3),
    ("-7 % 3", 2),
    ("cdiv(7, 2)", 4),
    ("cdiv(8, 2)", 4),
    ("cdiv(0, 5)", 0),
    ("cdiv(1, 256)", 1),
    ("cdiv(-7, 2)", -3),
    ("min(3, 1, 2)", 1),
    ("max(3, 1, 2)", 3),
    ("max(3)", 3),
    ("min(max(1, 2), 3)", 2),
    ("cdiv(10 + 6, 2 * 2)", 4),
    ("  1\t+\n2 ", 3),
    ("007", 7),
    (12, 12),
    (-5, -5),
])
def test_evaluates_like_integer_arithmetic(source: str | int, value: int) -> None:
    assert ev(source) == value


def test_names_come_from_the_environment() -> None:
    assert ev("n * k - 1", n=6, k=7) == 41
    assert ev("cdiv(n, block.x)", n=1000, **{"block.x": 256}) == 4


def test_block_names_are_accepted() -> None:
    e = parse("cdiv(w, block.x) * cdiv(h, block.y) + block.z")
    assert evaluate(e, {"w": 100, "h": 50, "block.x": 16, "block.y": 8, "block.z": 2}) == 7 * 7 + 2
    assert names(e) == {"w", "h", "block.x", "block.y", "block.z"}


def test_exactly_the_limit_is_allowed() -> None:
    assert ev(str(E.MAX_VALUE)) == E.MAX_VALUE
    assert ev("2147483648 * 2147483648") == 2**62


# -- printing ---------------------------------------------------------------------------------------
ROUND_TRIP = [
    "n", "1", "-n", "--n", "-(n + 1)", "-(n * k)", "-n * k", "-n // 2",
    "n + k * m", "(n + k) * m", "n - (k - m)", "n - k - m", "n - (k + m)",
    "n // (k * m)", "n // k * m", "n * (k // m)", "n % (k % m)", "(n % k) % m",
    "n - -k", "n * -k", "cdiv(n - k + 1, block.x)", "min(n, k, m) * max(n - 1)",
    "cdiv(n, cdiv(k, 2)) % (m + 1)", "-(cdiv(n, 2) - min(k, m))",
]
ENVS = [{"n": 17, "k": 5, "m": 3, "block.x": 4}, {"n": -9, "k": 4, "m": -2, "block.x": 7},
        {"n": 1000, "k": 31, "m": 7, "block.x": 256}]


@pytest.mark.parametrize("source", ROUND_TRIP)
def test_str_round_trip_evaluates_the_same(source: str) -> None:
    e = parse(source)
    again = parse(str(e))
    for env in ENVS:
        try:
            expected = evaluate(e, env)
        except ExprError:
            with pytest.raises(ExprError):
                evaluate(again, env)
            continue
        assert evaluate(again, env) == expected, (source, str(e), env)


def _random_expr(rng: random.Random, depth: int) -> E.Expr:
    if depth == 0 or rng.random() < 0.25:
        return rng.choice([E.Num(rng.randint(-9, 9)), E.Name(rng.choice("abc"))])
    kind = rng.choice(["neg", "bin", "bin", "bin", "call"])
    if kind == "neg":
        return E.Neg(_random_expr(rng, depth - 1))
    if kind == "bin":
        return E.Bin(rng.choice(["+", "-", "*", "//", "%"]), _random_expr(rng, depth - 1),
                     _random_expr(rng, depth - 1))
    fn = rng.choice(["cdiv", "min", "max"])
    count = 2 if fn == "cdiv" else rng.randint(1, 3)
    return E.Call(fn, tuple(_random_expr(rng, depth - 1) for _ in range(count)))


def test_str_round_trip_on_random_trees() -> None:
    """Printing inserts exactly the parentheses precedence and associativity need."""
    rng = random.Random(1234)
    checked = 0
    for _ in range(1500):
        e = _random_expr(rng, 5)
        again = parse(str(e))
        for env in ({"a": 7, "b": -3, "c": 2}, {"a": -11, "b": 5, "c": 13}):
            try:
                expected = evaluate(e, env)
            except ExprError:
                continue
            assert evaluate(again, env) == expected, str(e)
            checked += 1
    assert checked > 1000


def test_long_flat_chains_are_refused_or_printable() -> None:
    """A 999-character sum is within MAX_SOURCE; it is refused with ExprError (too many tokens),
    and the longest chain that is accepted prints, hashes and compares without RecursionError."""
    source = "+".join(["1"] * 500)
    assert len(source) <= E.MAX_SOURCE
    with pytest.raises(ExprError, match="tokens"):
        parse(source)
    longest = "+".join(["1"] * ((E.MAX_TOKENS + 1) // 2))
    e = parse(longest)
    text = str(e)
    assert evaluate(parse(text), {}) == (E.MAX_TOKENS + 1) // 2
    assert parse(text) == e
    hash(e)


# -- substitute / names ------------------------------------------------------------------------------
def test_names_lists_every_name_once() -> None:
    assert names(parse("cdiv(n*k, block.x) + min(m, 2) - -n")) == {"n", "k", "m", "block.x"}
    assert names(parse("1 + 2")) == set()


def test_substitute_replaces_names_and_keeps_precedence() -> None:
    e = substitute(parse("a - n * 2"), {"n": parse("b + c")})
    assert evaluate(e, {"a": 100, "b": 3, "c": 4}) == 100 - (3 + 4) * 2
    assert evaluate(parse(str(e)), {"a": 100, "b": 3, "c": 4}) == 86
    assert names(e) == {"a", "b", "c"}


def test_substitute_reaches_into_calls_and_negations() -> None:
    e = substitute(parse("-cdiv(n, block.x) + max(n, 1)"), {"n": parse("m - 1"), "block.x": E.Num(4)})
    assert names(e) == {"m"}
    assert evaluate(e, {"m": 10}) == -3 + 9


def test_substitute_leaves_unmapped_names() -> None:
    e = parse("n + k")
    assert substitute(e, {}) == e
    assert names(substitute(e, {"n": E.Num(1)})) == {"k"}


# -- errors --------------------------------------------------------------------------------------------
def test_true_division_is_rejected_with_a_hint() -> None:
    with pytest.raises(ExprError) as exc:
        parse("n / 2")
    msg = str(exc.value)
    assert "'/'" in msg and "'//'" in msg and "cdiv" in msg


def test_unknown_name_lists_the_known_ones() -> None:
    with pytest.raises(ExprError) as exc:
        ev("cols * rowz", rows=2, cols=3)
    msg = str(exc.value)
    assert "'rowz'" in msg and "cols, rows" in msg


def test_unknown_name_with_an_empty_environment() -> None:
    with pytest.raises(ExprError, match="'n'.*none"):
        ev("n")


@pytest.mark.parametrize("source", ["foo(1)", "pow(2, 3)", "abs(n)", "eval(n)"])
def test_unknown_functions(source: str) -> None:
    with pytest.raises(ExprError, match="unknown function .*cdiv, min, max"):
        parse(source)


@pytest.mark.parametrize("source, got", [("cdiv(1)", 1), ("cdiv(1, 2, 3)", 3)])
def test_wrong_arity(source: str, got: int) -> None:
    with pytest.raises(ExprError, match=rf"cdiv\(\) takes 2 arguments, got {got}"):
        parse(source)


@pytest.mark.parametrize("source", ["min()", "max()"])
def test_min_max_need_an_argument(source: str) -> None:
    with pytest.raises(ExprError):
        parse(source)


@pytest.mark.parametrize("source", ["n // 0", "n % 0", "cdiv(n, 0)", "n // (n - n)", "cdiv(n, k - 3)"])
def test_division_by_zero(source: str) -> None:
    with pytest.raises(ExprError, match="division by zero"):
        ev(source, n=5, k=3)


@pytest.mark.parametrize("source", ["", "   ", "n +", "(n", "n)", "n k", "1 2", "* 2", "cdiv(1, )",
                                    "1.5", "1e3", "1_000", "n.", "block.w", "block.x.y", "0x10", "n ** 2"])
def test_malformed(source: str) -> None:
    with pytest.raises(ExprError):
        ev(source, n=1)


@pytest.mark.parametrize("value", [True, False, 1.5, None, [1], 2**63, -(2**63)])
def test_non_expression_values(value: object) -> None:
    with pytest.raises(ExprError):
        parse(value)  # type: ignore[arg-type]


HOSTILE = [
    "__import__('os')",
    "__import__(\"os\").system(\"true\")",
    "().__class__",
    "().__class__.__bases__[0].__subclasses__()",
    "n.__class__",
    "os.system",
    "os.system('true')",
    "lambda: 0",
    "lambda x: x",
    "lambda",
    "__builtins__",
    "exec",
    "n; import os",
    "[n for n in range(10**9)]",
    "9**9**9",
    "2**1000",
    "10**100",
    "1" * 30,
    str(2**62 + 1),
    str(2**100),
    f"{2**62} + 1",
    f"-{2**62} - 1",
    "1000000 * 1000000 * 1000000 * 1000000",
    "1 + " * 5000 + "1",
    "n" * 10_000,
    "(" * 200 + "1" + ")" * 200,
    "-" * 200 + "1",
    "min(" * 100 + "1" + ")" * 100,
    "\x00",
]


@pytest.mark.parametrize("source", HOSTILE, ids=lambda s: repr(s[:24]))
def test_hostile_input_raises_expr_error_quickly(source: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Nothing is executed, nothing hangs, nothing overflows the stack: only ExprError."""
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("the expression code must never call eval/exec/compile")

    error: BaseException | None = None
    start = time.perf_counter()
    with monkeypatch.context() as m:
        for fn in ("eval", "exec", "compile"):
            m.setattr(builtins, fn, refuse)
        try:
            evaluate(parse(source), {"n": 1})
        except BaseException as exc:  # noqa: BLE001 - classified below, after builtins are restored
            error = exc
    elapsed = time.perf_counter() - start
    assert isinstance(error, ExprError), repr(error)
    assert elapsed < 1.0


def test_environment_values_out_of_range() -> None:
    with pytest.raises(ExprError, match="out of range"):
        ev("n + 0", n=2**62 + 1)
    with pytest.raises(ExprError, match="out of range"):
        ev("n * n", n=2**40)
    with pytest.raises(ExprError, match="out of range"):
        ev("n - 1", n=-(2**62))


def test_long_expression_message() -> None:
    with pytest.raises(ExprError, match=f"longer than {E.MAX_SOURCE} characters"):
        parse("1+" * 5000 + "1")


def test_deep_nesting_message() -> None:
    with pytest.raises(ExprError, match="nested deeper than"):
        parse("(" * 70 + "n" + ")" * 70)
