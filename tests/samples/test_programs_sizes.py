"""Programs whose own header sets its sizes in a guarded group (`#if !defined(NI) && ... && !defined(NL)`),
with single-letter sizes (`N`, `M`) and `<cuda.h>` included before that header: `cuopt init` then
`cuopt bench --dry-run` compiles every kernel at the timing and the check sizes, and no compile
command cuopt runs defines a macro (a `-DN=...` would reach the driver API's parameters named `N`)."""
from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from cuopt.evaluate.build import compile_all, plan_for
from cuopt.evaluate.compile import DEFAULT_ARCH, Compiled, find_nvcc
from cuopt.targets import collect

from tests.conftest import requires_nvcc
from tests.helpers import cuopt
from tests.samples.test_programs_workflow import copy_program, init

GROUPED = ["twomm", "atax"]  # NI, NJ, NK, NL in one guard (mm2_tmp_kernel uses no NL); M, N and TSTEPS in another


@requires_nvcc
def test_bench_dry_run_compiles_every_kernel_at_every_size_without_a_define(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CUOPT_CACHE_DIR", str(tmp_path / "cache"))  # every build runs nvcc here
    argvs: list[list[str]] = []
    real_run = subprocess.run

    def recording(argv, *args, **kwargs):
        argvs.append(list(argv))
        return real_run(argv, *args, **kwargs)

    monkeypatch.setattr("cuopt.evaluate.compile.subprocess.run", recording)
    sources = [copy_program(tmp_path / name, name) for name in GROUPED]
    for cu in sources:
        init(cu)
    bench = cuopt("bench", *map(str, sources), "--dry-run", "--json")
    assert bench.exit_code == 0, bench.output
    rows = json.loads(bench.stdout)
    assert sorted(r["kernel"] for r in rows) == ["atax_atv_kernel", "atax_ax_kernel", "mm2_out_kernel", "mm2_tmp_kernel"]
    assert all(r["status"] == "compiled" and r["reference"] == "float64" for r in rows), rows

    builds = [a for a in argvs if a and a[0] == find_nvcc() and "-cubin" in a]
    assert builds and not [arg for a in builds for arg in a if arg.startswith("-D")]  # the user gave none
    probe = tmp_path / "probe.cu"
    probe.write_text("#include <cuda.h>\n")
    seen = real_run([find_nvcc(), "-E", "-DN=4096", str(probe)], capture_output=True, text=True, timeout=120).stdout
    assert re.search(r"size_t 4096\)", seen), "the hazard guarded against: -DN=... rewrites cuda.h's parameters"

    targets = collect(sources)
    compiled = compile_all([(plan_for(t), t.text) for t in targets], DEFAULT_ARCH)
    for t, c in zip(targets, compiled):
        assert isinstance(c, Compiled), c
        assert t.macro_sizes == set(t.spec.sizes)  # every size is the header's, set per size set
        assert t.spec.check_sizes and all(all(check[n] != t.spec.sizes[n] for n in t.spec.sizes)
                                          for check in t.spec.check_sizes), t.spec.check_sizes
        assert len({b.cubin for b in c.sized}) == 1 + len(t.spec.check_sizes)  # a build at each size set
        assert all(b.cached for b in c.sized)  # the bench above built these very sources
