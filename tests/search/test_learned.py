"""The learned policy: save → load round trip, the errors for files it cannot use, `cuopt optimize`
falling back to the heuristic policy with one warning, `--policy learned` and the default, priors
over the offers of every sample, the numpy forward pass matching torch's, and the search never
importing torch."""
from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import torch

from cuopt.errors import ModelError
from cuopt.evaluate.evaluator import Variant
from cuopt.learn import features, fit, model, network
from cuopt.learn.policy import LearnedPolicy, load_learned
from cuopt.optimization.trace import load_trace
from cuopt.rewrite.context import Context
from cuopt.rewrite.engine import Engine
from cuopt.search import policy as search_policy
from cuopt.targets import collect
from tests.conftest import ROOT, requires_nvcc, sample_files
from tests.helpers import cuopt
from tests.learn import synthetic
from tests.optimization.test_optimize_standin import BACKEND, N


@pytest.fixture(scope="module")
def model_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("learned")
    data = synthetic.write(d / "data.jsonl", synthetic.rows(1500, seed=11))
    out = d / "policy.pt"
    fit.run([data], out, fit.FitConfig(epochs=3, seed=0), lambda line: None)
    return out


@pytest.fixture(scope="module")
def targets() -> list[Any]:
    return collect(sample_files())


def variant_and_offers(target: Any, engine: Engine) -> tuple[Variant, list[Any]]:
    ctx = Context(target.source.source, target.spec.launch, target.kernel.name, target.spec)
    return Variant(target.text, target.spec.launch), engine.offers(ctx)


def bound(policy: LearnedPolicy, target: Any) -> LearnedPolicy:
    return policy.bind(target.spec, target.kernel.name, frozenset(), {"name": "NVIDIA H200", "arch": "sm_90"})


def rewritten(path: Path, dest: Path, edit: Any) -> Path:
    """A copy of the model file with its saved dict edited."""
    data = torch.load(path, weights_only=True)
    edit(data)
    torch.save(data, dest)
    return dest


def torch_net(path: Path) -> model.PolicyNet:
    """The model file as torch trains it: the reference for the numpy forward pass."""
    data = torch.load(path, weights_only=True)
    net = model.PolicyNet(model.Architecture(**data["architecture"]))
    net.load_state_dict(data["state_dict"])
    net.set_normalisation(data["normalisation"])
    return net.eval()


@pytest.mark.parametrize("which", ["trained here", "shipped"])
def test_the_numpy_forward_pass_matches_torchs(model_file: Path, which: str) -> None:
    path = model_file if which == "trained here" else search_policy.learned_path()
    reference, (net, _) = torch_net(path), network.load(path)
    generator = torch.Generator().manual_seed(5)
    states = torch.randn(16, reference.arch.state_dim, generator=generator) * 3 + 1
    actions = torch.randn(16, reference.arch.action_dim, generator=generator) * 2
    with torch.inference_mode():
        emb = reference.embed(states)
        logits, value = reference.logits(emb, actions), reference.value(emb)
    np_emb = net.embed(states.numpy())
    assert np_emb == pytest.approx(emb.numpy(), rel=1e-5, abs=1e-5)
    assert net.logits(np_emb, actions.numpy()) == pytest.approx(logits.numpy(), rel=1e-5, abs=1e-5)
    assert net.value(np_emb) == pytest.approx(value.numpy(), rel=1e-5, abs=1e-6)
    untrained = model.PolicyNet(reference.arch)
    untrained.load_state_dict(reference.state_dict())  # the weights without the normalisation: must differ
    with torch.inference_mode():
        assert untrained.embed(states).numpy() != pytest.approx(np_emb, rel=1e-3, abs=1e-3)


def test_the_priors_are_the_softmax_of_torchs_logits(model_file: Path, targets: list[Any]) -> None:
    reference, engine = torch_net(model_file), Engine.default()
    for t in targets[:3]:
        state, offers = variant_and_offers(t, engine)
        ctx = Context(state.source.encode(), state.launch, t.kernel.name, t.spec, frozenset())
        policy = bound(load_learned(model_file), t)
        device = policy.binding.device
        row = torch.tensor([features.state_features(ctx, None, device)])
        actions = torch.tensor([features.action_features(ctx, o) for o in offers])
        with torch.inference_mode():
            emb = reference.embed(row)
            expected = torch.softmax(reference.logits(emb.expand(len(offers), -1), actions), 0)
            value = float(reference.value(emb)[0])
        assert policy.priors(state, offers) == pytest.approx(expected.tolist(), rel=1e-4, abs=1e-6)
        assert policy.value(state) == pytest.approx(value, rel=1e-5, abs=1e-6)


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
    path = search_policy.learned_path()
    saved = torch.load(path, weights_only=True, map_location="cpu")
    assert saved["format"] == "cuopt-policy"
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
    blended = rewritten(model_file, tmp_path / "blended.pt", lambda d: d["metadata"].update(search={"uniform_blend": 0.25}))
    plain, engine = load_learned(model_file), Engine.default()
    assert plain.uniform_blend == 0.0 and load_learned(blended).uniform_blend == 0.25
    for t in targets[:3]:
        state, offers = variant_and_offers(t, engine)
        p = bound(plain, t).priors(state, offers)
        q = bound(load_learned(blended), t).priors(state, offers)
        assert q == pytest.approx([0.75 * x + 0.25 / len(p) for x in p])
        assert min(q) >= 0.25 / len(q) and sum(q) == pytest.approx(1.0, abs=1e-5)
    assert load_learned(blended).describe()["uniform_blend"] == 0.25


def test_priors_need_bind(model_file: Path, targets: list[Any]) -> None:
    state, offers = variant_and_offers(targets[0], Engine.default())
    with pytest.raises(Exception, match="needs bind"):
        load_learned(model_file).priors(state, offers)


@pytest.mark.parametrize("edit, message", [
    (lambda d: d["metadata"]["schema"].update(version=d["metadata"]["schema"]["version"] + 1),
     f"trained for feature schema {features.SCHEMA_VERSION + 1}; this cuopt computes schema {features.SCHEMA_VERSION}"),
    (lambda d: d["metadata"]["schema"]["state"].reverse(),
     f"trained on other state features than this cuopt computes (schema {features.SCHEMA_VERSION}); "
     "retrain with `cuopt train fit`"),
    (lambda d: d["metadata"]["schema"]["action"].pop(),
     f"trained on other action features than this cuopt computes (schema {features.SCHEMA_VERSION}); "
     "retrain with `cuopt train fit`"),
    (lambda d: d["metadata"].pop("schema"), "the model file records no feature schema"),
    (lambda d: d["metadata"].update(search={"uniform_blend": 1.5}), "search.uniform_blend 1.5: expected a share from 0 to 1"),
    (lambda d: d["metadata"].update(search={"uniform_blend": "x"}), "search.uniform_blend 'x': expected a share from 0 to 1"),
    (lambda d: d.update(format="something else"), "not a cuopt model file"),
    (lambda d: d.update(format_version=99), "model file format 99; this cuopt reads format 1"),
    (lambda d: d["state_dict"].pop("scorer.2.bias"), "damaged cuopt model file (scorer.2.bias: missing, expected shape (1,))"),
    (lambda d: d["normalisation"].update(state_std=torch.ones(3)),
     f"damaged cuopt model file (state_std: shape (3,), expected shape ({len(features.STATE_NAMES)},))"),
    (lambda d: d.update(extra=torch.nn.Linear(2, 2)), "not a cuopt model file (torch.nn.modules.linear.Linear is not a "
                                                      "tensor or a plain container)"),
])
def test_a_model_it_cannot_use_is_a_model_error(model_file: Path, tmp_path: Path, edit: Any, message: str) -> None:
    path = rewritten(model_file, tmp_path / "bad.pt", edit)
    with pytest.raises(ModelError) as err:
        load_learned(path)
    assert str(err.value) == f"{path}: {message}"


def test_a_missing_file_or_another_kind_of_file_is_a_model_error(tmp_path: Path) -> None:
    with pytest.raises(ModelError, match=r"missing\.pt: no such model file$"):
        search_policy.load_policy(str(tmp_path / "missing.pt"), {})
    onnx = tmp_path / "policy.onnx"
    onnx.write_bytes(b"\0")
    with pytest.raises(ModelError, match=r"policy\.onnx: not a cuopt model file \(BadZipFile\)$"):
        search_policy.load_policy(str(onnx), {})
    plain = tmp_path / "weights.pt"
    torch.save({"w": torch.zeros(2)}, plain)
    with pytest.raises(ModelError, match=r"weights\.pt: not a cuopt model file$"):
        search_policy.load_policy(str(plain), {})


def test_the_default_is_learned_only_when_installed(monkeypatch: pytest.MonkeyPatch, model_file: Path,
                                                    tmp_path: Path) -> None:
    assert search_policy.learned_path() == ROOT / "models" / "policy.pt"
    assert search_policy.default_policy() == "learned"  # the shipped model
    monkeypatch.setattr(search_policy, "learned_path", lambda: tmp_path / "none.pt")
    assert search_policy.default_policy() == "heuristic"
    monkeypatch.setattr(search_policy, "learned_path", lambda: model_file)
    assert search_policy.default_policy() == "learned"
    assert isinstance(search_policy.load_policy("learned", {}), LearnedPolicy)


# -- `cuopt optimize --dry-run` without a GPU ---------------------------------------------------------------------

def dry_run(saxpy: Path, *args: str) -> tuple[list[dict[str, Any]], str]:
    result = cuopt("optimize", str(saxpy), "--dry-run", "--json", *args)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout), result.stderr


@requires_nvcc
def test_optimize_falls_back_to_the_heuristic_with_one_warning(monkeypatch: pytest.MonkeyPatch, samples: Path,
                                                                model_file: Path, tmp_path: Path) -> None:
    monkeypatch.delenv("CUOPT_GPU_BACKEND", raising=False)
    monkeypatch.setattr(search_policy, "learned_path", lambda: tmp_path / "none.pt")
    saxpy = samples / "saxpy.cu"
    heuristic, quiet = dry_run(saxpy)  # no model installed: the heuristic, silently
    assert quiet == ""
    assert dry_run(saxpy, "--policy", "heuristic")[0] == heuristic

    bad = rewritten(model_file, tmp_path / "old.pt", lambda d: d["metadata"]["schema"].update(version=-1))
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
    monkeypatch.setattr(search_policy, "learned_path", lambda: model_file)
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
    assert trace["policy"] == "learned"
    assert trace["policy_detail"] == {"name": "learned", "model": str(model_file),
                                      "sha256": hashlib.sha256(model_file.read_bytes()).hexdigest(),
                                      "schema": features.SCHEMA_VERSION,
                                      "created": json.loads(model_file.with_suffix(".json").read_text())["created"],
                                      "uniform_blend": 0.0}
    assert seen and all(r is not None and r["registers"] > 0 for r in seen), seen


def test_the_search_never_imports_torch(model_file: Path) -> None:
    """Only `cuopt train fit` needs torch: choosing rewrites with the learned policy does not."""
    code = f"""
import sys
from typer.testing import CliRunner
from cuopt.cli import app
from cuopt.api import resolve_policy
from cuopt.search.policy import load_policy
for args in (["--help"], ["optimize", "--help"], ["train", "fit", "--help"]):
    assert CliRunner().invoke(app, args).exit_code == 0, args
for name in ("heuristic", "uniform", "learned", {str(model_file)!r}):
    assert resolve_policy(name, print) == name
    load_policy(name, {{}})
print("torch" in sys.modules)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert out.stdout.strip() == "False", out.stderr
