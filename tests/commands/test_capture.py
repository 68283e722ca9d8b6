"""cuopt capture's bad input: one line each, nothing written."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cuopt.cli import app
from tests.conftest import SAMPLES, gpu_available

TRAINSTEP = SAMPLES / "programs" / "trainstep" / "trainstep.cu"


@pytest.fixture
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    shutil.copy(TRAINSTEP, tmp_path)
    prog = tmp_path / "prog"
    prog.write_text("#!/bin/sh\necho ran\n")
    prog.chmod(0o755)
    (tmp_path / "data.txt").write_text("not a program\n")
    (tmp_path / "sub").mkdir()
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _error(args: list[str]) -> tuple[int, str]:
    result = CliRunner().invoke(app, ["capture", *args])
    lines = result.output.strip().splitlines()
    assert len(lines) == 1, result.output
    return result.exit_code, lines[0]


@pytest.mark.parametrize("args, message", [
    (["missing.cu", "--", "./prog"], "missing.cu: no such file"),
    (["trainstep.cu", "--kernel", "nope", "--", "./prog"],
     "--kernel nope: no __global__ kernel of that name in trainstep.cu (found: adamw_kernel, "),
    (["trainstep.cu", "--", "./absent"], "./absent: no such file"),
    (["trainstep.cu", "--", "no-such-command-anywhere"], "no-such-command-anywhere: command not found"),
    (["trainstep.cu", "--", "./data.txt"], "./data.txt: not an executable file"),
    (["trainstep.cu", "--", "./sub"], "./sub: not an executable file"),
    (["trainstep.cu"], "no command to run: give it after --, e.g. cuopt capture prog.cu -- ./prog"),
    (["--", "./prog"], "no .cu file given: cuopt capture FILE.cu... -- COMMAND [ARGS]..."),
    (["trainstep.cu", "--max-bytes", "lots", "--", "./prog"],
     "--max-bytes 'lots': expected a size such as 4096, 512M or 2GiB"),
    (["trainstep.cu", "--launches", "0", "--", "./prog"], "--launches 0: expected at least 1"),
    (["trainstep.cu", "--name", "../x", "--", "./prog"], "--name '../x': expected a plain directory name"),
])
def test_bad_input_is_one_line_and_writes_nothing(work: Path, args: list[str], message: str) -> None:
    code, line = _error(args)
    assert code == 1 and line.startswith(f"cuopt: error: {message}")
    assert not (work / ".cuopt").exists()


@pytest.mark.skipif(gpu_available(), reason="this machine has a GPU")
def test_without_a_gpu_capture_says_so(work: Path) -> None:
    try:
        import ctypes

        ctypes.CDLL("libcuda.so.1")
        pytest.skip("a CUDA driver is installed")
    except OSError:
        pass
    code, line = _error(["trainstep.cu", "--", "./prog"])
    assert (code, line) == (2, "cuopt: error: no CUDA driver (libcuda.so.1) on this machine: cuopt capture runs "
                               "the program on a GPU")
    assert not (work / ".cuopt").exists()


# -- the specs written after the capture (the program's run stubbed by a synthesized capture) ---------
def _stub_take(monkeypatch: pytest.MonkeyPatch, exit_status: int = 0, drop: str = "") -> list[tuple]:
    """`take` replaced by a capture of samples/programs/trainstep at its configuration (an argument
    `drop`ped from the attention launch to give a layout the source does not have); the calls made."""
    from cuopt.capture import manifest, take
    from tests.capture.synthetic import Program, trainstep_launches

    calls: list[tuple] = []

    def fake(sources, command, kernels, launches, max_bytes, name, settings) -> take.Result:
        calls.append((sources, command, settings))
        found = trainstep_launches()
        for la in found:
            la.args = [a for a in la.args if not (la.kernel == "attention_query_key_kernel" and a.name == drop)]
        directory = Program(Path.cwd(), original=Path(sources[0]).resolve()).capture(found, name=name or "")
        return take.Result(manifest.load(directory), exit_status)

    monkeypatch.setattr(take, "take", fake)
    return calls


def _capture(args: list[str]):
    result = CliRunner().invoke(app, ["capture", *args])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    return result


def test_capture_writes_the_spec_with_no_todos(work: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _stub_take(monkeypatch)
    result = _capture(["trainstep.cu", "-D", "TRAIN=1", "--", "./prog", "data.txt"])
    assert result.exit_code == 0, result.output
    assert [c[1] for c in calls] == [["./prog", "data.txt"]]
    assert result.stdout == "", "the program's stdout is its own: cuopt says everything on stderr"
    assert "wrote trainstep.cuopt.toml (7 kernels from capture 'trainstep', 0 TODOs to check)" in result.stderr
    text = (work / "trainstep.cuopt.toml").read_text()
    assert "TODO:" not in text and text.count('capture = "trainstep"') == 7
    assert '[compile]\ndefine = ["TRAIN=1"]' in text, "the command line's settings go into the spec"


def test_an_existing_spec_is_kept_and_the_line_says_how_to_update_it(work: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    _stub_take(monkeypatch)
    spec = work / "trainstep.cuopt.toml"
    spec.write_text("# mine\n")
    result = _capture(["trainstep.cu", "--", "./prog"])
    assert result.exit_code == 0, result.output
    assert spec.read_text() == "# mine\n"
    assert ("trainstep.cuopt.toml: exists, kept; to write it from this capture: cuopt init trainstep.cu "
            "--from-capture trainstep --force") in result.stderr
    assert "wrote" not in result.output
    assert (work / ".cuopt" / "captures" / "trainstep" / "manifest.json").is_file(), "the capture is kept"
    followed = CliRunner().invoke(app, ["init", "trainstep.cu", "--from-capture", "trainstep", "--force"])
    assert followed.exit_code == 0 and "(7 kernels from capture 'trainstep', 0 TODOs to check)" in followed.output
    assert "TODO:" not in spec.read_text()


def test_force_overwrites_the_spec_and_no_spec_writes_none(work: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _stub_take(monkeypatch)
    spec = work / "trainstep.cuopt.toml"
    result = _capture(["trainstep.cu", "--no-spec", "--", "./prog"])
    assert result.exit_code == 0 and not spec.exists() and "wrote" not in result.output
    spec.write_text("# mine\n")
    result = _capture(["trainstep.cu", "--force", "--name", "run2", "--", "./prog"])
    assert result.exit_code == 0, result.output
    assert "wrote trainstep.cuopt.toml (7 kernels from capture 'run2', 0 TODOs to check)" in result.stderr
    assert spec.read_text().count('capture = "run2"') == 7


def test_a_program_that_failed_still_gets_its_spec_and_its_exit_status(work: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    _stub_take(monkeypatch, exit_status=3)
    result = _capture(["trainstep.cu", "--", "./prog"])
    assert result.exit_code == 3
    assert "wrote trainstep.cuopt.toml" in result.stderr
    assert result.stderr.strip().endswith("cuopt capture: the program exited with status 3")


def test_a_spec_that_cannot_be_written_is_one_line_and_the_capture_is_kept(work: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    _stub_take(monkeypatch, drop="scale")
    result = _capture(["trainstep.cu", "--", "./prog"])
    assert result.exit_code == 1
    assert result.stderr.strip().splitlines()[-1].startswith(
        "cuopt: error: ") and "attention_query_key_kernel: the capture has 5 arguments" in result.stderr
    assert not (work / "trainstep.cuopt.toml").exists()
    assert (work / ".cuopt" / "captures" / "trainstep" / "manifest.json").is_file()


def test_the_spec_follows_the_records_of_the_run(work: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Only the program's run stubbed: its raw records decoded, stored, and the spec written from them."""
    import numpy as np

    from cuopt.capture import native, run
    from tests.capture.test_records import ATTENTION, Raw

    def program(command: list[str], library: Path, settings: dict[str, str]) -> int:
        raw = Raw(Path(settings["CUOPT_CAPTURE_DIR"]))
        qkv, preatt = np.ones(4 * 8 * 3 * 16, np.float32), np.zeros(4 * 2 * 8 * 8, np.float32)
        raw.launch(ATTENTION, [("ptr", (0, 0)), ("ptr", (1, 0)), ("i32", 8), ("i32", 16), ("i32", 2),
                               ("f32", 0.25)], grid=(1, 8, 1), block=(256, 1, 1),
                   allocations={0: (preatt, preatt + 1), 1: (qkv, qkv)})
        raw.counts({ATTENTION: 1})
        return 0

    monkeypatch.setattr(run, "require_driver", lambda: None)
    monkeypatch.setattr(native, "library", lambda: work / "libinject.so")
    monkeypatch.setattr(run, "run", program)
    result = _capture(["trainstep.cu", "-k", "attention_query_key_kernel", "--", "./prog"])
    assert result.exit_code == 0, result.output
    assert "trainstep.cu: [encoder_forward_kernel] encoder_forward_kernel was not launched during capture " \
           "'trainstep': described from the source alone" in result.stderr
    assert "wrote trainstep.cuopt.toml (7 kernels from capture 'trainstep'," in result.stderr
    text = (work / "trainstep.cuopt.toml").read_text()
    table = text.split("[attention_query_key_kernel]\n")[1].split("\n[softmax_forward_kernel]")[0]
    assert 'capture = "trainstep"' in table and "scale = 0.25" in table and "TODO:" not in table
    assert "TODO:" in text, "the kernels not captured are described from the source alone"
