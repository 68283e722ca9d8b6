"""nvcc driving: ptxas reports, symbol names, the cubin cache, errors; real compiles need nvcc."""
from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from cuopt.compile_settings import CompileSettings
from cuopt.errors import CuoptError
from cuopt.evaluate import compile as C
from cuopt.evaluate.compile import (CompileError, Compiled, Resources, base_name, compile_kernel, compile_many,
                                    entry_symbol, first_error, parse_ptxas)

from tests.conftest import SAMPLES, requires_nvcc, sample_names

IN_SAMPLES = CompileSettings().searching(SAMPLES)

# CUDA 13 style: barriers always reported, smem only when used, a trailing device function.
LOG_13 = """\
ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function '_Z10reduce_sumPKfPfi' for 'sm_90'
ptxas info    : Function properties for _Z10reduce_sumPKfPfi
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 13 registers, used 1 barriers, 1024 bytes smem
ptxas info    : Compile time = 1.749 ms
ptxas info    : Compiling entry function 'plain' for 'sm_90'
ptxas info    : Function properties for plain
    96 bytes stack frame, 40 bytes spill stores, 48 bytes spill loads
ptxas info    : Used 255 registers, used 0 barriers, 96 bytes cumulative stack size
ptxas info    : Compile time = 0.410 ms
ptxas info    : Compiling entry function '_Z5saxpyifPKfPf' for 'sm_90'
ptxas info    : Function properties for _Z5saxpyifPKfPf
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 10 registers, used 0 barriers
ptxas info    : Compile time = 0.5 ms
ptxas info    : Function properties for _Z6helperf
    8 bytes stack frame, 4 bytes spill stores, 4 bytes spill loads
"""

# CUDA 12 style: no barrier count, constant memory after smem.
LOG_12 = """\
ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function '_Z6kernelPf' for 'sm_80'
ptxas info    : Function properties for _Z6kernelPf
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 12 registers, 2048 bytes smem, 360 bytes cmem[0]
ptxas info    : Compiling entry function '_ZN2ns6kernelEPf' for 'sm_80'
ptxas info    : Function properties for _ZN2ns6kernelEPf
    16 bytes stack frame, 8 bytes spill stores, 12 bytes spill loads
ptxas info    : Used 32 registers, 360 bytes cmem[0]
"""


def test_parse_ptxas_cuda13() -> None:
    report = parse_ptxas(LOG_13)
    assert set(report) == {"_Z10reduce_sumPKfPfi", "plain", "_Z5saxpyifPKfPf"}
    assert report["_Z10reduce_sumPKfPfi"] == Resources(registers=13, shared_bytes=1024, barriers=1)
    assert report["plain"] == Resources(registers=255, stack_bytes=96, spill_stores=40, spill_loads=48)
    assert report["_Z5saxpyifPKfPf"] == Resources(registers=10)


def test_parse_ptxas_cuda12() -> None:
    report = parse_ptxas(LOG_12)
    assert report["_Z6kernelPf"] == Resources(registers=12, shared_bytes=2048)
    assert report["_ZN2ns6kernelEPf"] == Resources(registers=32, stack_bytes=16, spill_stores=8, spill_loads=12)


def test_parse_ptxas_ignores_other_output() -> None:
    log = ("kernel.cu(15): warning #177-D: function \"st\" was declared but never referenced\n\n"
           "Remark: The warnings can be suppressed with \"-diag-suppress <warning-number>\"\n\n" + LOG_13)
    assert parse_ptxas(log) == parse_ptxas(LOG_13)
    assert parse_ptxas("") == {}
    assert parse_ptxas("nvcc warning : something\n") == {}


@pytest.mark.parametrize("symbol, name", [
    ("_Z5saxpyifPKfPf", "saxpy"),
    ("_Z10reduce_sumPKfPfi", "reduce_sum"),
    ("_ZN2ns6kernelEPf", "kernel"),
    ("_ZN2ns5inner6kernelEPf", "kernel"),
    ("_ZN12_GLOBAL__N_16kernelEPf", "kernel"),
    ("_ZL5saxpyifPKfPf", "saxpy"),
    ("saxpy", "saxpy"),
    ("plain_kernel", "plain_kernel"),
    ("_Z2tkIfEvPT_", None),
    ("_ZN2ns2tkIfEEvPT_", None),
    ("_Z6kernelIiLi4EEvPT_", None),
])
def test_base_name(symbol: str, name: str | None) -> None:
    assert base_name(symbol) == name


def test_entry_symbol_finds_the_kernel() -> None:
    report = parse_ptxas(LOG_13)
    assert entry_symbol("saxpy", report) == "_Z5saxpyifPKfPf"
    assert entry_symbol("plain", report) == "plain"


def test_entry_symbol_missing() -> None:
    report = {"_Z5saxpyifPKfPf": Resources(), "plain": Resources()}
    with pytest.raises(CompileError) as exc:
        entry_symbol("axpy", report)
    assert str(exc.value) == ("kernel 'axpy' is not among the compiled entry functions "
                              "(_Z5saxpyifPKfPf, plain)")


def test_entry_symbol_template_instantiation_is_not_the_kernel() -> None:
    with pytest.raises(CompileError, match="not among the compiled entry functions"):
        entry_symbol("tk", {"_Z2tkIfEvPT_": Resources()})


def test_entry_symbol_empty_report() -> None:
    with pytest.raises(CompileError, match=r"\(none\)"):
        entry_symbol("k", {})


def test_entry_symbol_overloaded() -> None:
    with pytest.raises(CompileError) as exc:
        entry_symbol("k", {"_Z1kPf": Resources(), "_Z1kPd": Resources(), "_Z1jPf": Resources()})
    msg = str(exc.value)
    assert msg.startswith("kernel 'k' is overloaded (")
    assert "_Z1kPf" in msg and "_Z1kPd" in msg and "_Z1jPf" not in msg
    assert msg.endswith("cuopt needs one definition")


TWO_INSTANTIATIONS = """\
template <typename T, int BLOCK>
__global__ void scale(T* out, const T* in, T a, int n)
{
    int i = blockIdx.x * BLOCK + threadIdx.x;
    if (i < n) out[i] = a * in[i];
}
template __global__ void scale<float, 256>(float*, const float*, float, int);
void run(double* o, const double* x, int n) { scale<double, 128><<<(n + 127) / 128, 128>>>(o, x, 2.0, n); }
"""


@requires_nvcc
@pytest.mark.parametrize("kernel, symbol", [("scale<float, 256>", "_Z5scaleIfLi256EEvPT_PKS0_S0_i"),
                                            ("scale<double, 128>", "_Z5scaleIdLi128EEvPT_PKS0_S0_i"),
                                            ("scale<int, 0x40>", "_Z5scaleIiLi64EEvPT_PKS0_S0_i")])
def test_the_entry_symbol_of_an_instantiation(kernel: str, symbol: str) -> None:
    """Among several instantiations, the one named; one the file lacks gets an explicit instantiation."""
    c = compile_kernel(TWO_INSTANTIATIONS + f"// {uuid.uuid4()}\n", kernel)
    assert c.symbol == symbol and c.resources.registers > 0


@requires_nvcc
def test_an_explicit_instantiation_is_not_appended_twice() -> None:
    source = TWO_INSTANTIATIONS.replace("scale<float, 256>(", "scale<float, 0x100>(")
    assert C.with_instantiation(source, "scale<float, 256>") == source
    assert C.with_instantiation(source, "scale<float, 512>").endswith(
        "\n\ntemplate __global__ void scale<float, 512>(float* out, const float* in, float a, int n);\n")


@requires_nvcc
def test_an_instantiation_missing_from_the_cubin() -> None:
    report = parse_ptxas("ptxas info    : Compiling entry function '_Z5scaleIfLi256EEvPT_PKS0_S0_i' for 'sm_90'\n")
    with pytest.raises(CompileError) as exc:
        entry_symbol("scale<float, 128>", report)
    assert str(exc.value) == ("kernel 'scale<float, 128>' is not among the compiled entry functions "
                              "(scale<float, 256>)")


def test_first_error() -> None:
    log = ("/tmp/cuopt-nvcc-x1/kernel.cu(3): warning #550-D: variable \"q\" was set but never used\n"
           "/tmp/cuopt-nvcc-x1/kernel.cu(12): error: identifier \"oops\" is undefined\n"
           "      p[0] = oops;\n\n1 error detected in the compilation of \"kernel.cu\".\n")
    assert first_error(log) == 'line 12: error: identifier "oops" is undefined'
    assert first_error("just a note\nlast line\n") == "last line"
    assert first_error("") == "no output"


def test_find_nvcc_uses_cuda_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "nvcc").write_text("#!/bin/sh\n")
    monkeypatch.setattr(C.shutil, "which", lambda name: None)
    monkeypatch.setenv("CUDA_HOME", str(tmp_path))
    assert C.find_nvcc() == str(tmp_path / "bin" / "nvcc")


def test_require_nvcc_message(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(C, "find_nvcc", lambda: None)
    with pytest.raises(CuoptError, match="nvcc not found: install the CUDA toolkit"):
        C.require_nvcc()


# -- real compiles ------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def compiled_samples(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Compiled | CompileError]:
    """Every sample compiled once, in parallel, into the session's shared cache."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("CUOPT_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "cuopt-cache"))
        names = sample_names()
        jobs = [((SAMPLES / f"{n}.cu").read_text(), n, IN_SAMPLES) for n in names]
        return dict(zip(names, compile_many(jobs, arch="sm_90")))


@requires_nvcc
@pytest.mark.parametrize("name", sample_names())
def test_every_sample_compiles(compiled_samples: dict[str, Compiled | CompileError], name: str) -> None:
    c = compiled_samples[name]
    assert isinstance(c, Compiled), c
    assert base_name(c.symbol) == name
    assert c.symbol.startswith("_Z")
    assert c.arch == "sm_90"
    assert c.cubin.is_file() and c.cubin.stat().st_size > 0
    r = c.resources
    assert 0 < r.registers <= 255
    assert r.spill_stores == 0 and r.spill_loads == 0
    if name == "reduce_sum":
        assert r.shared_bytes == 1024
        assert r.barriers >= 1
    else:
        assert r.shared_bytes == 0
        assert r.barriers == 0


@requires_nvcc
def test_compile_kernel_single_and_cache() -> None:
    source = (SAMPLES / "saxpy.cu").read_text() + f"\n// {uuid.uuid4()}\n"
    first = compile_kernel(source, "saxpy", arch="sm_90")
    assert first.cached is False
    again = compile_kernel(source, "saxpy", arch="sm_90")
    assert again.cached is True
    assert (again.symbol, again.resources, again.cubin) == (first.symbol, first.resources, first.cubin)
    edited = compile_kernel(source.replace("a * x[i]", "a * x[i] * 2.0f"), "saxpy", arch="sm_90")
    assert edited.cached is False
    assert edited.cubin != first.cubin
    other_arch = compile_kernel(source, "saxpy", arch="sm_80")
    assert other_arch.cached is False and other_arch.arch == "sm_80"


@requires_nvcc
def test_cache_notices_header_edits(tmp_path: Path) -> None:
    header = tmp_path / "scale.h"
    header.write_text("#define SCALE 2.0f\n")
    source = f'#include "scale.h"\n// {uuid.uuid4()}\n__global__ void k(float* p) {{ p[0] = SCALE; }}\n'
    settings = CompileSettings(include_dirs=(tmp_path,))
    first = compile_kernel(source, "k", settings=settings)
    assert compile_kernel(source, "k", settings=settings).cached is True
    header.write_text("#define SCALE 3.0f\n")
    assert compile_kernel(source, "k", settings=settings).cached is False
    assert first.symbol == "_Z1kPf"


@requires_nvcc
def test_cache_notices_edits_of_angle_bracket_headers(tmp_path: Path) -> None:
    (tmp_path / "scale.h").write_text("#define SCALE 2.0f\n")
    source = f'#include <scale.h>\n// {uuid.uuid4()}\n__global__ void k(float* p) {{ p[0] = SCALE; }}\n'
    settings = CompileSettings(include_dirs=(tmp_path,))
    assert compile_kernel(source, "k", settings=settings).cached is False
    (tmp_path / "scale.h").write_text("#define SCALE 3.0f\n")
    assert compile_kernel(source, "k", settings=settings).cached is False


@requires_nvcc
def test_definitions_and_flags_reach_nvcc_and_the_cache_key() -> None:
    source = f"// {uuid.uuid4()}\n__global__ void k(float* p) {{ p[0] = SCALE; }}\n"
    with pytest.raises(CompileError, match='identifier "SCALE" is undefined'):
        compile_kernel(source, "k")
    two = compile_kernel(source, "k", settings=CompileSettings(defines=(("SCALE", "2.0f"),)))
    assert two.cached is False
    assert compile_kernel(source, "k", settings=CompileSettings(defines=(("SCALE", "2.0f"),))).cached is True
    three = compile_kernel(source, "k", settings=CompileSettings(defines=(("SCALE", "3.0f"),)))
    assert three.cached is False and three.cubin != two.cubin
    lined = compile_kernel(source, "k", settings=CompileSettings(defines=(("SCALE", "2.0f"),), flags=("-lineinfo",)))
    assert lined.cached is False and lined.cubin != two.cubin


@requires_nvcc
def test_syntax_error_gives_the_line() -> None:
    source = f"// {uuid.uuid4()}\n__global__ void k(float* p)\n{{\n    p[0] = oops;\n}}\n"
    with pytest.raises(CompileError) as exc:
        compile_kernel(source, "k")
    assert str(exc.value) == 'nvcc failed: line 4: error: identifier "oops" is undefined'
    assert "error" in exc.value.log


@requires_nvcc
def test_kernel_missing_from_the_file() -> None:
    with pytest.raises(CompileError, match="kernel 'nope' is not among the compiled entry functions"):
        compile_kernel(f"// {uuid.uuid4()}\n__global__ void k(float* p) {{ p[0] = 1; }}\n", "nope")


@requires_nvcc
def test_compile_many_returns_errors_in_place() -> None:
    tag = uuid.uuid4()
    good = f"// {tag}\n__global__ void k(float* p) {{ p[0] = 1; }}\n"
    bad = f"// {tag}\n__global__ void k(float* p) {{ p[0] = ; }}\n"
    results = compile_many([(good, "k", IN_SAMPLES), (bad, "k", IN_SAMPLES), (good, "nope", IN_SAMPLES),
                            (good.replace("1;", "2;"), "k", IN_SAMPLES)], workers=2)
    assert [type(r).__name__ for r in results] == ["Compiled", "CompileError", "CompileError", "Compiled"]
    assert str(results[1]).startswith("nvcc failed: line 2: error:")
    assert "not among the compiled entry functions" in str(results[2])
    assert compile_many([]) == []
