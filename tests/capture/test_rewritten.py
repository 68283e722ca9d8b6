"""The manifest told that cuopt optimize rewrote a source: the new hash recorded, the captured one
kept, the rest of the manifest as it was; nothing changed for a file or a version it does not fit."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from cuopt.capture.manifest import CaptureError, check_source, load, sha256
from cuopt.capture.rewritten import record_rewrite
from tests.capture.synthetic import Program, train_step_launches


@pytest.fixture
def prog(tmp_path: Path) -> Program:
    return Program(tmp_path)


def test_the_new_hash_is_recorded_and_the_rest_kept(prog: Program) -> None:
    directory = prog.capture(train_step_launches())
    old = json.loads((directory / "manifest.json").read_text())
    before = prog.source.read_bytes()
    after = before + b"// rewritten\n"
    assert record_rewrite(directory, prog.source, before, after, "row_softmax") is None
    new = json.loads((directory / "manifest.json").read_text())
    [source] = new.pop("sources")
    assert new == {k: v for k, v in old.items() if k != "sources"}
    assert (source["path"], source["sha256"], source["captured_sha256"]) == (
        prog.source.name, sha256(after), sha256(before))
    [entry] = source["rewritten"]
    assert (entry["by"], entry["kernel"], entry["validated_on"], entry["sha256"]) == (
        "cuopt optimize", "row_softmax", "this capture", sha256(after))
    prog.source.write_bytes(after)
    capture = load(directory)
    check_source(capture, prog.source)
    prog.source.write_bytes(before)  # the captured version (a backup put back) fits too
    check_source(capture, prog.source)
    prog.source.write_bytes(after + b"// by hand\n")
    with pytest.raises(CaptureError, match="changed since capture 'train_step' was taken and since cuopt optimize"):
        check_source(capture, prog.source)


def test_a_file_the_capture_does_not_list_or_a_stale_version_changes_nothing(prog: Program, tmp_path: Path) -> None:
    directory = prog.capture(train_step_launches())
    manifest = (directory / "manifest.json").read_bytes()
    other = tmp_path / "other.cu"
    other.write_text("__global__ void k() {}\n")
    assert record_rewrite(directory, other, other.read_bytes(), b"x", "k") is None
    assert record_rewrite(directory, prog.source, b"edited by hand", b"x", "row_softmax") is None
    assert (directory / "manifest.json").read_bytes() == manifest
