"""Compile settings: parsing, merging, the three sources and their precedence, errors."""
from __future__ import annotations

from pathlib import Path

import pytest

from cuopt.compile_settings import (NO_SETTINGS, CompileSettings, SettingsError, from_command_line, from_table,
                                    parse_define, project_file, project_settings, resolve)


def test_definitions_parse_as_nvcc_spells_them() -> None:
    assert parse_define("NI", "-D") == ("NI", None)
    assert parse_define("NI=1024", "-D") == ("NI", "1024")
    assert parse_define("EMPTY=", "-D") == ("EMPTY", "")
    assert parse_define("T=unsigned int", "-D") == ("T", "unsigned int")
    assert parse_define("_X1=a=b", "-D") == ("_X1", "a=b")


@pytest.mark.parametrize("text", ["1X", "", "=3", "F(x)=x", "A-B", "N I=1"])
def test_definition_names_must_be_c_identifiers(text: str) -> None:
    with pytest.raises(SettingsError, match=r"^-D: .* is not NAME or NAME=VALUE with NAME a C identifier$"):
        parse_define(text, "-D")


def test_merged_searches_other_after_and_lets_its_definitions_win() -> None:
    a = CompileSettings((Path("/a"), Path("/b")), (("N", "1"), ("FAST", None)), ("-lineinfo",))
    b = CompileSettings((Path("/c"), Path("/a")), (("N", "2"), ("M", "3")), ("-G",))
    m = a.merged(b)
    assert m.include_dirs == (Path("/a"), Path("/b"), Path("/c"))
    assert dict(m.defines) == {"N": "2", "FAST": None, "M": "3"} and len(m.defines) == 3
    assert m.flags == ("-lineinfo", "-G")
    assert m.nvcc_args() == ["-I/a", "-I/b", "-I/c", "-DFAST", "-DN=2", "-DM=3", "-lineinfo", "-G"]
    assert NO_SETTINGS.merged(a) == a and a.merged(NO_SETTINGS) == a


def test_settings_are_hashable_values() -> None:
    assert hash(CompileSettings((Path("/a"),), (("N", "1"),))) == hash(CompileSettings((Path("/a"),), (("N", "1"),)))


def test_defining_and_searching(tmp_path: Path) -> None:
    s = CompileSettings((Path("/x"),), (("NI", "7"), ("FAST", None)))
    assert dict(s.defining({"NI": 2048}).defines) == {"NI": "2048", "FAST": None}
    assert s.searching(tmp_path).include_dirs == (tmp_path.resolve(), Path("/x"))
    assert s.searching(Path("/x")).include_dirs == (Path("/x"),)


def test_a_table_reads_paths_relative_to_its_file(tmp_path: Path) -> None:
    (tmp_path / "utilities").mkdir()
    (tmp_path / "src").mkdir()
    s = from_table({"include": ["../utilities", "."], "define": ["NI=1024", "USE_FAST", "NI=2048"],
                    "flags": ["-lineinfo"]}, tmp_path / "src", "k.cuopt.toml: [compile]")
    assert s.include_dirs == ((tmp_path / "utilities").resolve(), (tmp_path / "src").resolve())
    assert s.defines == (("USE_FAST", None), ("NI", "2048"))
    assert s.flags == ("-lineinfo",)
    assert from_table({}, tmp_path, "x") == NO_SETTINGS


@pytest.mark.parametrize("table, message", [
    ({"includes": ["."]}, "k.cuopt.toml: [compile] includes: unknown key; expected one of: include, define, flags"),
    ({"include": "."}, 'k.cuopt.toml: [compile] include: expected a list of strings, e.g. include = ["../utilities"]'),
    ({"define": [1]}, 'k.cuopt.toml: [compile] define: expected a list of strings, e.g. define = ["N=1024", "USE_FAST"]'),
    ({"flags": "-G"}, 'k.cuopt.toml: [compile] flags: expected a list of strings, e.g. flags = ["-lineinfo"]'),
    ({"define": ["2N=1"]}, "k.cuopt.toml: [compile] define: '2N=1' is not NAME or NAME=VALUE"),
    ({"include": ["nowhere"]}, "k.cuopt.toml: [compile] include: include directory 'nowhere' not found"),
    ({"flags": ["-arch=sm_80"]}, "k.cuopt.toml: [compile] flags: '-arch=sm_80' clashes with the options cuopt"),
    ("text", "k.cuopt.toml: [compile]: expected a table with include, define, flags"),
])
def test_table_errors_name_the_file_and_key(tmp_path: Path, table: object, message: str) -> None:
    with pytest.raises(SettingsError) as exc:
        from_table(table, tmp_path, "k.cuopt.toml: [compile]")
    assert str(exc.value).startswith(message) and "\n" not in str(exc.value)


@pytest.mark.parametrize("flag", ["-o", "-c", "-E", "-cubin", "-ptx", "-arch", "-arch=sm_80", "--gpu-architecture=sm_80",
                                  "-code=sm_80", "-gencode", "--output-file=x"])
def test_flags_that_clash_with_cuopts_own_are_refused(flag: str) -> None:
    with pytest.raises(SettingsError, match=f"^--nvcc-flag: '{flag}' clashes"):
        from_command_line([], [], [flag])


def test_flags_that_do_not_clash_pass() -> None:
    assert from_command_line([], [], ["-lineinfo", "-Xptxas", "-O1", "--use_fast_math"]).flags == (
        "-lineinfo", "-Xptxas", "-O1", "--use_fast_math")


def test_command_line_paths_are_relative_to_the_current_directory(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "inc").mkdir()
    monkeypatch.chdir(tmp_path)
    s = from_command_line([Path("inc")], ["N=3", "N=4"], [])
    assert s.include_dirs == ((tmp_path / "inc").resolve(),) and s.defines == (("N", "4"),)
    with pytest.raises(SettingsError, match=r"^-I missing: include directory 'missing' not found"):
        from_command_line([Path("missing")], [], [])
    with pytest.raises(SettingsError, match=r"^-D 9: '9' is not NAME"):
        from_command_line([], ["9"], [])


def project(tmp_path: Path) -> Path:
    """tmp/pyproject.toml with [tool.cuopt], tmp/sub/pyproject.toml without, tmp/sub/deep/k.cu."""
    (tmp_path / "utilities").mkdir()
    (tmp_path / "pyproject.toml").write_text('[tool.cuopt]\ninclude = ["utilities"]\ndefine = ["NI=1", "P"]\n')
    (tmp_path / "sub" / "deep").mkdir(parents=True)
    (tmp_path / "sub" / "pyproject.toml").write_text('[project]\nname = "other"\n\n[tool.ruff]\nline-length = 1\n')
    cu = tmp_path / "sub" / "deep" / "k.cu"
    cu.write_text("")
    return cu


def test_the_nearest_pyproject_with_a_cuopt_table_is_found_walking_up(tmp_path: Path) -> None:
    cu = project(tmp_path)
    assert project_file(cu.parent) == (tmp_path / "pyproject.toml").resolve()
    s = project_settings(cu.parent)
    assert s.include_dirs == ((tmp_path / "utilities").resolve(),)  # relative to the pyproject's directory
    (cu.parent / "pyproject.toml").write_text("[tool.cuopt]\n")
    assert project_file(cu.parent) == (cu.parent / "pyproject.toml").resolve()
    assert project_settings(cu.parent) == NO_SETTINGS


def test_a_pyproject_without_a_cuopt_table_gives_no_settings(tmp_path: Path) -> None:
    assert project_file(tmp_path) is None  # nothing above pytest's temporary directories
    (tmp_path / "pyproject.toml").write_text("[tool.black]\n")
    assert project_file(tmp_path) is None and project_settings(tmp_path) == NO_SETTINGS


def test_pyproject_errors_name_the_file_and_key(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.cuopt]\ninclude = ["gone"]\n')
    with pytest.raises(SettingsError, match=rf"^{tmp_path.resolve()}/pyproject.toml: \[tool.cuopt\] include: "
                                            r"include directory 'gone' not found"):
        project_settings(tmp_path)
    (tmp_path / "pyproject.toml").write_text("[tool.cuopt]\nflag = 1\n")
    with pytest.raises(SettingsError, match=r"pyproject.toml: \[tool.cuopt\] flag: unknown key"):
        project_settings(tmp_path)
    (tmp_path / "pyproject.toml").write_text("[tool.cuopt\n")
    with pytest.raises(SettingsError, match=r"pyproject.toml: not valid TOML"):
        project_settings(tmp_path)


def test_precedence_project_then_spec_then_command_line(tmp_path: Path) -> None:
    cu = project(tmp_path)
    spec = CompileSettings((cu.parent.resolve(),), (("NI", "2"), ("S", None)), ("-lineinfo",))
    cli = CompileSettings((Path("/cli"),), (("NI", "3"),), ("-G",))
    s = resolve(cu, spec, cli)
    assert s.include_dirs == ((tmp_path / "utilities").resolve(), cu.parent.resolve(), Path("/cli"))
    assert dict(s.defines) == {"NI": "3", "P": None, "S": None}
    assert s.flags == ("-lineinfo", "-G")
    assert dict(resolve(cu, spec, NO_SETTINGS).defines)["NI"] == "2"
    assert dict(resolve(cu, NO_SETTINGS, NO_SETTINGS).defines)["NI"] == "1"


def test_a_compile_table_for_a_spec_in_another_directory(tmp_path: Path) -> None:
    s = CompileSettings((tmp_path / "utilities", tmp_path / "src"), (("N", "1"), ("F", None)), ("-G",))
    assert s.relative_to(tmp_path / "src") == {"include": ["../utilities", "."], "define": ["N=1", "F"],
                                               "flags": ["-G"]}
    assert NO_SETTINGS.relative_to(tmp_path) == {}
