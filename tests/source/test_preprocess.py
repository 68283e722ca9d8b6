"""The macros pcpp computes for a file: its own, local headers', include dirs', -D's; conditionals,
unknown system headers, integer values, overridability, expansion."""
from __future__ import annotations

from pathlib import Path

from cuopt.source.preprocess import NO_MACROS, compile_time_sizes, is_integer_literal, macros_of

HEADER = """#ifndef SIZES_H
#define SIZES_H
#ifndef NI
#define NI 2048
#endif
#if !defined(NJ)
# define NJ (1 << 10)
#endif
#define NK 512
#define DATA_TYPE float
#endif
"""


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def macros(path: Path, include_dirs: tuple[Path, ...] = (), defines: tuple = ()):
    return macros_of(path.read_bytes(), path, include_dirs, defines)


def test_own_defines_and_a_quoted_header_beside_the_file(tmp_path: Path) -> None:
    write(tmp_path / "sizes.h", HEADER)
    cu = write(tmp_path / "k.cu", '#include "sizes.h"\n#define BOUND_NI NI\n#define IDX(i, j) ((i) * NJ + (j))\n')
    m = macros(cu)
    assert m.object_like("DATA_TYPE") == "float"
    assert m.object_like("BOUND_NI") == "NI"
    assert m.function_like("IDX").params == ("i", "j")
    assert (m.integer("NI"), m.integer("NJ"), m.integer("NK"), m.integer("BOUND_NI")) == (2048, 1024, 512, 2048)
    assert m.integer("DATA_TYPE") is None and m.integer("IDX") is None and m.integer("nope") is None


def test_include_dirs_serve_angle_and_quoted_includes(tmp_path: Path) -> None:
    write(tmp_path / "inc" / "util.h", "#define TILE 16\n")
    write(tmp_path / "common" / "types.cuh", "#define REAL double\n")
    cu = write(tmp_path / "src" / "k.cu", '#include <util.h>\n#include "types.cuh"\n')
    assert not macros(cu)  # neither header is beside the file
    m = macros(cu, (tmp_path / "inc", tmp_path / "common"))
    assert m.integer("TILE") == 16 and m.object_like("REAL") == "double"


def test_unknown_system_headers_are_skipped(tmp_path: Path, capsys) -> None:
    cu = write(tmp_path / "k.cu", "#include <cuda_runtime.h>\n#include <stdio.h>\n#include \"missing.h\"\n"
                                  "#define N 64\n")
    m = macros(cu)
    assert m.integer("N") == 64
    assert capsys.readouterr().err == ""


def test_a_file_without_macros_gives_no_macros(tmp_path: Path) -> None:
    cu = write(tmp_path / "k.cu", "#include <cuda_runtime.h>\n__global__ void k(float* x) { x[0] = 1; }\n")
    assert macros(cu) is NO_MACROS


def test_integer_constants_at_file_and_namespace_scope_are_fixed_sizes(tmp_path: Path) -> None:
    """Modern code names its block and tile sizes with constants, where older code `#define`s them."""
    cu = write(tmp_path / "k.cu", """#include <cstdint>
namespace ops {
constexpr int kBlock = 256;
static const unsigned int kTile = 2 * kBlock;
enum { kWarps = 8, kLanes };
namespace detail { constexpr std::int64_t kChunk = 1 << 12; }
}
const float kScale = 0.5f;
constexpr int kShape[2] = {4, 4};
__global__ void k(float* x) { const int local = 3; x[threadIdx.x] *= kScale * local; }
""")
    m = macros(cu)
    assert (m.integer("kBlock"), m.integer("kTile"), m.integer("kWarps"), m.integer("kChunk")) == (256, 512, 8, 4096)
    assert m.get("kLanes") is None  # an enumerator without a value of its own is not read
    assert m.get("kScale") is None and m.get("kShape") is None and m.get("local") is None
    assert not m.overridable("kBlock")  # no -D changes a constant
    assert not m.settable("kBlock")  # nor an edit of a `#define`
    assert compile_time_sizes(["kBlock", "n"], m) == {"kBlock": "fixed"}


def test_a_macro_wins_over_a_constant_of_its_name(tmp_path: Path) -> None:
    cu = write(tmp_path / "k.cu", "#define BLOCK 128\nconstexpr int BLOCK_2 = BLOCK * 2;\n")
    m = macros(cu)
    assert m.integer("BLOCK") == 128 and m.integer("BLOCK_2") == 256


def test_defines_take_part_and_conditionals_hold(tmp_path: Path) -> None:
    cu = write(tmp_path / "k.cu", "#ifdef USE_DOUBLE\n#define DATA_TYPE double\n#else\n#define DATA_TYPE float\n"
                                  "#endif\n#ifndef N\n#define N 100\n#endif\n")
    assert macros(cu).object_like("DATA_TYPE") == "float"
    m = macros(cu, defines=(("USE_DOUBLE", None), ("N", "7")))
    assert m.object_like("DATA_TYPE") == "double" and m.integer("N") == 7
    assert m.object_like("USE_DOUBLE") == "1"


def test_cuda_compiler_macros_are_predefined_but_not_listed(tmp_path: Path) -> None:
    cu = write(tmp_path / "k.cu", "#ifdef __CUDACC__\n#define ON_GPU 1\n#endif\n")
    m = macros(cu)
    assert m.integer("ON_GPU") == 1
    assert m.get("__CUDACC__") is None and m.get("__DATE__") is None


def test_overridable_only_when_guarded(tmp_path: Path) -> None:
    write(tmp_path / "sizes.h", HEADER)
    cu = write(tmp_path / "k.cu", '#include "sizes.h"\n#undef NK\n#define NK 256\n')
    m = macros(cu)
    assert m.integer("NK") == 256  # the last definition wins
    assert m.overridable("NI") and m.overridable("NJ")
    assert not m.overridable("NK") and not m.overridable("DATA_TYPE") and not m.overridable("nope")
    assert m.settable("NI") and m.settable("NK") and not m.settable("nope")  # every `#define` edits
    assert compile_time_sizes(["NI", "NK", "n", "DATA_TYPE"], m) == {"NI": "guarded", "NK": "edited"}


def test_settable_by_editing_every_definition_or_by_the_users_own_define(tmp_path: Path) -> None:
    write(tmp_path / "inc" / "sizes.h", "#if !defined(NI) && !defined(NL)\n# ifdef SMALL\n#  define NI 32\n"
                                         "# else\n#  define NI 1024\n# endif\n# define NL 7\n#endif\n")
    cu = write(tmp_path / "k.cu", '#include <sizes.h>\n')
    m = macros(cu, (tmp_path / "inc",))
    assert m.settable("NI") and m.overridable("NI")  # either branch, edited, gives the new value
    small = macros(cu, (tmp_path / "inc",), (("SMALL", None),))
    assert small.integer("NI") == 32 and small.settable("NI")
    own = macros(cu, (tmp_path / "inc",), (("NI", "64"),))  # the user's -DNI: set through it too
    assert own.integer("NI") == 64 and own.settable("NI")
    mixed = write(tmp_path / "s.cu", '#include <sizes.h>\n#undef NI\nconstexpr int NK = 3;\n')
    m = macros(mixed, (tmp_path / "inc",))
    assert m.get("NI") is None and not m.settable("NI") and not m.settable("NK")


def test_expand_and_substitute(tmp_path: Path) -> None:
    cu = write(tmp_path / "k.cu", "#define NJ 8\n#define IDX(i, j) ((i) * NJ + (j))\n#define CAT(a, b) a##b\n")
    m = macros(cu)
    assert m.expand("IDX(r, c + 1)") == "((r) * 8 + (c + 1))"
    assert m.substitute("IDX", ["r", "c + 1"]) == "((r) * NJ + (c + 1))"  # one level only
    assert m.substitute("CAT", ["x", "y"]) == "xy"
    assert m.substitute("IDX", ["r"]) is None and m.substitute("NJ", []) is None


def test_macros_are_values_cached_per_input(tmp_path: Path) -> None:
    cu = write(tmp_path / "k.cu", "#define N 4\n")
    a, b = macros(cu), macros(cu)
    assert a is b and hash(a) == hash(b)
    other = macros(cu, defines=(("M", "2"),))
    assert other != a and other.integer("N") == 4


def test_integer_literals() -> None:
    assert all(is_integer_literal(t) for t in ("2048", "0x100", "64u", "16UL", " 7 "))
    assert not any(is_integer_literal(t) for t in ("1.5f", "(1 << 10)", "N", "-1", ""))


def test_an_edited_header_is_read_again(tmp_path: Path) -> None:
    import os

    cu = tmp_path / "k.cu"
    cu.write_text('#include "sizes.h"\n')
    header = tmp_path / "sizes.h"
    header.write_text("#ifndef N\n#define N 64\n#endif\n")
    first = macros_of(cu.read_bytes(), cu)
    assert first.integer("N") == 64 and first.overridable("N")
    header.write_text("#define N 64\n")
    os.utime(header, ns=(1, 1))
    second = macros_of(cu.read_bytes(), cu)
    assert second.integer("N") == 64 and not second.overridable("N")
    assert second != first, "same definitions, but from another header: another value"


def test_a_typedef_in_a_header_types_the_kernel_parameters(tmp_path: Path) -> None:
    from cuopt.targets import read_source

    (tmp_path / "types.h").write_text("#define REAL_IS_FLOAT 1\ntypedef float real_t;\ntypedef real_t DATA_TYPE;\n")
    cu = tmp_path / "k.cu"
    cu.write_text('#include "types.h"\n__global__ void k(DATA_TYPE* y, const real_t* x, int n)\n'
                  "{ int i = threadIdx.x; if (i < n) y[i] = x[i]; }\n")
    [kernel] = read_source(cu).kernels
    assert [(p.base_type, p.ctype.dtype if p.ctype else None) for p in kernel.params] == \
        [("float", "float32"), ("float", "float32"), ("int", "int32")]
    cu.write_text("typedef double real_t;\n__global__ void k(real_t* y) { y[0] = 1.0; }\n")
    [kernel] = read_source(cu).kernels
    assert kernel.params[0].ctype is not None and kernel.params[0].ctype.dtype == "float64"
