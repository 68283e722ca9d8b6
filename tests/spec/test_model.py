"""Loading spec files: the saxpy example, derived check sizes, and every error naming file, kernel, key."""
from __future__ import annotations

from pathlib import Path

import pytest

from cuopt.compile_settings import CompileSettings
from cuopt.spec import expr as E
from cuopt.spec.dtypes import FLOAT_TOLERANCE
from cuopt.spec.model import Buffer, Init, KernelSpec, Scalar, SpecError, derive_check_sizes, load, spec_path_for

from tests.conftest import SAMPLES, sample_names

BASE = """\
[k]
block = [256]
grid = ["cdiv(n, block.x)"]
sizes = { n = 1000 }
@TOP@
[k.args]
n = "n"
x = "in float32[n]"
@ARGS@
"""


def spec_text(top: str = "", args: str = "", replace: tuple[str, str] | None = None) -> str:
    text = BASE.replace("@TOP@", top).replace("@ARGS@", args)
    if replace is not None:
        assert replace[0] in text, replace
        text = text.replace(*replace)
    return text


def load_text(tmp_path: Path, text: str, name: str = "k.cuopt.toml") -> KernelSpec:
    path = tmp_path / name
    path.write_text(text)
    return load(path).kernels["k"]


def error_of(tmp_path: Path, text: str) -> str:
    path = tmp_path / "k.cuopt.toml"
    path.write_text(text)
    with pytest.raises(SpecError) as exc:
        load(path)
    return str(exc.value)


# -- the saxpy example -------------------------------------------------------------------------------
def test_saxpy_sample_loads(tmp_path: Path) -> None:
    spec = load(SAMPLES / "saxpy.cuopt.toml").kernels["saxpy"]
    assert spec.launch.block == (256,)
    assert spec.launch.block3 == (256, 1, 1)
    assert spec.launch.grid3(spec.sizes) == (67108864 // 256, 1, 1)
    assert spec.launch.shared_bytes(spec.sizes) == 0
    assert spec.sizes == {"n": 67108864}
    assert spec.check_sizes == ({"n": 1000003}, {"n": 97})
    assert spec.check_sizes_derived is False
    assert spec.tolerance == (1e-5, 1e-6)
    assert spec.tolerance_for("float32") == (1e-5, 1e-6)
    assert spec.tolerance_for("int32") == (0.0, 0.0)
    assert spec.flops is not None and E.evaluate(spec.flops, {"n": 10}) == 20
    assert spec.seed == 0
    assert [a.name for a in spec.args] == ["n", "a", "x", "y"]
    n, a, x, y = spec.args
    assert isinstance(n, Scalar) and n.value == E.Name("n")
    assert isinstance(a, Scalar) and a.value == 2.5
    assert isinstance(x, Buffer) and (x.role, x.dtype, x.count, x.init) == ("in", "float32", E.Name("n"), None)
    assert isinstance(y, Buffer) and (y.role, y.dtype) == ("inout", "float32")
    assert spec.arg("y") is y and spec.arg("nope") is None


@pytest.mark.parametrize("name", sample_names())
def test_every_sample_spec_loads(name: str) -> None:
    spec_file = load(SAMPLES / f"{name}.cuopt.toml")
    assert list(spec_file.kernels) == [name]


def test_spec_path_for() -> None:
    assert spec_path_for(Path("/a/b/saxpy.cu")) == Path("/a/b/saxpy.cuopt.toml")
    assert spec_path_for(Path("x.cuh")) == Path("x.cuopt.toml")


def test_defaults(tmp_path: Path) -> None:
    spec = load_text(tmp_path, spec_text())
    assert spec.seed == 0
    assert spec.tolerance is None
    assert spec.tolerance_for("float16") == FLOAT_TOLERANCE["float16"]
    assert spec.tolerance_for("float64") == FLOAT_TOLERANCE["float64"]
    assert spec.flops is None
    assert spec.launch.shared_bytes(spec.sizes) == 0


def test_buffer_initializers_and_shared(tmp_path: Path) -> None:
    spec = load_text(tmp_path, spec_text(
        top='shared = "block.x * 4"\ntolerance = { atol = 0.5 }\nseed = 9',
        args='y = "inout float32[n] uniform(-2, 3)"\nz = "in int32[2*n] randint(0, n)"\nw = "out uint8[n] zeros"\n'
             'v = "in float64[n + 1]   normal(1.5, 0.25) "\nu = "in float16[n] ones()"\n'))
    assert spec.launch.shared_bytes(spec.sizes) == 1024
    assert spec.tolerance == (0.0, 0.5)
    assert spec.seed == 9
    y, z, w, v, u = (spec.arg(n) for n in "yzwvu")
    assert isinstance(y, Buffer) and y.init == Init("uniform", (-2.0, 3.0))
    assert isinstance(z, Buffer) and z.init == Init("randint", (0.0, E.Name("n")))
    assert E.evaluate(z.count, spec.sizes) == 2000
    assert isinstance(w, Buffer) and (w.role, w.dtype, w.init) == ("out", "uint8", Init("zeros"))
    assert isinstance(v, Buffer) and v.init == Init("normal", (1.5, 0.25)) and E.evaluate(v.count, {"n": 3}) == 4
    assert isinstance(u, Buffer) and u.init == Init("ones")


def test_scalar_values(tmp_path: Path) -> None:
    spec = load_text(tmp_path, spec_text(args='a = 2.5\nb = 3\nc = "n - 1"\n'))
    a, b, c = spec.arg("a"), spec.arg("b"), spec.arg("c")
    assert isinstance(a, Scalar) and a.value == 2.5
    assert isinstance(b, Scalar) and E.evaluate(b.value, {}) == 3  # type: ignore[arg-type]
    assert isinstance(c, Scalar) and E.evaluate(c.value, spec.sizes) == 999  # type: ignore[arg-type]


def test_two_kernels_in_one_file(tmp_path: Path) -> None:
    text = spec_text() + spec_text().replace("[k]", "[k2]").replace("[k.args]", "[k2.args]")
    path = tmp_path / "two.cuopt.toml"
    path.write_text(text)
    assert list(load(path).kernels) == ["k", "k2"]


# -- check sizes -------------------------------------------------------------------------------------
@pytest.mark.parametrize("sizes, block", [
    ({"n": 67108864}, (256,)),
    ({"n": 1000}, (256,)),
    ({"n": 97}, (256,)),
    ({"n": 5}, (128,)),
    ({"w": 8192, "h": 8192}, (16, 16)),
    ({"rows": 32768, "cols": 1024}, (256,)),
    ({"n": 63}, (9,)),
    ({"n": 21}, (3,)),
    ({"n": 1000, "k": 31}, (3, 5)),
])
def test_derived_check_sizes_are_awkward(sizes: dict[str, int], block: tuple[int, ...]) -> None:
    checks = derive_check_sizes(sizes, block)
    assert checks, "at least one check size"
    assert len(checks) == len({tuple(sorted(c.items())) for c in checks}), "no duplicates"
    for c in checks:
        assert set(c) == set(sizes)
        assert c != sizes
        for name, v in c.items():
            assert v >= 1
            assert v % 2 == 1, (name, v)
            assert all(v % b != 0 for b in block if b > 1), (name, v, block)


def test_derived_check_sizes_are_smaller_than_timing_sizes() -> None:
    checks = derive_check_sizes({"n": 67108864}, (256,))
    assert all(c["n"] < 67108864 // 4 for c in checks)
    assert any(c["n"] <= 101 for c in checks)


def test_spec_without_check_sizes_derives_them(tmp_path: Path) -> None:
    spec = load_text(tmp_path, spec_text())
    assert spec.check_sizes_derived is True
    assert spec.check_sizes == derive_check_sizes({"n": 1000}, (256,))
    assert all(c["n"] % 2 == 1 and c["n"] != 1000 for c in spec.check_sizes)


def test_explicit_check_sizes_merge_with_sizes(tmp_path: Path) -> None:
    spec = load_text(tmp_path, spec_text(
        top="check_sizes = [{ n = 77 }, { k = 3 }, { n = 5, k = 2 }]",
        replace=("sizes = { n = 1000 }", "sizes = { n = 1000, k = 31 }")))
    assert spec.check_sizes_derived is False
    assert spec.check_sizes == ({"n": 77, "k": 31}, {"n": 1000, "k": 3}, {"n": 5, "k": 2})
    assert spec.sizes == {"n": 1000, "k": 31}


# -- errors: file, kernel and key in every message ------------------------------------------------
PREFIX = "k.cuopt.toml: [k] "

ERRORS = [
    # (top, args, replace, key, fragment of the rest of the message)
    ("foo = 1", "", None, "foo", "unknown key; expected one of: block, grid"),
    ("", "", ('block = [256]\n', ''), "block", "missing"),
    ("", "", ('grid = ["cdiv(n, block.x)"]\n', ''), "grid", "missing"),
    ("", "", ('sizes = { n = 1000 }\n', ''), "sizes", "missing"),
    ("", "", ('[k.args]\nn = "n"\nx = "in float32[n]"\n', ''), "args", "missing"),
    ("", "", ("block = [256]", "block = [0]"), "block", "1 to 3 positive integers"),
    ("", "", ("block = [256]", "block = [-32]"), "block", "1 to 3 positive integers"),
    ("", "", ("block = [256]", "block = [1, 1, 1, 1]"), "block", "1 to 3 positive integers"),
    ("", "", ("block = [256]", "block = []"), "block", "1 to 3 positive integers"),
    ("", "", ("block = [256]", "block = [32.0]"), "block", "1 to 3 positive integers"),
    ("", "", ("block = [256]", "block = [true]"), "block", "1 to 3 positive integers"),
    ("", "", ("block = [256]", 'block = "256"'), "block", "1 to 3 positive integers"),
    ("", "", ("block = [256]", "block = [64, 32]"), "block", "2048 threads per block; CUDA allows at most 1024"),
    ("", "", ("block = [256]", "block = [2048]"), "block", "2048 threads per block"),
    ("", "", ('grid = ["cdiv(n, block.x)"]', "grid = []"), "grid", "1 to 3 expressions"),
    ("", "", ('grid = ["cdiv(n, block.x)"]', 'grid = ["1", "1", "1", "1"]'), "grid", "1 to 3 expressions"),
    ("", "", ('grid = ["cdiv(n, block.x)"]', "grid = { x = 1 }"), "grid", "1 to 3 expressions"),
    ("", "", ('grid = ["cdiv(n, block.x)"]', 'grid = ["n / 256"]'), "grid[0]", "'/' is not allowed"),
    ("", "", ('grid = ["cdiv(n, block.x)"]', 'grid = [1, "m"]'), "grid[1]", "unknown size name 'm' (sizes defines: n)"),
    ("", "", ('grid = ["cdiv(n, block.x)"]', 'grid = ["cdiv(n, block.w)"]'), "grid[0]", "block.w"),
    ("", "", ('grid = ["cdiv(n, block.x)"]', "grid = [2.5]"), "grid[0]", "float"),
    ("", "", ('grid = ["cdiv(n, block.x)"]', 'grid = ["cdiv(n)"]'), "grid[0]", "cdiv() takes 2 arguments"),
    ("", "", ("sizes = { n = 1000 }", "sizes = { n = 0 }"), "sizes.n", "expected a positive integer, got 0"),
    ("", "", ("sizes = { n = 1000 }", "sizes = { n = -3 }"), "sizes.n", "expected a positive integer, got -3"),
    ("", "", ("sizes = { n = 1000 }", "sizes = { n = 1.5 }"), "sizes.n", "expected a positive integer, got 1.5"),
    ("", "", ("sizes = { n = 1000 }", 'sizes = { n = "big" }'), "sizes.n", "expected a positive integer, got 'big'"),
    ("", "", ("sizes = { n = 1000 }", "sizes = { n = true }"), "sizes.n", "expected a positive integer"),
    ("", "", ("sizes = { n = 1000 }", f"sizes = {{ n = {2**62 + 1} }}"), "sizes.n", "expected a positive integer"),
    ("", "", ("sizes = { n = 1000 }", "sizes = 1000"), "sizes", "table of size names"),
    ("", "", ("sizes = { n = 1000 }", 'sizes = { n = 1000, "a-b" = 2 }'), "sizes", "'a-b' is not a valid size name"),
    ("check_sizes = [{ m = 3 }]", "", None, "check_sizes[0]", "unknown size name 'm' (sizes defines: n)"),
    ("check_sizes = [{ n = 3 }, { n = 0 }]", "", None, "check_sizes[1].n", "expected a positive integer, got 0"),
    ("check_sizes = { n = 3 }", "", None, "check_sizes", "list of tables"),
    ("check_sizes = [3]", "", None, "check_sizes", "list of tables"),
    ("tolerance = { rtol = -1 }", "", None, "tolerance", "rtol = <number >= 0>"),
    ("tolerance = { rtol = 1e-3, btol = 1 }", "", None, "tolerance", "rtol = <number >= 0>"),
    ("tolerance = 0.1", "", None, "tolerance", "rtol = <number >= 0>"),
    ("tolerance = { atol = true }", "", None, "tolerance", "rtol = <number >= 0>"),
    ('tolerance = { rtol = "1e-3" }', "", None, "tolerance", "rtol = <number >= 0>"),
    ("seed = -1", "", None, "seed", "non-negative integer"),
    ("seed = 1.5", "", None, "seed", "non-negative integer"),
    ("seed = true", "", None, "seed", "non-negative integer"),
    ('seed = "7"', "", None, "seed", "non-negative integer"),
    ('flops = "2*m"', "", None, "flops", "unknown size name 'm' (sizes defines: n)"),
    ('flops = "n/2"', "", None, "flops", "'/' is not allowed"),
    ('flops = "block.x * n"', "", None, "flops", "unknown size name 'block.x'"),
    ('shared = "m * 4"', "", None, "shared", "unknown size name 'm'"),
    ('shared = "block.x / 2"', "", None, "shared", "'/' is not allowed"),
    ("", 'y = "out float33[n]"', None, "args.y", "unknown dtype 'float33'; expected one of float16, float32"),
    ("", 'y = "out float[n]"', None, "args.y", "unknown dtype 'float'"),
    ("", 'y = "output float32[n]"', None, "args.y", "unknown buffer role 'output'; expected in, out or inout"),
    ("", 'y = "inp float32[n]"', None, "args.y", "unknown buffer role 'inp'"),
    ("", 'y = "in float32[n] random"', None, "args.y", "unknown initializer 'random'; expected uniform(lo,hi)"),
    ("", 'y = "in float32[n] gauss(0, 1)"', None, "args.y", "unknown initializer 'gauss(0, 1)'"),
    ("", 'y = "in float32[n] uniform(0)"', None, "args.y", "uniform takes 2 arguments, got 1"),
    ("", 'y = "in float32[n] uniform"', None, "args.y", "uniform takes 2 arguments, got 0"),
    ("", 'y = "in float32[n] normal(0, 1, 2)"', None, "args.y", "normal takes 2 arguments, got 3"),
    ("", 'y = "in int32[n] randint(5)"', None, "args.y", "randint takes 2 arguments, got 1"),
    ("", 'y = "out float32[n] zeros(1)"', None, "args.y", "zeros takes 0 arguments, got 1"),
    ("", 'y = "out float32[n] ones(0, 1)"', None, "args.y", "ones takes 0 arguments, got 2"),
    ("", 'y = "in int32[n] uniform(0, 1)"', None, "args.y", "uniform needs a float dtype; use randint(lo,hi) for int32"),
    ("", 'y = "in uint8[n] normal(0, 1)"', None, "args.y", "normal needs a float dtype; use randint(lo,hi) for uint8"),
    ("", 'y = "in int32[n] randint(0.5, 10)"', None, "args.y", "randint(0.5, 10) needs integer bounds"),
    ("", 'y = "in float32[n] uniform(0, m)"', None, "args.y", "unknown size name 'm'"),
    ("", 'y = "in float32[n/2]"', None, "args.y (element count)", "'/' is not allowed"),
    ("", 'y = "in float32[m]"', None, "args.y", "unknown size name 'm' (sizes defines: n)"),
    ("", 'y = "in float32[]"', None, "args.y (element count)", "empty expression"),
    ("", 'a = "m * 2"', None, "args.a", "unknown size name 'm' (sizes defines: n)"),
    ("", 'a = "n / 2"', None, "args.a", "'/' is not allowed"),
    ("", "a = true", None, "args.a", "expected a number, a size expression or a buffer"),
    ("", "a = [1, 2]", None, "args.a", "expected a number, a size expression or a buffer"),
    ("", f"a = {2**62 + 1}", None, "args.a", "out of range"),
]


@pytest.mark.parametrize("top, args, replace, key, fragment", ERRORS,
                         ids=[f"{e[3]}:{e[4][:30]}" for e in ERRORS])
def test_error_names_file_kernel_and_key(tmp_path: Path, top: str, args: str, replace: tuple[str, str] | None,
                                         key: str, fragment: str) -> None:
    msg = error_of(tmp_path, spec_text(top, args, replace))
    assert msg.startswith(f"{PREFIX}{key}: "), msg
    assert fragment in msg, msg
    assert "\n" not in msg


def test_args_table_must_not_be_empty(tmp_path: Path) -> None:
    msg = error_of(tmp_path, spec_text(replace=('n = "n"\nx = "in float32[n]"\n', '')))
    assert msg.startswith(f"{PREFIX}args: expected a table [k.args]"), msg


def test_top_level_value_that_is_not_a_table(tmp_path: Path) -> None:
    msg = error_of(tmp_path, "block = [256]\n" + spec_text())
    assert msg.startswith("k.cuopt.toml: top-level key 'block' must be a table"), msg


def test_invalid_toml_names_the_file(tmp_path: Path) -> None:
    msg = error_of(tmp_path, spec_text().replace('sizes = { n = 1000 }', 'sizes = { n = 1000'))
    assert msg.startswith("k.cuopt.toml: not valid TOML: "), msg


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match="no such spec file"):
        load(tmp_path / "nope.cuopt.toml")


def test_randint_over_the_full_byte_range_is_accepted(tmp_path: Path) -> None:
    spec = load_text(tmp_path, spec_text(args='y = "in uint8[n] randint(0, 256)"\nz = "in int8[n] randint(-128, 128)"'))
    assert spec.arg("y").init == Init("randint", (0.0, 256.0))  # type: ignore[union-attr]


@pytest.mark.parametrize("init", ["int8[n] randint(0, 1000)", "uint8[n] randint(-1, 10)",
                                  "int32[n] randint(5, 5)", "int32[n] randint(9, 2)"])
def test_randint_bounds_are_checked_against_the_dtype(tmp_path: Path, init: str) -> None:
    """Bounds that numpy refuses at generation time (outside the dtype, or an empty range) are a
    spec error naming the argument, not a failure inside the GPU worker."""
    msg = error_of(tmp_path, spec_text(args=f'y = "in {init}"'))
    assert msg.startswith(f"{PREFIX}args.y: "), msg


def test_fast_math_turns_on_the_fast_math_option(tmp_path: Path) -> None:
    assert load_text(tmp_path, spec_text()).options == frozenset()
    assert load_text(tmp_path, spec_text("fast_math = true")).options == {"fast-math"}
    assert load_text(tmp_path, spec_text("fast_math = false")).options == frozenset()


@pytest.mark.parametrize("value", ["1", '"yes"', "[true]"])
def test_fast_math_must_be_a_boolean(tmp_path: Path, value: str) -> None:
    msg = error_of(tmp_path, spec_text(f"fast_math = {value}"))
    assert msg.startswith(f"{PREFIX}fast_math: expected true or false, got "), msg


# -- the kernel key: which kernel or template instantiation a table describes --------------------
def test_kernel_key_names_the_instantiation(tmp_path: Path) -> None:
    spec = load_text(tmp_path, spec_text(top='kernel = "scale< float,256 >"'))
    assert (spec.name, spec.kernel, spec.entry) == ("k", "scale<float, 256>", "scale<float, 256>")


def test_without_kernel_key_the_table_names_the_kernel(tmp_path: Path) -> None:
    spec = load_text(tmp_path, spec_text())
    assert (spec.kernel, spec.entry) == ("", "k")


@pytest.mark.parametrize("arg, spelled", [("half", "__half"), ("unsigned", "unsigned int"), ("0x10", "0x10"),
                                          ("unsigned  long long", "unsigned long long"), ("true", "true")])
def test_kernel_key_template_arguments(tmp_path: Path, arg: str, spelled: str) -> None:
    spec = load_text(tmp_path, spec_text(top=f'kernel = "t<{arg}>"'))
    assert spec.kernel == f"t<{spelled}>"


@pytest.mark.parametrize("value, message", [
    ('"scale<float, 2.5>"', "template argument '2.5' of 'scale<float, 2.5>' is neither a C type nor an integer "
                            "literal"),
    ('"scale<float, >"', "template argument '' of 'scale<float, >' is neither a C type nor an integer literal"),
    ('"scale<float"', "expected a kernel name with template arguments such as \"scale<float, 256>\", "
                      "got 'scale<float'"),
    ('"2scale"', "'2scale' is not a kernel name; expected e.g. \"scale\" or \"scale<float, 256>\""),
    ("3", "expected a kernel name or an instantiation such as \"scale<float, 256>\""),
])
def test_kernel_key_errors(tmp_path: Path, value: str, message: str) -> None:
    assert error_of(tmp_path, spec_text(top=f"kernel = {value}")) == f"k.cuopt.toml: [k] kernel: {message}"


# -- the [compile] table -----------------------------------------------------------------------------
def test_compile_table_gives_the_files_settings(tmp_path: Path) -> None:
    (tmp_path / "utilities").mkdir()
    (tmp_path / "src").mkdir()
    path = tmp_path / "src" / "k.cuopt.toml"
    path.write_text('[compile]\ninclude = ["../utilities"]\ndefine = ["NI=1024", "USE_FAST"]\n'
                    'flags = ["-lineinfo"]\n\n' + spec_text())
    spec_file = load(path)
    assert list(spec_file.kernels) == ["k"]
    s = spec_file.settings
    assert s.include_dirs == ((tmp_path / "utilities").resolve(),)
    assert s.defines == (("NI", "1024"), ("USE_FAST", None)) and s.flags == ("-lineinfo",)


def test_spec_without_compile_table_has_no_settings(tmp_path: Path) -> None:
    path = tmp_path / "k.cuopt.toml"
    path.write_text(spec_text())
    assert load(path).settings == CompileSettings()


def test_compile_table_errors_name_the_file_and_key(tmp_path: Path) -> None:
    msg = error_of(tmp_path, '[compile]\ninclude = ["missing"]\n' + spec_text())
    assert msg.startswith("k.cuopt.toml: [compile] include: include directory 'missing' not found"), msg
    msg = error_of(tmp_path, '[compile]\ndefines = ["N"]\n' + spec_text())
    assert msg == "k.cuopt.toml: [compile] defines: unknown key; expected one of: include, define, flags"


def test_a_kernel_named_compile_is_refused(tmp_path: Path) -> None:
    msg = error_of(tmp_path, spec_text().replace("[k]", "[compile]").replace("[k.args]", "[compile.args]"))
    assert msg == ("k.cuopt.toml: [compile]: this table holds compile settings (include, define, flags), "
                   "not a kernel; describe a kernel named 'compile' in a table of another name with "
                   "kernel = \"compile\"")


@pytest.mark.parametrize("aliased, message", [
    ('["x", "z"]', "'z' is not a buffer argument"),
    ('"x"', "expected a list of buffer argument names"),
])
def test_aliased_names_buffer_arguments(tmp_path, aliased: str, message: str) -> None:
    path = tmp_path / "k.cuopt.toml"
    path.write_text(f'[k]\nblock = [256]\ngrid = ["cdiv(n, block.x)"]\nsizes = {{ n = 64 }}\naliased = {aliased}\n'
                    '[k.args]\nx = "in float32[n]"\ny = "out float32[n]"\nn = "n"\n')
    with pytest.raises(SpecError, match=message):
        load(path)
