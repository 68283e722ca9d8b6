"""The torch network against the search's numpy forward pass: the saved files, read back into torch,
give the same embeddings, logits, values and priors as cuopt/search/network.py computes without torch."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from cuopt.evaluate.evaluator import Variant
from cuopt.rewrite.context import Context
from cuopt.rewrite.engine import Engine
from cuopt.search import features, network, weights
from cuopt.search.learned import load_learned
from cuopt.search.policies import learned_path
from cuopt.targets import collect
from cuopt.training import model
from tests.conftest import sample_files
from tests.training import synthetic

DEVICE = {"name": "NVIDIA H200", "arch": "sm_90"}


@pytest.fixture(scope="module")
def model_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return synthetic.model(tmp_path_factory.mktemp("model"))


def torch_net(path: Path) -> model.PolicyNet:
    """The saved files as torch trains them: the reference for the numpy forward pass."""
    arch = json.loads(network.metadata_path(path).read_text())["architecture"]
    tensors = {name: torch.from_numpy(a) for name, a in weights.read(path).items()}
    net = model.PolicyNet(model.Architecture(**arch))
    net.load_state_dict({k: v for k, v in tensors.items() if k not in model.NORMALISATION})
    net.set_normalisation({k: tensors[k] for k in model.NORMALISATION})
    return net.eval()


@pytest.mark.parametrize("which", ["trained here", "shipped"])
def test_the_numpy_forward_pass_matches_torchs(model_file: Path, which: str) -> None:
    path = model_file if which == "trained here" else learned_path()
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


def test_the_priors_are_the_softmax_of_torchs_logits(model_file: Path) -> None:
    reference, engine = torch_net(model_file), Engine.default()
    for t in collect(sample_files()[:3]):
        ctx = Context(t.source.source, t.spec.launch, t.kernel.name, t.spec, frozenset())
        state, offers = Variant(t.text, t.spec.launch), engine.offers(ctx)
        policy = load_learned(model_file).bind(t.spec, t.kernel.name, frozenset(), DEVICE)
        row = torch.tensor([features.state_features(ctx, None, DEVICE)])
        actions = torch.tensor([features.action_features(ctx, o) for o in offers])
        with torch.inference_mode():
            emb = reference.embed(row)
            expected = torch.softmax(reference.logits(emb.expand(len(offers), -1), actions), 0)
            value = float(reference.value(emb)[0])
        assert policy.priors(state, offers) == pytest.approx(expected.tolist(), rel=1e-4, abs=1e-6)
        assert policy.value(state) == pytest.approx(value, rel=1e-5, abs=1e-6)

