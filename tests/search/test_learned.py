"""The learned policy at search time: priors over the offers of every sample, the uniform blend, the
errors for model files it cannot use, `cuopt optimize` falling back to the heuristic policy with one
warning, `--policy learned` and the default, and the search never importing torch or the training
package."""
from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pytest

from cuopt.errors import ModelError
from cuopt.evaluate.evaluator import Variant
from cuopt.optimization.trace import load_trace
from cuopt.rewrite.context import Context
from cuopt.rewrite.engine import Engine
from cuopt.search import features, policies, weights
from cuopt.search.learned import LearnedPolicy, load_learned
from cuopt.targets import collect
from tests.conftest import ROOT, requires_nvcc, sample_files
from tests.helpers import cuopt
from tests.optimization.test_optimize_standin import BACKEND, N
from tests.training import synthetic

Edit = Callable[[dict[str, Any], dict[str, np.ndarray]], Any]  # (metadata file's JSON, tensors)


@pytest.fixture(scope="module")
def model_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return synthetic.model(tmp_path_factory.mktemp("learned"))


@pytest.fixture(scope="module")
def targets() -> list[Any]:
    return collect(sample_files())


def variant_and_offers(target: Any, engine: Engine) -> tuple[Variant, list[Any]]:
    ctx = Context(target.source.source, target.spec.launch, target.kernel.name, target.spec)
    return Variant(target.text, target.spec.launch), engine.offers(ctx)


def bound(policy: LearnedPolicy, target: Any) -> LearnedPolicy:
    return policy.bind(target.spec, target.kernel.name, frozenset(), {"name": "NVIDIA H200", "arch": "sm_90"})


def rewritten(path: Path, dest: Path, edit: Edit) -> Path:
    """A copy of the model files (weights and metadata) with `edit` applied."""
    meta, tensors = json.loads(path.with_suffix(".json").read_text()), weights.read(path)
    edit(meta, tensors)
    weights.write(dest, tensors)
    dest.with_suffix(".json").write_text(json.dumps(meta))
    return dest


def test_the_learned_policy_ranks_the_offers_of_every_sample(model_file: Path, targets: list[Any]) -> None:
    policy, engine = load_learned(model_file), Engine.default()
    assert {t.kernel.name for t in targets} >= {"saxpy", "softmax", "matmul"}
    for t in targets:
        state, offers = variant_and_offers(t, engine)
        priors = bound(policy, t).priors(state, offers)
        assert len(priors) == len(offers) > 0, t.kernel.name
        assert sum(priors) == pytest.approx(1.0, abs=1e-5)
        assert all(p > 0 for p in priors)
        assert bound(policy, t).value(state) >= 0.0
        assert bound(policy, t).priors(state, []) == []


def test_the_shipped_model_loads_on_a_cpu_and_ranks_the_offers_of_every_sample(targets: list[Any]) -> None:
    path = policies.learned_path()
    assert path == ROOT / "models" / "policy.safetensors"
    assert json.loads(path.with_suffix(".json").read_text())["format"] == "cuopt-policy"
    policy, engine = load_learned(path), Engine.default()
    assert policy.metadata["schema"]["version"] == features.SCHEMA_VERSION
    assert policy.metadata["dataset"]["train_rows"] > 0
    for t in targets:
        state, offers = variant_and_offers(t, engine)
        priors = bound(policy, t).priors(state, offers)
        assert len(priors) == len(offers) > 0, t.kernel.name
        assert sum(priors) == pytest.approx(1.0, abs=1e-5)
        assert max(priors) > 1.5 / len(priors), t.kernel.name  # it ranks: not a uniform spread
        assert bound(policy, t).value(state) >= 0.0


def test_a_uniform_blend_in_the_model_file_flattens_the_priors(model_file: Path, tmp_path: Path,
                                                               targets: list[Any]) -> None:
    blended = rewritten(model_file, tmp_path / "blended.safetensors",
                        lambda meta, _: meta.update(search={"uniform_blend": 0.25}))
    plain, engine = load_learned(model_file), Engine.default()
    assert plain.uniform_blend == 0.0 and load_learned(blended).uniform_blend == 0.25
    for t in targets[:3]:
        state, offers = variant_and_offers(t, engine)
        p = bound(plain, t).priors(state, offers)
        q = bound(load_learned(blended), t).priors(state, offers)
        assert q == pytest.approx([0.75 * x + 0.25 / len(p) for x in p])
        assert min(q) >= 0.25 / len(q) and sum(q) == pytest.approx(1.0, abs=1e-5)
    assert load_learned(blended).describe()["uniform_blend"] == 0.25
    assert load_learned(blended).describe()["sha256"] != plain.describe()["sha256"]  # same weights, other metadata


def test_priors_need_bind(model_file: Path, targets: list[Any]) -> None:
    state, offers = variant_and_offers(targets[0], Engine.default())
    with pytest.raises(Exception, match="needs bind"):
        load_learned(model_file).priors(state, offers)


SCHEMA = features.SCHEMA_VERSION


@pytest.mark.parametrize("edit, file, message", [
    (lambda m, _: m["schema"].update(version=SCHEMA + 1), "weights",
     f"trained for feature schema {SCHEMA + 1}; this cuopt computes schema {SCHEMA}"),
    (lambda m, _: m["schema"]["state"].reverse(), "weights",
     f"trained on other state features than this cuopt computes (schema {SCHEMA}); retrain with `cuopt-train fit`"),
    (lambda m, _: m["schema"]["action"].pop(), "weights",
     f"trained on other action features than this cuopt computes (schema {SCHEMA}); retrain with `cuopt-train fit`"),
    (lambda m, _: m.pop("schema"), "weights", "the model file records no feature schema"),
    (lambda m, _: m.update(search={"uniform_blend": 1.5}), "weights",
     "search.uniform_blend 1.5: expected a share from 0 to 1"),
    (lambda m, _: m.update(search={"uniform_blend": "x"}), "weights",
     "search.uniform_blend 'x': expected a share from 0 to 1"),
    (lambda m, _: m.update(format="something else"), "metadata", "not a cuopt model's metadata"),
    (lambda m, _: m.update(format_version=1), "metadata", "model file format 1; this cuopt reads format 2"),
    (lambda m, _: m.pop("architecture"), "metadata", "damaged cuopt model metadata (architecture None)"),
    (lambda _, t: t.pop("scorer.2.bias"), "weights",
     "damaged cuopt model file (scorer.2.bias: missing, expected shape (1,))"),
    (lambda _, t: t.update(state_std=np.ones(3, dtype=np.float32)), "weights",
     f"damaged cuopt model file (state_std: shape (3,), expected shape ({len(features.STATE_NAMES)},))"),
])
def test_a_model_it_cannot_use_is_a_model_error(model_file: Path, tmp_path: Path, edit: Edit, file: str,
                                                message: str) -> None:
    path = rewritten(model_file, tmp_path / "bad.safetensors", edit)
    with pytest.raises(ModelError) as err:
        load_learned(path)
    assert str(err.value) == f"{path if file == 'weights' else path.with_suffix('.json')}: {message}"


def test_a_missing_file_or_another_kind_of_file_is_a_model_error(model_file: Path, tmp_path: Path) -> None:
    with pytest.raises(ModelError, match=r"missing\.safetensors: no such model file$"):
        policies.load_policy(str(tmp_path / "missing.safetensors"), {})
    alone = tmp_path / "alone.safetensors"
    alone.write_bytes(model_file.read_bytes())
    with pytest.raises(ModelError, match=r"alone\.safetensors: no metadata file alone\.json beside it$"):
        policies.load_policy(str(alone), {})
    checkpoint = tmp_path / "policy.pt"  # a torch checkpoint is a zip archive: no safetensors header
    checkpoint.write_bytes(b"PK\x03\x04" + bytes(60))
    checkpoint.with_suffix(".json").write_text(model_file.with_suffix(".json").read_text())
    with pytest.raises(ModelError, match=r"policy\.pt: not a cuopt model file \(header length \d+ past the end of "
                                         r"the file\)$"):
        policies.load_policy(str(checkpoint), {})
    checkpoint.with_suffix(".json").write_text("{")
    with pytest.raises(ModelError, match=r"policy\.json: not JSON$"):
        policies.load_policy(str(checkpoint), {})
    with pytest.raises(ModelError, match=r"policy\.json: a model's metadata; name its weights file \(\.safetensors\) "
                                         r"instead$"):
        policies.load_policy(str(checkpoint.with_suffix(".json")), {})


def test_the_default_is_learned_only_when_installed(monkeypatch: pytest.MonkeyPatch, model_file: Path,
                                                    tmp_path: Path) -> None:
    assert policies.default_policy() == "learned"  # the shipped model
    monkeypatch.setattr(policies, "learned_path", lambda: tmp_path / "none.safetensors")
    assert policies.default_policy() == "heuristic"
    monkeypatch.setattr(policies, "learned_path", lambda: model_file)
    assert policies.default_policy() == "learned"
    assert isinstance(policies.load_policy("learned", {}), LearnedPolicy)


# -- `cuopt optimize --dry-run` without a GPU ---------------------------------------------------------------------

def dry_run(saxpy: Path, *args: str) -> tuple[list[dict[str, Any]], str]:
    result = cuopt("optimize", str(saxpy), "--dry-run", "--json", *args)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout), result.stderr


@requires_nvcc
def test_optimize_falls_back_to_the_heuristic_with_one_warning(monkeypatch: pytest.MonkeyPatch, samples: Path,
                                                                model_file: Path, tmp_path: Path) -> None:
    monkeypatch.delenv("CUOPT_GPU_BACKEND", raising=False)
    monkeypatch.setattr(policies, "learned_path", lambda: tmp_path / "none.safetensors")
    saxpy = samples / "saxpy.cu"
    heuristic, quiet = dry_run(saxpy)  # no model installed: the heuristic, silently
    assert quiet == ""
    assert dry_run(saxpy, "--policy", "heuristic")[0] == heuristic

    bad = rewritten(model_file, tmp_path / "old.safetensors", lambda meta, _: meta["schema"].update(version=-1))
    rows, stderr = dry_run(saxpy, "--policy", str(bad))
    assert rows == heuristic
    assert stderr.splitlines() == [f"warning: {bad}: trained for feature schema -1; this cuopt computes schema "
                                   f"{features.SCHEMA_VERSION}; using the heuristic policy"]
    rows, stderr = dry_run(saxpy, "--policy", "learned")
    assert rows == heuristic and len(stderr.splitlines()) == 1 and "no such model file" in stderr


@requires_nvcc
def test_optimize_uses_the_installed_model_by_default(monkeypatch: pytest.MonkeyPatch, samples: Path,
                                                      model_file: Path) -> None:
    monkeypatch.delenv("CUOPT_GPU_BACKEND", raising=False)
    monkeypatch.setattr(policies, "learned_path", lambda: model_file)
    saxpy = samples / "saxpy.cu"
    rows, stderr = dry_run(saxpy)
    assert stderr == ""
    assert rows == dry_run(saxpy, "--policy", str(model_file))[0]
    target = collect([saxpy])[0]
    state, offers = variant_and_offers(target, Engine.default())
    expected = load_learned(model_file).bind(target.spec, target.kernel.name, frozenset(), None).priors(state, offers)
    by_id = {o.action.id: round(p, 4) for o, p in zip(offers, expected)}
    assert {r["id"]: r["prior"] for r in rows} == by_id


@requires_nvcc
def test_the_search_runs_on_the_learned_policy_with_ptxas_figures(monkeypatch: pytest.MonkeyPatch, samples: Path,
                                                                  model_file: Path) -> None:
    """`cuopt optimize` on the stand-in GPU backend: the bound policy computes the features of the
    measured variants with the ptxas figures their measurements recorded."""
    seen: list[dict | None] = []
    real = features.state_features

    def recording(ctx: Context, resources: dict | None = None, device: dict | None = None) -> list[float]:
        seen.append(resources)
        return real(ctx, resources, device)

    monkeypatch.setattr(features, "state_features", recording)
    monkeypatch.setenv("CUOPT_GPU_BACKEND", BACKEND)
    saxpy = samples / "saxpy.cu"
    spec = saxpy.with_suffix(".cuopt.toml")
    spec.write_text(spec.read_text().replace("n = 67108864", f"n = {N}").replace("{ n = 1000003 }", "{ n = 1003 }"))
    result = cuopt("optimize", str(saxpy), "--policy", str(model_file), "--max-evals", "8", "--json", "--dry-run",
                   "--no-sanitizer", "--budget", "60s")
    assert result.exit_code == 0, result.output
    assert result.stderr == ""
    trace = load_trace(Path(json.loads(result.stdout)["trace"]))
    files = model_file.read_bytes() + model_file.with_suffix(".json").read_bytes()  # the weights, then the metadata
    assert trace["policy"] == "learned"
    assert trace["policy_detail"] == {"name": "learned", "model": str(model_file),
                                      "sha256": hashlib.sha256(files).hexdigest(),
                                      "schema": features.SCHEMA_VERSION,
                                      "created": json.loads(model_file.with_suffix(".json").read_text())["created"],
                                      "uniform_blend": 0.0}
    assert seen and all(r is not None and r["registers"] > 0 for r in seen), seen


def test_the_search_never_imports_torch_or_the_training_package(model_file: Path) -> None:
    """Only `cuopt-train fit` needs torch: choosing rewrites with the learned policy does not, and
    the product's commands load nothing of cuopt.training."""
    code = f"""
import sys
from typer.testing import CliRunner
from cuopt.cli import app
from cuopt.api import resolve_policy
from cuopt.search.policies import load_policy
for args in (["--help"], ["optimize", "--help"]):
    assert CliRunner().invoke(app, args).exit_code == 0, args
for name in ("heuristic", "uniform", "learned", {str(model_file)!r}):
    assert resolve_policy(name, print) == name
    load_policy(name, {{}})
print(sorted(m for m in sys.modules if m.split(".")[0] == "torch" or m.startswith("cuopt.training")))
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert out.stdout.strip() == "[]", out.stderr
