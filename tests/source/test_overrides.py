"""Sizes set by editing their definitions: in the file itself, or in private copies of the user's
headers that the file (and the headers on the way) include instead; lines stay where they were."""
from __future__ import annotations

from pathlib import Path

from cuopt.source.overrides import COPIES, resolve_include, set_defines, with_sizes

GROUP = """\
#ifndef BENCH_CUH
#define BENCH_CUH
#if !defined(NI) && !defined(NJ) && !defined(NL)
# ifdef SMALL_DATASET
#  define NI 32
#  define NJ 32
# else
#  define NI 1024 /* rows */
#  define NJ 2048 // columns
# endif
# define NL 7
#endif
#define NIX NI
#define NI_HALF(x) ((x) / 2)
#endif
"""


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def lines(text: str) -> list[str]:
    return text.split("\n")


def test_every_definition_of_the_name_in_every_branch_is_set() -> None:
    out = set_defines(GROUP, {"NI": 97, "NL": 5})
    assert len(lines(out)) == len(lines(GROUP))
    assert [new for new, old in zip(lines(out), lines(GROUP)) if new != old] == \
        ["#  define NI 97", "#  define NI 97 /* rows */", "# define NL 5"]
    assert "#define NIX NI" in out and "#define NI_HALF(x) ((x) / 2)" in out  # other names, function-like
    assert "define NJ 2048 // columns" in out
    assert set_defines(GROUP, {"NX": 3}) is GROUP


def test_a_definition_continued_over_lines_keeps_its_lines() -> None:
    text = "#define N \\\n    (1024 \\\n     * 2)\nint x = N;\n"
    out = set_defines(text, {"N": 33})
    assert lines(out) == ["#define N 33", "", "", "int x = N;", ""]


def test_a_definition_in_the_file_itself_is_edited_in_place(tmp_path: Path) -> None:
    source = '#include <cuda.h>\n#define N 4096\n#define M 512\n__global__ void k(float* a) { a[0] = N * M; }\n'
    edited = with_sizes(source, tmp_path / "k.cu", (), {"N": 97, "M": 13})
    assert edited.files == () and edited.missing == ()
    assert edited.source == source.replace("N 4096", "N 97").replace("M 512", "M 13")
    assert with_sizes(source, tmp_path / "k.cu", (), {}).source is source


def test_a_header_beside_the_file_is_copied_and_included_instead(tmp_path: Path) -> None:
    write(tmp_path / "bench.cuh", GROUP)
    source = '#include <cuda.h>\n#include "bench.cuh"\n__global__ void k(float* a) { a[0] = NI; }\n'
    edited = with_sizes(source, tmp_path / "bench.cu", (tmp_path,), {"NI": 97})
    assert edited.source == source.replace('"bench.cuh"', f'"{COPIES}/0/bench.cuh"')
    [(name, text)] = edited.files
    assert name == f"{COPIES}/0/bench.cuh" and text == set_defines(GROUP, {"NI": 97})
    assert (tmp_path / "bench.cuh").read_text() == GROUP  # the user's header is untouched


def test_a_header_through_the_include_dirs_finds_its_neighbours_as_before(tmp_path: Path) -> None:
    write(tmp_path / "inc" / "sizes.h", '#include "common.h"\n#include <other.h>\n#include <stdio.h>\n'
                                        "#ifndef N\n#define N 64\n#endif\n")
    write(tmp_path / "inc" / "common.h", "#define REAL float\n")
    write(tmp_path / "lib" / "other.h", "#define TILE 16\n")
    dirs = (tmp_path / "inc", tmp_path / "lib")
    source = '#include <sizes.h>\n#include "common.h"\n'
    edited = with_sizes(source, tmp_path / "src" / "k.cu", dirs, {"N": 5})
    assert lines(edited.source)[0] == f'#include "{COPIES}/0/sizes.h"'
    assert lines(edited.source)[1] == '#include "common.h"'  # not on the way to a copy: as it was
    [(_, text)] = edited.files
    assert lines(text)[:5] == [f'#include "{(tmp_path / "inc" / "common.h").resolve()}"',
                               f'#include "{(tmp_path / "lib" / "other.h").resolve()}"',
                               "#include <stdio.h>", "#ifndef N", "#define N 5"]


def test_the_headers_on_the_way_to_a_definition_are_copied_too(tmp_path: Path) -> None:
    write(tmp_path / "top.h", '#pragma once\n#include "mid/sizes.h"\n#include "plain.h"\n')
    write(tmp_path / "mid" / "sizes.h", '#pragma once\n#include "../top.h"\n#define M 128\n')
    write(tmp_path / "plain.h", "#define PLAIN 1\n")
    edited = with_sizes('#include "top.h"\n', tmp_path / "k.cu", (), {"M": 9})
    files = dict(edited.files)
    assert sorted(files) == [f"{COPIES}/0/sizes.h", f"{COPIES}/1/top.h"]
    assert edited.source == f'#include "{COPIES}/1/top.h"\n'
    assert lines(files[f"{COPIES}/1/top.h"])[1:3] == ['#include "../0/sizes.h"',
                                                      f'#include "{(tmp_path / "plain.h").resolve()}"']
    assert lines(files[f"{COPIES}/0/sizes.h"])[1:3] == ['#include "../1/top.h"', "#define M 9"]


def test_a_name_no_file_defines_is_missing(tmp_path: Path) -> None:
    edited = with_sizes("#ifndef N\n#endif\n", tmp_path / "k.cu", (), {"N": 3})
    assert edited.missing == ("N",)


def test_includes_resolve_as_the_compiler_does(tmp_path: Path) -> None:
    write(tmp_path / "a" / "x.h", "")
    write(tmp_path / "b" / "x.h", "")
    write(tmp_path / "b" / "y.h", "")
    assert resolve_include("x.h", True, tmp_path / "a", (tmp_path / "b",)) == (tmp_path / "a" / "x.h").resolve()
    assert resolve_include("x.h", False, tmp_path / "a", (tmp_path / "b",)) == (tmp_path / "b" / "x.h").resolve()
    assert resolve_include("y.h", True, tmp_path / "a", ()) is None


def test_a_header_edited_on_disk_is_read_again(tmp_path: Path) -> None:
    import os

    header = write(tmp_path / "sizes.h", "#define N 64\n")
    assert dict(with_sizes('#include "sizes.h"\n', tmp_path / "k.cu", (), {"N": 3}).files) == \
        {f"{COPIES}/0/sizes.h": "#define N 3\n"}
    header.write_text("#define N 64 // rows\n")
    os.utime(header, ns=(1, 1))
    assert dict(with_sizes('#include "sizes.h"\n', tmp_path / "k.cu", (), {"N": 3}).files) == \
        {f"{COPIES}/0/sizes.h": "#define N 3 // rows\n"}
