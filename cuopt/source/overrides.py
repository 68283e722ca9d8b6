"""Compile-time sizes set the way the program itself sets them: every object-like `#define NAME ...`
of the user's files (the .cu and the headers it reaches beside itself or through the include dirs)
edited to the new value, in whichever branch it stands, so that nothing reaches the CUDA or system
headers. Edited headers are private copies; the files on the way to them include the copies instead.
Edits keep every line where it was, so the compiler's messages point to the user's lines."""
from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Mapping

COPIES = "cuopt-sizes"  # private copies of edited headers, beside the compiled source
_INCLUDE = re.compile(r'^([ \t]*#[ \t]*include[ \t]*)([<"])([^>"\n]+)[>"]', re.M)
_CONTINUED = re.compile(r"\\[ \t]*\r?$")

Files = tuple[tuple[str, str], ...]  # (path relative to the compiled source's directory, text)


@dataclass(frozen=True)
class Edited:
    """The source to compile, the private copies it includes, and the sizes nothing defines."""

    source: str
    files: Files = ()
    missing: tuple[str, ...] = ()  # names with no object-like `#define` in any of the user's files


def resolve_include(name: str, quoted: bool, directory: Path, include_dirs: Iterable[Path]) -> Path | None:
    """Where the compiler finds `#include "name"` (the including file's directory, then the include
    dirs in order) or `#include <name>` (the include dirs); None for a header found elsewhere (a
    system header)."""
    for d in ((directory,) if quoted else ()) + tuple(include_dirs):
        candidate = d / name.strip()
        if candidate.is_file():
            return candidate.resolve()
    return None


def set_defines(text: str, values: Mapping[str, int | str]) -> str:
    """`text` with every object-like `#define NAME ...` of `values`' names replaced by
    `#define NAME value`, its comment kept; a definition continued over several lines keeps them
    (the continuations become empty), so every line stays where it was."""
    if not values or not _defines(text, values):
        return text
    lines = text.split("\n")
    pattern = _pattern(values)
    i = 0
    while i < len(lines):
        m = pattern.match(lines[i])
        if m is None:
            i += 1
            continue
        last = i
        while _CONTINUED.search(lines[last]) and last + 1 < len(lines):
            last += 1
        body = " ".join(_CONTINUED.sub("", ln) for ln in lines[i:last + 1])[m.end():]
        comment = re.search(r"/[/*].*", body)
        lines[i] = f"{m.group(0)} {values[m.group('name')]}{' ' + comment.group(0) if comment else ''}"
        for j in range(i + 1, last + 1):
            lines[j] = ""
        i = last + 1
    return "\n".join(lines)


def with_sizes(source: str, path: Path, include_dirs: tuple[Path, ...], values: Mapping[str, int | str]) -> Edited:
    """`source` (the contents of the file `path`) set to `values`: its own definitions edited, and
    its includes of the headers that define one of the names (or include one that does) turned to
    private copies, themselves edited and including their other neighbours by absolute path."""
    if not values:
        return Edited(source)
    main = path.resolve()
    graph = _graph(main, source, include_dirs)
    copied = _to_copy(graph, values, main)
    names = {p: f"{COPIES}/{i}/{p.name}" for i, p in enumerate(sorted(copied))}

    def rewritten(p: Path, text: str) -> str:
        def one(m: re.Match[str]) -> str:
            found = _resolved(m, p, include_dirs)
            if found in names:
                target = names[found] if p == main else f"../{names[found].split('/', 1)[1]}"
            elif found is not None and p != main:
                target = str(found)
            else:
                return m.group(0)
            return f'{m.group(1)}"{target}"'

        return _INCLUDE.sub(one, set_defines(text, values))

    found = {name for text, _ in graph.values() for name in values if _defines(text, {name: 0})}
    return Edited(rewritten(main, source), tuple((names[p], rewritten(p, graph[p][0])) for p in sorted(copied)),
                  tuple(sorted(set(values) - found)))


def _graph(main: Path, source: str, include_dirs: tuple[Path, ...]) -> dict[Path, tuple[str, tuple[Path, ...]]]:
    """The user's files from `main`: each with its text and the files its includes find."""
    graph: dict[Path, tuple[str, tuple[Path, ...]]] = {}
    pending: list[tuple[Path, str | None]] = [(main, source)]
    while pending:
        p, text = pending.pop()
        if p in graph:
            continue
        text = text if text is not None else _read(p)
        if text is None:
            continue
        found = tuple(f for m in _INCLUDE.finditer(text) if (f := _resolved(m, p, include_dirs)) is not None)
        graph[p] = (text, found)
        pending.extend((f, None) for f in found if f not in graph)
    return graph


def _read(path: Path) -> str | None:
    """A header's text (read once for as long as it is unchanged on disk); None when unreadable."""
    try:
        st = path.stat()
    except OSError:
        return None
    return _read_at(path, st.st_mtime_ns, st.st_size)


@functools.lru_cache(maxsize=256)
def _read_at(path: Path, mtime_ns: int, size: int) -> str | None:
    try:
        return path.read_bytes().decode(errors="surrogateescape")
    except OSError:
        return None


def _to_copy(graph: dict[Path, tuple[str, tuple[Path, ...]]], values: Mapping[str, int | str],
             main: Path) -> set[Path]:
    """The headers to copy: those that define one of the names, and those that include a copy."""
    copied = {p for p, (text, _) in graph.items() if p != main and _defines(text, values)}
    grew = True
    while grew:
        more = {p for p, (_, found) in graph.items() if p != main and p not in copied and copied & set(found)}
        copied |= more
        grew = bool(more)
    return copied


def _resolved(m: re.Match[str], including: Path, include_dirs: tuple[Path, ...]) -> Path | None:
    return resolve_include(m.group(3), m.group(2) == '"', including.parent, include_dirs)


def _pattern(names: Iterable[str]) -> re.Pattern[str]:
    alternatives = "|".join(re.escape(n) for n in sorted(names))
    return re.compile(rf"^[ \t]*#[ \t]*define[ \t]+(?P<name>{alternatives})(?![A-Za-z0-9_(])", re.M)


def _defines(text: str, names: Iterable[str]) -> bool:
    """Whether `text` holds an object-like `#define` of one of `names`."""
    return "define" in text and _pattern(names).search(text) is not None
