"""Compile settings: include directories, macro definitions and extra nvcc flags, from three
sources merged in order: `[tool.cuopt]` of the nearest pyproject.toml, the spec's `[compile]`
table, the command line (`-I`, `-D`, `--nvcc-flag`)."""
from __future__ import annotations

import json
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

from cuopt.errors import CuoptError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

KEYS = ("include", "define", "flags")
# nvcc options that decide what cuopt builds and where it goes; cuopt passes them itself
RESERVED_FLAGS = ("-o", "--output-file", "-c", "--compile", "-E", "--preprocess", "-cubin", "--cubin", "-ptx",
                  "--ptx", "-arch", "--gpu-architecture", "-code", "--gpu-code", "-gencode", "--generate-code")
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z_0-9]*")

Define = tuple[str, "str | None"]  # NAME and VALUE; None for a bare -DNAME


class SettingsError(CuoptError):
    """A wrong include directory, definition or flag; the message names where it was given."""


@dataclass(frozen=True)
class CompileSettings:
    """What nvcc needs besides the source: include directories (absolute, in search order),
    macro definitions (one per name) and extra flags."""

    include_dirs: tuple[Path, ...] = ()
    defines: tuple[Define, ...] = ()
    flags: tuple[str, ...] = ()

    def merged(self, other: CompileSettings) -> CompileSettings:
        """`other` after this: its directories are searched after these, its flags come after these,
        and its definitions override these of the same name."""
        defines = dict(self.defines)
        for name, value in other.defines:
            defines.pop(name, None)
            defines[name] = value
        return CompileSettings(tuple(dict.fromkeys(self.include_dirs + other.include_dirs)),
                               tuple(defines.items()), self.flags + other.flags)

    def defining(self, values: dict[str, int | str]) -> CompileSettings:
        """These settings with `-DNAME=value` for each entry (overriding the same names)."""
        return self.merged(CompileSettings(defines=tuple((k, str(v)) for k, v in values.items())))

    def searching(self, directory: Path) -> CompileSettings:
        """These settings with `directory` searched first: the directory of a file that is compiled
        from a temporary copy, so that its `#include "..."` still finds its neighbours."""
        return CompileSettings((directory.resolve(),), ()).merged(self)

    def nvcc_args(self) -> list[str]:
        """`-I`, `-D` and the extra flags, as nvcc's command line takes them."""
        return ([f"-I{d}" for d in self.include_dirs]
                + [f"-D{name}" if value is None else f"-D{name}={value}" for name, value in self.defines]
                + list(self.flags))

    def relative_to(self, directory: Path) -> dict[str, list[str]]:
        """A `[compile]` table for a spec in `directory`: include paths relative to it."""
        table: dict[str, list[str]] = {}
        if self.include_dirs:
            table["include"] = [_relative(d, directory.resolve()) for d in self.include_dirs]
        if self.defines:
            table["define"] = [name if value is None else f"{name}={value}" for name, value in self.defines]
        if self.flags:
            table["flags"] = list(self.flags)
        return table

    def in_spec(self, text: str, spec_dir: Path) -> str:
        """The spec text with a `[compile]` table for these settings (include paths relative to the
        spec's directory) before the first kernel table; the text as it is without settings."""
        table = self.relative_to(spec_dir)
        if not table:
            return text
        lines = ["[compile]", *(f"{key} = {json.dumps(values)}" for key, values in table.items()), ""]
        head, sep, rest = text.partition("\n\n")
        return f"{head}{sep}" + "\n".join(lines) + "\n" + rest


NO_SETTINGS = CompileSettings()


def parse_define(text: str, where: str) -> Define:
    """`NAME` or `NAME=VALUE` (as in `-DNAME=VALUE`); NAME must be a C identifier."""
    name, eq, value = text.partition("=")
    if not _IDENTIFIER.fullmatch(name):
        raise SettingsError(f"{where}: {text!r} is not NAME or NAME=VALUE with NAME a C identifier")
    return (name, value if eq else None)


def check_flags(flags: Iterable[str], where: str) -> tuple[str, ...]:
    """The flags, unless one is an nvcc option cuopt passes itself."""
    out = tuple(flags)
    for flag in out:
        if flag.split("=", 1)[0] in RESERVED_FLAGS:
            raise SettingsError(f"{where}: {flag!r} clashes with the options cuopt passes to nvcc itself "
                                f"({', '.join(RESERVED_FLAGS)})")
    return out


def include_dirs(paths: Iterable[str | Path], base: Path, where: str) -> tuple[Path, ...]:
    """Directories relative to `base`, made absolute; each must exist."""
    out = []
    for p in paths:
        d = (base / Path(p).expanduser()).resolve()
        if not d.is_dir():
            raise SettingsError(f"{where}: include directory {str(p)!r} not found ({d} is not a directory)")
        out.append(d)
    return tuple(dict.fromkeys(out))


def from_table(table: Any, base: Path, where: str) -> CompileSettings:
    """Settings from a `[compile]` or `[tool.cuopt]` table; paths are relative to `base`.
    `where` names the file and table for messages (`kernel.cuopt.toml: [compile]`)."""
    if not isinstance(table, dict):
        raise SettingsError(f"{where}: expected a table with {', '.join(KEYS)}")
    for key in table:
        if key not in KEYS:
            raise SettingsError(f"{where} {key}: unknown key; expected one of: {', '.join(KEYS)}")
    lists = {}
    for key in KEYS:
        value = table.get(key, [])
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            example = {"include": '["../utilities"]', "define": '["N=1024", "USE_FAST"]',
                       "flags": '["-lineinfo"]'}[key]
            raise SettingsError(f"{where} {key}: expected a list of strings, e.g. {key} = {example}")
        lists[key] = value
    return CompileSettings(include_dirs(lists["include"], base, f"{where} include"),
                           _unique(parse_define(d, f"{where} define") for d in lists["define"]),
                           check_flags(lists["flags"], f"{where} flags"))


def from_command_line(includes: Iterable[Path], defines: Iterable[str], flags: Iterable[str]) -> CompileSettings:
    """Settings from `-I`, `-D` and `--nvcc-flag`; paths are relative to the current directory."""
    dirs = tuple(d for p in includes for d in include_dirs([p], Path.cwd(), f"-I {p}"))
    return CompileSettings(tuple(dict.fromkeys(dirs)), _unique(parse_define(d, f"-D {d}") for d in defines),
                           check_flags(flags, "--nvcc-flag"))


def project_file(start: Path) -> Path | None:
    """The nearest pyproject.toml with a `[tool.cuopt]` table, from `start` up to the root."""
    for directory in (start.resolve(), *start.resolve().parents):
        candidate = directory / "pyproject.toml"
        if candidate.is_file() and "cuopt" in _read_toml(candidate).get("tool", {}):
            return candidate
    return None


def project_settings(start: Path) -> CompileSettings:
    """`[tool.cuopt]` of the nearest pyproject.toml that has one (no settings when none does)."""
    found = project_file(start)
    if found is None:
        return NO_SETTINGS
    return from_table(_read_toml(found)["tool"]["cuopt"], found.parent, f"{found}: [tool.cuopt]")


def resolve(cu_path: Path, spec: CompileSettings, command_line: CompileSettings) -> CompileSettings:
    """The settings for one file: the project's, then its spec's, then the command line's."""
    return project_settings(cu_path.parent).merged(spec).merged(command_line)


def _unique(defines: Iterable[Define]) -> tuple[Define, ...]:
    """One definition per name, the last one winning."""
    return CompileSettings().merged(CompileSettings(defines=tuple(defines))).defines


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(path.read_text())
    except OSError as exc:
        raise SettingsError(f"{path}: cannot read: {exc.strerror}") from None
    except tomllib.TOMLDecodeError as exc:
        raise SettingsError(f"{path}: not valid TOML: {exc}") from None


def _relative(path: Path, directory: Path) -> str:
    return Path(os.path.relpath(path, directory)).as_posix()
