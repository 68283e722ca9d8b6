"""`cuopt optimize` end to end on a CPU with the stand-in GPU backend (saxpy computed with numpy, a
fixed pseudo-random "time" per cubin; compiles with the real nvcc): the JSON summary, write-back
with backups and a retargeted launch site, the trace, the measurement cache, --dry-run, --out,
--keep-launch, and the errors and dry run without a GPU.

The stand-in measures nothing; these tests are about the search, confirmation and write-back
logic. Every test works on its own copy of saxpy (its own file name) in one directory shared by
the module: compiled cubins are cached by source *and* include directory, so sharing the
directory lets every test reuse the cubins the others built."""
from __future__ import annotations

import json
import os
import re
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from cuopt.cli import app
from cuopt.evaluate.worker import FLUSH_BYTES
from cuopt.optimization.trace import TRACE_VERSION, load_trace
from cuopt.source.launches import launch_sites
from cuopt.spec import expr as E
from cuopt.spec.model import load as load_spec

from tests.conftest import requires_nvcc
from tests.evaluate.fake_sanitizer import install as install_sanitizer
from tests.helpers import kernel_text
from tests.optimization.stand_in_backend import StandInBackend

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

SITE = "saxpy<<<(n + 255) / 256, 256>>>(n, a, x, y);"
HOST = f"""
void run_saxpy(int n, float a, const float* x, float* y)
{{
    {SITE}
}}
"""
N = 100000
SUMMARY_KEYS = {"file", "kernel", "status", "message", "baseline_ms", "best_ms", "speedup", "spread", "peak_pct",
                "baseline_peak_pct", "evaluations", "rejected", "sequence", "launch", "launch_note", "stop", "trace",
                "report", "written"}
ORIGINAL_LAUNCH = {"block": [256], "grid": {"expr": ["cdiv(n, block.x)"], "value": [(N + 255) // 256]}}


class QuickStandInBackend(StandInBackend):
    """The stand-in without the 256 MiB L2 flush before every timed launch (a numpy fill that would
    take most of the run time on a CPU and flushes nothing)."""

    def fill(self, buf: Any, byte: int, nbytes: int) -> None:
        if nbytes < FLUSH_BYTES:
            super().fill(buf, byte, nbytes)


BACKEND = f"{__name__}:QuickStandInBackend"


class LoggedStandInBackend(QuickStandInBackend):
    """The quick stand-in that appends when each timed launch started and ended (seconds since the
    epoch) to the file $CUOPT_TEST_TIMED names."""

    def timed_launch(self, *args: Any, **kwargs: Any) -> float:
        start = time.time()
        ms = super().timed_launch(*args, **kwargs)
        with open(os.environ["CUOPT_TEST_TIMED"], "a") as f:
            f.write(f"{start} {time.time()}\n")
        return ms


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("standin")


@pytest.fixture
def saxpy(samples: Path, workdir: Path, request: pytest.FixtureRequest) -> Path:
    """This test's copy of saxpy with small sizes and a host launch site."""
    stem = re.sub(r"\W+", "_", request.node.name.removeprefix("test_"))[:60]
    cu = workdir / f"{stem}.cu"
    cu.write_text((samples / "saxpy.cu").read_text() + HOST)
    spec = (samples / "saxpy.cuopt.toml").read_text()
    small = spec.replace("n = 67108864", f"n = {N}").replace("{ n = 1000003 }", "{ n = 1003 }")
    assert small.count(str(N)) == 1 and "1000003" not in small
    (workdir / f"{stem}.cuopt.toml").write_text(small)
    return cu


def spec_of(cu: Path) -> Path:
    return cu.with_name(cu.stem + ".cuopt.toml")


def cuopt(*args: str | Path) -> Result:
    return CliRunner().invoke(app, [str(a) for a in args])


def optimize(monkeypatch: pytest.MonkeyPatch, cu: Path, *args: str | Path, max_evals: int = 20) -> dict[str, Any]:
    monkeypatch.setenv("CUOPT_GPU_BACKEND", BACKEND)
    result = cuopt("optimize", cu, "--budget", "40s", "--max-evals", str(max_evals), "--json", "--no-sanitizer",
                   *args)
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert isinstance(data, dict), data
    return data


def one_error_line(result: Result) -> str:
    assert "Traceback" not in result.output
    lines = [ln for ln in result.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, result.stderr
    return lines[0]


def c_value(c: str, n: int) -> int:
    """A host grid expression (integer + - * / on n) evaluated like C for non-negative n."""
    assert re.fullmatch(r"[\sn\d()+\-*/]+", c), c
    return int(eval(c.replace("/", "//"), {}, {"n": n}))  # noqa: S307 - text cuopt wrote, checked above


def backups(cu: Path, name: str) -> list[Path]:
    return sorted((cu.parent / ".cuopt" / "backups").glob(f"{name}.*"))


def check_summary(data: dict[str, Any], cu: Path) -> None:
    assert SUMMARY_KEYS <= set(data), SUMMARY_KEYS - set(data)
    assert data["file"] == str(cu) and data["kernel"] == "saxpy"
    assert isinstance(data["rejected"], dict) and all(isinstance(v, int) for v in data["rejected"].values())
    assert isinstance(data["sequence"], list) and all(isinstance(s, str) for s in data["sequence"])
    launch = data["launch"]
    assert set(launch) == {"block", "grid"} and set(launch["grid"]) == {"expr", "value"}
    assert len(launch["grid"]["expr"]) == len(launch["grid"]["value"])
    assert isinstance(data["evaluations"], int) and data["evaluations"] >= 0
    assert Path(data["trace"]).is_file()


def launch_of_spec(spec: Path) -> dict[str, Any]:
    k = load_spec(spec).kernels["saxpy"]
    grid = k.launch.grid3(k.sizes)[: len(k.launch.grid)]
    return {"block": list(k.launch.block), "grid": {"expr": [str(g) for g in k.launch.grid], "value": list(grid)}}


def strip_launches(text: str) -> list[str]:
    return [ln for ln in text.splitlines() if "<<<" not in ln and not ln.startswith("// cuopt: launch")]


# -- write-back ------------------------------------------------------------------------------------------------

@requires_nvcc
def test_optimize_writes_the_confirmed_variant(monkeypatch: pytest.MonkeyPatch, saxpy: Path) -> None:
    original, original_spec = saxpy.read_bytes(), spec_of(saxpy).read_bytes()
    data = optimize(monkeypatch, saxpy)
    check_summary(data, saxpy)
    assert data["evaluations"] == 20 and data["stop"] == "reached --max-evals 20"
    assert data["status"] == "written", data["message"]
    assert data["message"] == f"wrote {saxpy}"
    assert data["written"] == [str(saxpy), str(spec_of(saxpy))]
    assert data["sequence"], "a written variant has at least one rewrite"
    assert data["best_ms"] < data["baseline_ms"] and data["speedup"] == pytest.approx(
        data["baseline_ms"] / data["best_ms"])

    # the file, its backup, the spec
    text = saxpy.read_text()
    assert text.encode() != original
    [backup] = backups(saxpy, saxpy.name)
    assert backup.read_bytes() == original
    [spec_backup] = backups(saxpy, spec_of(saxpy).name)
    assert spec_backup.read_bytes() == original_spec
    assert launch_of_spec(spec_of(saxpy)) == data["launch"]
    assert tomllib.loads(spec_of(saxpy).read_text())["saxpy"]["sizes"] == {"n": N}

    # the host launch site follows the new launch (or a comment says how to launch)
    launch = data["launch"]
    [site] = launch_sites(text.encode(), "saxpy")
    grid_text, block_text = (a.text.decode() for a in site.config_args)
    if launch == ORIGINAL_LAUNCH:
        assert data["launch_note"] == "" and SITE in text
    elif data["launch_note"].startswith("LAUNCH CHANGED"):
        assert f"// cuopt: launch saxpy with block {launch['block'][0]}" in text and SITE in text
    else:
        assert data["launch_note"].endswith("1 launch site(s) in the file updated"), data["launch_note"]
        assert block_text == str(launch["block"][0]) and len(launch["block"]) == 1
        for n in (N, 1, 97, 1003):
            env = {"n": n, "block.x": launch["block"][0], "block.y": 1, "block.z": 1}
            assert c_value(grid_text, n) == E.evaluate(E.parse(launch["grid"]["expr"][0]), env), (grid_text, n)
        assert SITE not in text

    # the trace and the report
    trace = load_trace(Path(data["trace"]))
    assert trace["version"] == TRACE_VERSION and trace["kernel"] == "saxpy" and trace["file"] == str(saxpy)
    assert trace["result"]["status"] == "written" and trace["result"]["written"] == data["written"]
    assert trace["stop"] == data["stop"]
    assert [s["action"] for s in trace["chosen"]["steps"]] == [None, *data["sequence"]]
    assert strip_launches(trace["chosen"]["steps"][-1]["source"]) == strip_launches(text)
    assert strip_launches(trace["chosen"]["steps"][0]["source"]) == strip_launches(original.decode())
    fresh = [c for c in trace["candidates"] if c["id"] != 0 and c["duplicate_of"] is None]
    assert len(fresh) == data["evaluations"]
    assert [a["verdict"] for a in trace["confirmation"]["attempts"]][-1] == "accepted"
    assert Path(data["report"]).is_file()
    assert f"- result: **written**: wrote {saxpy}" in Path(data["report"]).read_text()

    # where the kernel's time went: each phase, together no more than the kernel's time
    phases = data["budget"]["phases"]
    assert list(phases) == ["baseline_s", "search_s", "confirm_s"] and trace["phases"] == phases
    assert sum(phases.values()) <= data["budget"]["used_s"] + 0.1
    assert re.search(r"baseline [0-9.]+ s, search [0-9.]+ s, confirm [0-9.]+ s", Path(data["report"]).read_text())


@requires_nvcc
def test_a_second_run_reuses_the_measurements(monkeypatch: pytest.MonkeyPatch, saxpy: Path) -> None:
    depth1 = ("--dry-run", "--search-option", "max-depth=1", "--schedule", "equal")  # every variant, no early stop
    first = optimize(monkeypatch, saxpy, *depth1)
    assert first["stop"] == "every reachable variant was evaluated"
    assert first["evaluations"] >= 4
    cache = saxpy.parent / ".cuopt" / "cache" / f"{saxpy.name}.saxpy.jsonl"
    assert len(cache.read_text().splitlines()) == first["evaluations"]
    second = optimize(monkeypatch, saxpy, *depth1)
    assert second["stop"] == "every reachable variant was evaluated"
    assert second["evaluations"] == 0, "every measurement came from the cache"
    assert (second["status"], second["sequence"]) == (first["status"], first["sequence"])
    assert len(cache.read_text().splitlines()) == first["evaluations"]
    uncached = optimize(monkeypatch, saxpy, *depth1, "--no-cache")
    assert uncached["evaluations"] == first["evaluations"]


@requires_nvcc
def test_definitions_reach_the_search_and_key_its_cache(monkeypatch: pytest.MonkeyPatch, saxpy: Path) -> None:
    saxpy.write_text(saxpy.read_text().replace("y[i] = a * x[i] + y[i];", "y[i] = a * x[i] * ONE + y[i];"))
    depth1 = ("--dry-run", "--search-option", "max-depth=1")
    monkeypatch.setenv("CUOPT_GPU_BACKEND", BACKEND)
    failed = cuopt("optimize", saxpy, "--json", "--no-sanitizer", *depth1)
    assert failed.exit_code == 1 and "the original kernel does not compile" in failed.stdout
    first = optimize(monkeypatch, saxpy, *depth1, "-D", "ONE=1.0f")
    assert first["evaluations"] >= 4
    assert optimize(monkeypatch, saxpy, *depth1, "-DONE=1.0f")["evaluations"] == 0  # the same settings: cached
    assert optimize(monkeypatch, saxpy, *depth1, "-DONE=1")["evaluations"] == first["evaluations"]


@requires_nvcc
def test_dry_run_writes_neither_file_nor_spec(monkeypatch: pytest.MonkeyPatch, saxpy: Path) -> None:
    original, original_spec = saxpy.read_bytes(), spec_of(saxpy).read_bytes()
    data = optimize(monkeypatch, saxpy, "--dry-run", max_evals=8)
    check_summary(data, saxpy)
    assert data["evaluations"] == 8
    assert data["status"] in {"dry-run", "not-faster", "no-candidate"}
    if data["status"] == "dry-run":
        assert data["message"] == "confirmed; nothing written (--dry-run)"
    assert data["written"] == []
    assert saxpy.read_bytes() == original and spec_of(saxpy).read_bytes() == original_spec
    assert backups(saxpy, saxpy.name) == [] and backups(saxpy, spec_of(saxpy).name) == []
    assert load_trace(Path(data["trace"]))["result"]["written"] == []


@requires_nvcc
def test_out_writes_another_file_and_its_spec(monkeypatch: pytest.MonkeyPatch, saxpy: Path) -> None:
    original, original_spec = saxpy.read_bytes(), spec_of(saxpy).read_bytes()
    out = saxpy.with_name(saxpy.stem + "_other.cu")
    data = optimize(monkeypatch, saxpy, "--out", out)
    assert data["status"] == "written", data["message"]
    assert data["written"] == [str(out), str(spec_of(out))]
    assert data["message"] == f"wrote {out}"
    assert saxpy.read_bytes() == original and spec_of(saxpy).read_bytes() == original_spec
    assert backups(saxpy, saxpy.name) == [] and backups(saxpy, spec_of(saxpy).name) == []
    assert out.read_bytes() != original
    assert launch_of_spec(spec_of(out)) == data["launch"]
    other = tomllib.loads(spec_of(out).read_text())["saxpy"]
    assert other["sizes"] == {"n": N} and other["args"]["x"] == "in float32[n]"


@requires_nvcc
def test_keep_launch_keeps_the_launch(monkeypatch: pytest.MonkeyPatch, saxpy: Path) -> None:
    data = optimize(monkeypatch, saxpy, "--keep-launch")
    check_summary(data, saxpy)
    assert data["launch"] == ORIGINAL_LAUNCH
    assert data["launch_note"] == ""
    assert not [s for s in data["sequence"] if s.split("@")[0] in {"block-size", "vectorize", "coarsen"}]
    trace = load_trace(Path(data["trace"]))
    assert {s["launch"] for s in trace["chosen"]["steps"]} == {"block 256, grid (cdiv(n, block.x))"}
    tried = {c["rule"] for c in trace["candidates"] if c["rule"]}
    assert tried and not tried & {"block-size", "vectorize", "coarsen"}, tried
    assert launch_of_spec(spec_of(saxpy)) == ORIGINAL_LAUNCH
    assert SITE in saxpy.read_text()


@requires_nvcc
def test_a_launch_site_it_cannot_rewrite_gets_a_comment(monkeypatch: pytest.MonkeyPatch, saxpy: Path) -> None:
    variable = "saxpy<<<(n + threads - 1) / threads, threads>>>(n, a, x, y);"
    saxpy.write_text(saxpy.read_text().replace(SITE, f"const int threads = n > (1 << 30) ? 512 : 256;\n    {variable}"))
    data = optimize(monkeypatch, saxpy, max_evals=8)
    site_line = next(i for i, ln in enumerate(saxpy.read_text().splitlines(), 1) if variable in ln)
    assert data["status"] == "written", data["message"]
    assert data["launch"] != ORIGINAL_LAUNCH, "the stand-in's times no longer favour a new launch"
    block, grid = data["launch"]["block"], data["launch"]["grid"]["expr"]
    describe = f"block {'x'.join(map(str, block))}, grid ({', '.join(grid)})"
    assert data["launch_note"] == (f"LAUNCH CHANGED: launch saxpy with {describe} (a comment above the kernel says "
                                   f"so; line {site_line}: its block (threads) is not the constant block 256 of the "
                                   f"spec)")
    text = saxpy.read_text()
    comment = f"// cuopt: launch saxpy with {describe} (written per block; see the .cuopt.toml)\n"
    assert text.count(comment) == 1
    assert re.search(re.escape(comment) + r"__global__ void (__launch_bounds__\(\d+\) )?saxpy\(", text), text
    assert variable in text
    assert launch_of_spec(spec_of(saxpy)) == data["launch"]


# -- errors and the dry run without a GPU -------------------------------------------------------------------------

@pytest.mark.parametrize("args, message", [
    (["--max-evals", "0"], "cuopt: error: --max-evals must be at least 1"),
    (["--budget", "10x"], "cuopt: error: --budget '10x': expected a duration such as 30s, 10m or 1h"),
    (["--search-option", "speed=3"], "cuopt: error: --search-option 'speed=3': expected KEY=VALUE with KEY one of "
                                     "c-puct, max-depth, batch, failure-penalty, fpu-reduction, value-weight, prune-value, rule-spread"),
    (["--policy", "greedy"], "cuopt: error: --policy 'greedy': expected one of heuristic, uniform, learned or a "
                             "model file"),
])
def test_bad_options_are_one_error_line(monkeypatch: pytest.MonkeyPatch, saxpy: Path, args: list[str],
                                        message: str) -> None:
    monkeypatch.setenv("CUOPT_GPU_BACKEND", BACKEND)
    original = saxpy.read_bytes()
    result = cuopt("optimize", saxpy, *args)
    assert result.exit_code == 1
    assert one_error_line(result) == message
    assert saxpy.read_bytes() == original


def test_without_a_gpu_optimize_says_to_use_dry_run(monkeypatch: pytest.MonkeyPatch, saxpy: Path) -> None:
    monkeypatch.delenv("CUOPT_GPU_BACKEND", raising=False)
    original, original_spec = saxpy.read_bytes(), spec_of(saxpy).read_bytes()
    result = cuopt("optimize", saxpy, "--budget", "40s")
    assert result.exit_code == 2
    line = one_error_line(result)
    assert line.startswith("cuopt: error: no CUDA GPU found") and "--dry-run" in line
    assert result.stdout == ""
    assert saxpy.read_bytes() == original and spec_of(saxpy).read_bytes() == original_spec
    assert not list((saxpy.parent / ".cuopt" / "traces").glob(f"{saxpy.stem}.*"))


@requires_nvcc
def test_dry_run_without_a_gpu_ranks_the_first_rewrites(monkeypatch: pytest.MonkeyPatch, saxpy: Path) -> None:
    monkeypatch.delenv("CUOPT_GPU_BACKEND", raising=False)
    original = saxpy.read_bytes()
    result = cuopt("optimize", saxpy, "--dry-run", "--json")
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)
    assert isinstance(rows, list) and len(rows) >= 4
    for r in rows:
        assert {"file", "kernel", "id", "prior", "summary", "compiled"} <= set(r)
        assert r["file"] == str(saxpy) and r["kernel"] == "saxpy"
        assert r["compiled"] is True and r["registers"] > 0, r
    priors = [r["prior"] for r in rows]
    assert priors == sorted(priors, reverse=True)
    assert sum(priors) == pytest.approx(1.0, abs=1e-3)
    assert len({r["id"] for r in rows}) == len(rows)
    assert {r["id"].split("@")[0] for r in rows} >= {"block-size", "vectorize", "coarsen", "restrict-const"}
    assert saxpy.read_bytes() == original
    assert not list((saxpy.parent / ".cuopt" / "traces").glob(f"{saxpy.stem}.*"))

    keep = json.loads(cuopt("optimize", saxpy, "--dry-run", "--json", "--keep-launch").stdout)
    assert [r["id"].split("@")[0] for r in keep] == ["restrict-const"]
    assert keep[0]["prior"] == 1.0

    table = cuopt("optimize", saxpy, "--dry-run")
    assert table.exit_code == 0, table.output
    assert "dry run without a GPU: first rewrites, ranked by the learned policy (nothing written)" in table.stdout
    assert rows[0]["id"] in table.stdout


@requires_nvcc
def test_a_dry_run_whose_candidates_all_fail_to_compile_is_an_error(monkeypatch: pytest.MonkeyPatch,
                                                                    saxpy: Path) -> None:
    monkeypatch.delenv("CUOPT_GPU_BACKEND", raising=False)
    saxpy.write_text(saxpy.read_text().replace("a * x[i]", "a * undefined_name * x[i]"))
    for args in ((), ("--json",)):
        result = cuopt("optimize", saxpy, "--dry-run", *args)
        assert result.exit_code == 1, result.output
        line = one_error_line(result)
        assert re.fullmatch(rf"cuopt: error: {re.escape(str(saxpy))}: kernel saxpy: none of its \d+ candidates "
                            r"compiles: nvcc failed: line \d+: error: identifier \"undefined_name\" is undefined", line)
    assert all(not r["compiled"] for r in json.loads(result.stdout))


@requires_nvcc
def test_a_search_whose_candidates_all_fail_to_compile_is_an_error(monkeypatch: pytest.MonkeyPatch,
                                                                   saxpy: Path) -> None:
    from cuopt.evaluate.compile import CompileError
    from cuopt.evaluate.evaluator import KernelEvaluator

    original, compile_variant = saxpy.read_text(), KernelEvaluator.compile

    def only_the_original(self: KernelEvaluator, variant: Any) -> Any:
        if variant.source != original:
            raise CompileError("nvcc failed: line 7: error: a rewrite that never compiles")
        return compile_variant(self, variant)

    monkeypatch.setattr(KernelEvaluator, "compile", only_the_original)
    monkeypatch.setenv("CUOPT_GPU_BACKEND", BACKEND)
    result = cuopt("optimize", saxpy, "--budget", "40s", "--max-evals", "4", "--json", "--no-sanitizer")
    assert result.exit_code == 1, result.output
    data = json.loads(result.stdout)
    assert data["status"] == "error" and data["file"] == str(saxpy)
    assert re.fullmatch(r"none of the \d+ candidates compiles: nvcc failed: line 7: error: a rewrite that never "
                        r"compiles", data["message"]), data["message"]
    assert saxpy.read_text() == original


# -- several kernels in one file ------------------------------------------------------------------------------------

THREE = ("saxpy", "saxpy_b", "saxpy_c")


@pytest.fixture
def three_kernels(samples: Path, workdir: Path, request: pytest.FixtureRequest) -> Path:
    """One file with three saxpy kernels, each launched from host code, and a spec with a table each."""
    stem = re.sub(r"\W+", "_", request.node.name.removeprefix("test_"))[:60]
    kernel = (samples / "saxpy.cu").read_text()
    spec = (samples / "saxpy.cuopt.toml").read_text()
    spec = spec.replace("n = 67108864", f"n = {N}").replace("{ n = 1000003 }", "{ n = 1003 }")
    cu = workdir / f"{stem}.cu"
    cu.write_text("#include <cstdio>\n\n" + "\n".join(
        kernel.replace("void saxpy(", f"void {name}(") + HOST.replace("saxpy", name) for name in THREE))
    spec_of(cu).write_text("\n".join(spec.replace("[saxpy", f"[{name}") for name in THREE))
    return cu


@requires_nvcc
def test_every_kernel_of_a_file_keeps_its_accepted_rewrite(monkeypatch: pytest.MonkeyPatch,
                                                          three_kernels: Path) -> None:
    """Regression: the last kernel's write-back used to put the earlier kernels back to their original text."""
    original = three_kernels.read_bytes()
    monkeypatch.setenv("CUOPT_GPU_BACKEND", BACKEND)
    result = cuopt("optimize", three_kernels, "--budget", "90s", "--max-evals", "6", "--json", "--no-sanitizer")
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)
    assert [r["kernel"] for r in rows] == list(THREE)
    written = [r for r in rows if r["status"] == "written"]
    assert len(written) >= 2, [(r["kernel"], r["status"], r["message"]) for r in rows]

    text = three_kernels.read_bytes()
    spec = load_spec(spec_of(three_kernels))
    for r in rows:
        trace = load_trace(Path(r["trace"]))
        final = trace["chosen"]["steps"][-1]["source"].encode() if r["status"] == "written" else original
        assert kernel_text(text, r["kernel"]) == kernel_text(final, r["kernel"]), r["kernel"]
        k = spec.kernels[r["kernel"]]
        assert [list(k.launch.block), [str(g) for g in k.launch.grid]] == \
            [r["launch"]["block"], r["launch"]["grid"]["expr"]], r["kernel"]
    # one backup per file per command, holding the file as it was before the command
    [backup] = backups(three_kernels, three_kernels.name)
    assert backup.read_bytes() == original
    [spec_backup] = backups(three_kernels, spec_of(three_kernels).name)
    assert b"[saxpy_b]" in spec_backup.read_bytes()
    # outside the kernels and their launch sites, nothing changed
    assert [ln for ln in strip_launches(text.decode()) if not ln.startswith(("__global__", "    ", "{", "}"))] == \
        [ln for ln in strip_launches(original.decode()) if not ln.startswith(("__global__", "    ", "{", "}"))]


# -- the sanitizer in confirmation ------------------------------------------------------------------------------

def _with_sanitizer(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, how: str, racecheck: str = "") -> Path:
    tools = tmp_path / "tools"
    install_sanitizer(tools, {"memcheck": how, "racecheck": racecheck or how})
    monkeypatch.setenv("PATH", f"{tools}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("CUOPT_GPU_BACKEND", f"{__name__}:LoggedStandInBackend")
    monkeypatch.setenv("CUOPT_TEST_TIMED", str(tmp_path / "timed"))
    return tools


@requires_nvcc
def test_the_sanitizer_runs_while_nothing_is_timed(monkeypatch: pytest.MonkeyPatch, saxpy: Path,
                                                   tmp_path: Path) -> None:
    """compute-sanitizer runs during confirmation, never while a launch is timed, and the variant
    it passes is written."""
    tools = _with_sanitizer(monkeypatch, tmp_path, "slow")
    result = cuopt("optimize", saxpy, "--budget", "40s", "--max-evals", "6", "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["status"] == "written", data["message"]
    trace = load_trace(Path(data["trace"]))
    assert trace["confirmation"]["sanitizer"] == "compute-sanitizer"
    started: dict[str, float] = {}
    spans = []
    for line in (tools / "spans").read_text().splitlines():
        edge, tool, at = line.split()
        if edge == "start":
            started[tool] = float(at)
        else:
            spans.append((started.pop(tool), float(at)))
    assert len(spans) >= 2 and not started
    timed = [tuple(map(float, ln.split())) for ln in (tmp_path / "timed").read_text().splitlines()]
    assert timed
    overlapping = [(t, s) for t in timed for s in spans if t[0] < s[1] and s[0] < t[1]]
    assert not overlapping, overlapping


@requires_nvcc
def test_a_variant_the_sanitizer_faults_is_not_written(monkeypatch: pytest.MonkeyPatch, saxpy: Path,
                                                       tmp_path: Path) -> None:
    original = saxpy.read_bytes()
    _with_sanitizer(monkeypatch, tmp_path, "error")
    result = cuopt("optimize", saxpy, "--budget", "40s", "--max-evals", "6", "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["status"] == "not-faster" and not data["written"], data
    verdicts = [a["verdict"] for a in load_trace(Path(data["trace"]))["confirmation"]["attempts"]]
    assert verdicts and all(v == "rejected: memcheck reported Invalid __global__ read of size 16 bytes"
                            for v in verdicts), verdicts
    assert saxpy.read_bytes() == original


@requires_nvcc
def test_a_tool_that_cannot_conclude_runs_again_alone(monkeypatch: pytest.MonkeyPatch, saxpy: Path,
                                                      tmp_path: Path) -> None:
    tools = _with_sanitizer(monkeypatch, tmp_path, "clean", racecheck="flaky")
    result = cuopt("optimize", saxpy, "--budget", "40s", "--max-evals", "6", "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["status"] == "written", data["message"]
    assert load_trace(Path(data["trace"]))["confirmation"]["sanitizer"] == "compute-sanitizer"  # concluded
    assert sorted((tools / "log").read_text().split()) == ["memcheck", "racecheck", "racecheck"]
