"""The files one `cuopt optimize` command writes: each kernel is searched from its file as the kernels
before it left it, each file is backed up once, and every write is read back and checked."""
from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from pathlib import Path

from cuopt.capture.rewritten import record_rewrite
from cuopt.errors import CuoptError
from cuopt.source.kernels import load
from cuopt.spec.model import Launch, load as load_spec, spec_path_for
from cuopt.targets import Target, targets_of
from cuopt.writeback import write_atomic


class WriteCheckError(CuoptError):
    """A file read back after writing does not hold what was accepted; the previous contents are back."""


@dataclass(frozen=True)
class Accepted:
    """A kernel's accepted definition (its text) and launch, as they must read back."""

    table: str  # the spec table (its label)
    kernel: str  # the kernel's entry in the file: `saxpy`, `scale<float, 256>`
    text: str
    launch: Launch


@dataclass
class Files:
    """What this command has written so far, per destination file."""

    stamp: str = field(default_factory=lambda: time.strftime("%Y%m%d-%H%M%S"))
    accepted: dict[Path, list[Accepted]] = field(default_factory=dict)
    backed_up: set[Path] = field(default_factory=set)

    def current(self, target: Target) -> Target:
        """`target` read again from disk when this command already wrote its file, so that its search
        starts from what the earlier kernels left there."""
        if target.path not in self.accepted:
            return target
        found = targets_of(target.path, load_spec(spec_path_for(target.path)), target.spec.name,
                           settings=target.settings)
        [fresh] = [t for t in found if t.spec.name == target.spec.name]
        return fresh

    def write(self, target: Target, dest: Path, source: bytes, spec_text: str, launch: Launch) -> list[str]:
        """Write the file and its spec atomically (the originals backed up once, on the first write in
        place), then read both back: every kernel this command accepted into `dest` must be there with
        its accepted text and launch; a variant validated on its spec's capture, written in place, is
        recorded in the capture's manifest. Otherwise the previous contents are restored and it is an error."""
        dest_spec = spec_path_for(dest)
        if dest == target.path and dest not in self.backed_up:
            self._backup(target.path)
            self._backup(spec_path_for(target.path))
            self.backed_up.add(dest)
        before = [(p, p.read_bytes() if p.is_file() else None) for p in (dest, dest_spec)]
        k = load(source, target.source.macros).kernel(target.kernel.entry)
        assert k is not None, "a variant always keeps its kernel"
        text = k.node.text.decode()
        # instantiations of one template share its definition: the latest accepted text is every one's
        accepted = [replace(a, text=text) if a.kernel.split("<")[0] == k.name else a
                    for a in self.accepted.get(dest, []) if a.table != target.spec.name]
        accepted.append(Accepted(target.spec.name, target.kernel.entry, text, launch))
        write_atomic(dest, source)
        write_atomic(dest_spec, spec_text.encode())
        problems = read_back(dest, accepted)
        if not problems and dest == target.path and target.bound.captured is not None:
            # validated on the spec's capture: its manifest takes the file as written
            problem = record_rewrite(Path(target.bound.capture_dir), dest, before[0][1] or b"", source,
                                     target.kernel.entry)
            problems += [problem] if problem else []
        if problems:
            for path, data in before:
                if data is not None:
                    write_atomic(path, data)
                else:
                    path.unlink(missing_ok=True)
            raise WriteCheckError(f"{dest}: read back after writing, {'; '.join(problems)}; "
                                  f"the previous contents were restored")
        self.accepted[dest] = accepted
        return [str(dest), str(dest_spec)]

    def _backup(self, path: Path) -> None:
        backups = path.parent / ".cuopt" / "backups"
        backups.mkdir(parents=True, exist_ok=True)
        (backups / f"{path.name}.{self.stamp}").write_bytes(path.read_bytes())


def read_back(dest: Path, accepted: list[Accepted]) -> list[str]:
    """What differs between `dest` and its spec on disk and the accepted kernels (empty: all there)."""
    source = load(dest.read_bytes())
    spec = load_spec(spec_path_for(dest))
    problems = []
    for a in accepted:
        k = source.kernel(a.kernel.split("<")[0])  # an instantiation's text is its template's definition
        if k is None or k.node.text.decode() != a.text:
            problems.append(f"kernel {a.kernel} is not the accepted variant")
        s = spec.kernels.get(a.table)
        if s is None or s.launch != a.launch:
            problems.append(f"the spec's launch of {a.table} is not the accepted {a.launch.describe()}")
    return problems
