"""Training: the policy target (visits mixed with measured advantages), learning a planted rule
(loss goes down, held-out top-1 beats chance), determinism, and `cuopt-train fit`'s files."""
from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from cuopt.search import features, network, weights
from cuopt.training import dataset, fit, model
from cuopt.training.dataset import ActionRow
from tests.helpers import cuopt_train, one_error_line
from tests.training import synthetic

CFG = fit.FitConfig()


def act(status: str = "ok", log_speedup: float | None = None, visits: int = 0,
        subtree: float | None = None) -> ActionRow:
    return ActionRow("r@1:1", "r", (), visits, 0.1, status, None, log_speedup, subtree)


def softmax(xs: list[float]) -> list[float]:
    exps = [math.exp(x / CFG.temperature) for x in xs]
    return [e / sum(exps) for e in exps]


def test_the_target_mixes_visits_and_measured_advantages() -> None:
    actions = [act("ok", 0.1, 3), act("ok", 0.0, 1), act("mismatch", None, 1), act("unmeasured", None, 5)]
    by_adv = softmax([0.1, 0.0, CFG.failure_advantage]) + [0.0]
    by_visits = [3 / 10, 1 / 10, 1 / 10, 5 / 10]
    target = fit.policy_target(actions, CFG)
    assert target == pytest.approx([CFG.mix * a + (1 - CFG.mix) * v for a, v in zip(by_adv, by_visits)])
    assert sum(target) == pytest.approx(1.0)
    assert target[3] == pytest.approx((1 - CFG.mix) * 0.5)  # unmeasured: through its visits only
    assert by_adv[2] < 1e-4  # a failure weighs next to nothing among the measured


def test_the_target_without_visits_or_without_measurements() -> None:
    assert fit.policy_target([act("ok", 0.2), act("fault")], CFG) == pytest.approx(softmax([0.2, -1.0]))
    assert fit.policy_target([act("unmeasured", visits=1), act("unmeasured", visits=3)], CFG) == [0.25, 0.75]
    assert fit.policy_target([act("unmeasured"), act("unmeasured")], CFG) is None


def test_a_child_is_credited_with_part_of_the_best_found_below_it() -> None:
    # the first child is slower itself but leads to the fastest variant: it gets its own gain plus
    # subtree_credit of what lies below; a child that pays at once keeps its own gain
    actions = [act("ok", -0.1, subtree=0.5), act("ok", 0.2, subtree=0.2), act("ok", 0.1)]
    credited = -0.1 + CFG.subtree_credit * 0.6
    assert [fit.advantage(a, CFG) for a in actions] == pytest.approx([credited, 0.2, 0.1])
    assert fit.policy_target(actions, CFG) == pytest.approx(softmax([credited, 0.2, 0.1]))
    full = fit.FitConfig(subtree_credit=1.0)
    assert [fit.advantage(a, full) for a in actions] == pytest.approx([0.5, 0.2, 0.1])
    assert [a.gain for a in actions] == [0.5, 0.2, 0.1]
    assert act("fault", subtree=None).gain is None


def _row(actions: list[ActionRow]) -> dataset.Row:
    return dataset.Row("k", "train", "gpu", 0, 0, tuple([0.0] * len(features.STATE_NAMES)), 0.5, 0.5,
                       tuple(actions), 0.0, "d.jsonl:1")


def _features(action: ActionRow, value: float) -> ActionRow:
    vector = [0.0] * len(features.ACTION_NAMES)
    vector[3] = value
    return ActionRow(action.id, action.rule, tuple(vector), action.visits, action.prior, action.status,
                     action.ms, action.log_speedup, action.subtree_log_speedup)


@pytest.mark.parametrize("ignore", [True, False])
def test_a_child_left_unmeasured_stays_out_of_the_policy_loss(ignore: bool) -> None:
    # an unmeasured child says nothing of its worth: by default the loss neither pushes it down nor
    # shares the softmax with it, so changing its features changes nothing
    cfg = fit.FitConfig(ignore_unmeasured=ignore)
    torch.manual_seed(0)
    net = model.PolicyNet(model.Architecture(len(features.STATE_NAMES), len(features.ACTION_NAMES), 16, 8))
    known = [_features(act("ok", 0.2, 1), 1.0), _features(act("ok", 0.0, 1), -1.0)]
    losses = [float(fit.loss(net, fit.Tensors.of([_row(known + [_features(act("unmeasured"), x)])], cfg),
                             torch.tensor([0]), cfg).detach()) for x in (-3.0, 3.0)]
    assert (losses[0] == pytest.approx(losses[1])) is ignore
    visited = _features(act("unmeasured", visits=2), 3.0)  # visited: the visits are its target
    assert fit.Tensors.of([_row(known + [visited])], cfg).known.tolist() == [True, True, True]


def test_top1_agreement_ranks_the_measured_children_only() -> None:
    # the model's favourite is unmeasured: agreement asks which measured child it ranks first
    rows = [_row([_features(a, 0.0) for a in (act("ok", 0.3), act("ok", 0.1), act("unmeasured"), act("fault"))])]
    t = fit.Tensors.of(rows, CFG)
    b = fit.Batch(torch.zeros(1), torch.zeros(1), torch.tensor([2.0, 1.0, 9.0, 0.0]), torch.arange(4),
                  torch.zeros(4, dtype=torch.long))
    assert fit._top1(b, t.gains, t.measured, 1) == (1.0, pytest.approx(1 / 3), 1)
    b.logits = torch.tensor([1.0, 2.0, 9.0, 0.0])
    assert fit._top1(b, t.gains, t.measured, 1)[0] == 0.0


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> tuple[model.PolicyNet, list[dict[str, Any]]]:
    path = synthetic.write(tmp_path_factory.mktemp("fit") / "data.jsonl", synthetic.rows(3000, seed=7))
    return fit.fit(*dataset.load([path]).partition(), fit.FitConfig(epochs=6, seed=1), lambda line: None)


def test_training_learns_the_planted_rule(trained: tuple[model.PolicyNet, list[dict[str, Any]]]) -> None:
    _, metrics = trained
    first, last = metrics[0], metrics[-1]
    assert [m["epoch"] for m in metrics] == list(range(7))
    assert last["train_loss"] < 0.9 * first["train_loss"]
    assert last["held_out_loss"] < 0.9 * first["held_out_loss"]
    assert last["held_out_value"] < 0.2 * first["held_out_value"]
    assert last["held_out_top1"] > last["held_out_chance_top1"] + 0.3, last


def test_the_same_seed_trains_the_same_model(tmp_path: Path) -> None:
    threads = torch.get_num_threads()
    torch.set_num_threads(8)  # more threads than cores: an order-dependent sum across threads shows at once
    try:
        _same_seed_same_model(tmp_path)
    finally:
        torch.set_num_threads(threads)


def _same_seed_same_model(tmp_path: Path) -> None:
    data = dataset.load([synthetic.write(tmp_path / "d.jsonl", synthetic.rows(300, seed=2))])
    runs = [fit.fit(*data.partition(), fit.FitConfig(epochs=2, seed=s), lambda line: None)[0].state_dict() for s in (5, 5, 6)]
    assert all(torch.equal(runs[0][k], runs[1][k]) for k in runs[0])
    assert not all(torch.equal(runs[0][k], runs[2][k]) for k in runs[0])


def test_train_fit_writes_safetensors_weights_and_json_metadata(tmp_path: Path) -> None:
    data = synthetic.write(tmp_path / "d.jsonl", synthetic.rows(400, seed=3))
    out = tmp_path / "models" / "policy.safetensors"
    result = cuopt_train("fit", str(data), "-o", str(out), "--epochs", "2", "--seed", "4", "--lr", "0.003",
                         "--mix", "0.6", "--subtree-credit", "1", "--uniform-blend", "0.3")
    assert result.exit_code == 0, result.output
    assert "epoch   2  train loss" in result.output and "top-1" in result.output
    saved = json.loads(out.with_suffix(".json").read_text())
    assert (saved.pop("format"), saved.pop("format_version")) == ("cuopt-policy", 2)
    arch = saved.pop("architecture")
    assert arch == {"state_dim": len(features.STATE_NAMES), "action_dim": len(features.ACTION_NAMES),
                    "hidden": 128, "embed": 64}
    tensors = weights.read(out)
    assert set(tensors) == set(network.shapes(arch))
    assert all(t.dtype == np.float32 and t.shape == network.shapes(arch)[name] for name, t in tensors.items())
    meta = saved
    assert meta["schema"] == {**features.schema(), "state": list(features.STATE_NAMES),
                              "action": list(features.ACTION_NAMES)}
    assert meta["hyperparameters"]["seed"] == 4 and meta["hyperparameters"]["lr"] == 0.003
    assert (meta["hyperparameters"]["mix"], meta["hyperparameters"]["subtree_credit"]) == (0.6, 1.0)
    assert meta["search"] == {"uniform_blend": 0.3}
    assert meta["dataset"]["train_rows"] + meta["dataset"]["held_out_rows"] == 400
    assert len(meta["metrics"]) == 3


def test_train_fit_reports_rows_of_another_schema(tmp_path: Path) -> None:
    rows = synthetic.rows(60, held_out=0.0)
    rows[0]["schema"] = features.SCHEMA_VERSION + 1
    data = synthetic.write(tmp_path / "d.jsonl", rows)
    result = cuopt_train("fit", str(data), "-o", str(tmp_path / "p.safetensors"), "--epochs", "1")
    assert result.exit_code == 0, result.output
    assert f"skipped 1 row(s) of another feature schema (this cuopt: {features.SCHEMA_VERSION})" in result.output
    assert "no held-out rows" in result.output


def test_train_fit_sets_training_kernels_aside_for_validation(tmp_path: Path) -> None:
    data = synthetic.write(tmp_path / "d.jsonl", synthetic.rows(400, held_out=0.0))
    out = tmp_path / "p.safetensors"
    result = cuopt_train("fit", str(data), "-o", str(out), "--epochs", "1", "--validation", "0.25")
    assert result.exit_code == 0, result.output
    kernels = {r["kernel"] for r in map(json.loads, data.read_text().splitlines())}
    aside = {k for k in kernels if dataset.set_aside(k, 0.25)}
    assert 0 < len(aside) < len(kernels)
    rows = dataset.load([data]).rows
    n_aside = sum(r.kernel in aside for r in rows)
    assert f"validation: {len(aside)} of {len(kernels)} training kernels set aside ({n_aside} rows)" in result.output
    assert "held-out loss" in result.output and "no held-out rows" not in result.output
    meta = json.loads(out.with_suffix(".json").read_text())
    assert (meta["dataset"]["train_rows"], meta["dataset"]["held_out_rows"]) == (len(rows) - n_aside, n_aside)
    assert meta["hyperparameters"]["validation"] == 0.25
    assert not any(dataset.set_aside(k, 0.0) for k in kernels)


@pytest.mark.parametrize("args, message", [
    (["--validation", "1"], "cuopt: error: --validation 1: expected a share from 0 up to (not including) 1"),
    (["--validation", "-0.1"], "cuopt: error: --validation -0.1: expected a share from 0 up to (not including) 1"),
    (["--epochs", "0"], "cuopt: error: --epochs must be at least 1"),
    (["--mix", "1.5"], "cuopt: error: --mix 1.5: expected a share from 0 to 1"),
    (["--subtree-credit", "-1"], "cuopt: error: --subtree-credit -1: expected a share from 0 to 1"),
    (["--uniform-blend", "2"], "cuopt: error: --uniform-blend 2: expected a share from 0 to 1"),
    (["--lr", "0"], "cuopt: error: --lr must be > 0"),
    (["-o", "policy.json"], "cuopt: error: -o policy.json: the model file needs another suffix than .json "
                            "(its metadata is .json)"),
])
def test_train_fit_option_errors(tmp_path: Path, args: list[str], message: str) -> None:
    data = synthetic.write(tmp_path / "d.jsonl", synthetic.rows(5))
    result = cuopt_train("fit", str(data), *args)
    assert result.exit_code == 1
    assert one_error_line(result) == message


def test_train_fit_needs_training_rows(tmp_path: Path) -> None:
    data = synthetic.write(tmp_path / "d.jsonl", synthetic.rows(5, held_out=1.0))
    result = cuopt_train("fit", str(data), "-o", str(tmp_path / "p.safetensors"))
    assert result.exit_code == 1
    assert one_error_line(result) == ('cuopt: error: no training rows (split "train", less the validation '
                                      'kernels) in the dataset')
