"""Train the policy network on self-play rows (AlphaZero-style losses, on the CPU).

Policy loss: cross-entropy between the model's softmax over a node's children and a target that
mixes the search's visit distribution with a softmax of the measured advantages (see
`policy_target`), taken by default over the children the search measured or visited only: a child
left unmeasured says nothing about its worth, and pushing it down would teach the network the
collecting policy's blind spots. Value loss: squared error towards the row's `value`. Only "train" rows train;
every other split is held out and reported each epoch."""
from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable, Sequence

import torch

from cuopt import __version__
from cuopt.errors import CuoptError
from cuopt.training import dataset, model
from cuopt.training.dataset import ActionRow, Row
from cuopt.search import features
from cuopt.search.network import metadata_path


@dataclass(frozen=True)
class FitConfig:
    epochs: int = 20
    lr: float = 1e-3
    seed: int = 0
    batch_rows: int = 256
    weight_decay: float = 1e-4
    mix: float = 0.75  # weight of the measured-advantage softmax in the policy target; 1 - mix: visits
    temperature: float = 0.1  # of that softmax, in log-speedup units (a 10% faster child weighs e times more)
    failure_advantage: float = -1.0  # a child that failed (mismatch, compile-error, fault, timeout, ...)
    subtree_credit: float = 0.5  # share of the further gain found below a child that counts as its own
    value_weight: float = 1.0
    hidden: int = 128
    embed: int = 64
    validation: float = 0.0  # the share of training kernels set aside to report on (by name hash)
    ignore_unmeasured: bool = True  # the policy loss's softmax leaves out children neither measured nor visited


def advantage(action: ActionRow, cfg: FitConfig) -> float | None:
    """The child's own measured log-speedup plus `subtree_credit` of the further gain found below
    it, so a rewrite that pays only through later ones gets credit, but less than one that pays at
    once (which saves an evaluation); a failure's strongly negative stand-in; None when not measured."""
    if action.ok:
        own = action.log_speedup
        return own + cfg.subtree_credit * max(0.0, action.gain - own)  # type: ignore[operator]
    return None if action.status == "unmeasured" else cfg.failure_advantage


def informative(action: ActionRow) -> bool:
    """Whether the search learned anything of the child: measured (ok or failed) or visited."""
    return action.status != "unmeasured" or action.visits > 0


def policy_target(actions: Sequence[ActionRow], cfg: FitConfig) -> list[float] | None:
    """mix * softmax(advantage / temperature) + (1 - mix) * visits / total visits. Unmeasured
    children get mass only through their visits; when one part is missing the other is the target;
    None when the row has neither visits nor measurements."""
    total = sum(a.visits for a in actions)
    by_visits = [a.visits / total for a in actions] if total else None
    adv = [advantage(a, cfg) for a in actions]
    top = max((x for x in adv if x is not None), default=None)
    by_adv = None
    if top is not None:
        weights = [0.0 if x is None else math.exp((x - top) / cfg.temperature) for x in adv]
        by_adv = [w / sum(weights) for w in weights]
    if by_adv is None or by_visits is None:
        return by_adv or by_visits
    return [cfg.mix * m + (1 - cfg.mix) * v for m, v in zip(by_adv, by_visits)]


@dataclass
class Tensors:
    """Rows as flat tensors: a row's actions are `actions[offsets[r]:offsets[r + 1]]`."""

    states: torch.Tensor  # [R, S]
    values: torch.Tensor  # [R]
    actions: torch.Tensor  # [A, F]
    offsets: torch.Tensor  # [R + 1]
    targets: torch.Tensor  # [A] policy target (0 for rows without one)
    has_target: torch.Tensor  # [R] bool
    gains: torch.Tensor  # [A] the child's advantage when measured ok, -inf otherwise
    known: torch.Tensor  # [A] bool: the policy loss's softmax includes this child
    measured: torch.Tensor  # [A] bool: measured (ok or failed); top-1 agreement ranks these

    @staticmethod
    def of(rows: Sequence[Row], cfg: FitConfig) -> Tensors:
        state_dim, action_dim = len(features.STATE_NAMES), len(features.ACTION_NAMES)
        counts = [len(r.actions) for r in rows]
        targets, has = [], []
        for r in rows:
            t = policy_target(r.actions, cfg) if r.actions else None
            has.append(t is not None)
            targets.extend(t if t is not None else [0.0] * len(r.actions))
        acts = [a for r in rows for a in r.actions]
        return Tensors(
            states=torch.tensor([r.state for r in rows], dtype=torch.float32).reshape(len(rows), state_dim),
            values=torch.tensor([r.value for r in rows], dtype=torch.float32),
            actions=torch.tensor([a.features for a in acts], dtype=torch.float32).reshape(len(acts), action_dim),
            offsets=torch.tensor([0] + counts, dtype=torch.long).cumsum(0),
            targets=torch.tensor(targets, dtype=torch.float32),
            has_target=torch.tensor(has, dtype=torch.bool),
            gains=torch.tensor([advantage(a, cfg) if a.ok else -math.inf for a in acts],  # type: ignore[misc]
                               dtype=torch.float32),
            known=torch.tensor([not cfg.ignore_unmeasured or informative(a) for a in acts], dtype=torch.bool),
            measured=torch.tensor([a.status != "unmeasured" for a in acts], dtype=torch.bool))

    def __len__(self) -> int:
        return self.states.shape[0]


def gather(t: Tensors, rows: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The actions of `rows`: their indices into `t.actions` and each one's position in `rows`."""
    starts = t.offsets[rows]
    counts = t.offsets[rows + 1] - starts
    seg = torch.repeat_interleave(torch.arange(len(rows)), counts)
    first = counts.cumsum(0) - counts
    return starts[seg] + torch.arange(seg.numel()) - first[seg], seg


def segment_log_softmax(logits: torch.Tensor, seg: torch.Tensor, n: int) -> torch.Tensor:
    """log-softmax of `logits` within each segment (the actions of one row)."""
    top = torch.full((n,), -math.inf).scatter_reduce(0, seg, logits.detach(), "amax")
    shifted = logits - top[seg]
    return shifted - torch.zeros(n).index_add(0, seg, shifted.exp()).log().index_select(0, seg)


UNKNOWN_LOGIT = -1e4  # a child left out of the policy loss: no mass, and target 0 times a finite log


@dataclass
class Batch:
    """Per-row results of one forward pass."""

    policy: torch.Tensor  # [B] cross-entropy (0 where the row has no target)
    value: torch.Tensor  # [B] squared error
    logits: torch.Tensor  # [A]
    idx: torch.Tensor  # [A]
    seg: torch.Tensor  # [A]


def forward(net: model.PolicyNet, t: Tensors, rows: torch.Tensor) -> Batch:
    """One pass over `rows`. Gathers that carry gradients use `index_select`: the backward of a
    tensor-indexed read on the CPU adds with atomics across threads, so the same seed would not
    train the same model."""
    idx, seg = gather(t, rows)
    emb = net.embed(t.states[rows])
    logits = net.logits(emb.index_select(0, seg), t.actions[idx])
    logp = segment_log_softmax(logits.masked_fill(~t.known[idx], UNKNOWN_LOGIT), seg, len(rows))
    policy = -torch.zeros(len(rows)).index_add(0, seg, t.targets[idx] * logp)
    value = (net.value(emb) - t.values[rows]) ** 2
    return Batch(policy, value, logits, idx, seg)


def loss(net: model.PolicyNet, t: Tensors, rows: torch.Tensor, cfg: FitConfig) -> torch.Tensor:
    b = forward(net, t, rows)
    targets = int(t.has_target[rows].sum())
    policy = b.policy.sum() / targets if targets else torch.zeros(())  # rows without a target add 0
    return policy + cfg.value_weight * b.value.mean()


def evaluate(net: model.PolicyNet, t: Tensors, cfg: FitConfig, chunk: int = 4096) -> dict[str, float | None]:
    """Mean losses, and top-1 agreement on the rows with a child measured ok: of the measured
    children, the one with the model's highest logit has the best measured advantage (chance: the
    share of such children among the measured)."""
    sums = {"policy": 0.0, "value": 0.0, "agree": 0.0, "chance": 0.0}
    with_target = with_best = 0
    with torch.no_grad():
        for start in range(0, len(t), chunk):
            rows = torch.arange(start, min(start + chunk, len(t)))
            b = forward(net, t, rows)
            has = t.has_target[rows]
            sums["policy"] += float(b.policy[has].sum())
            sums["value"] += float(b.value.sum())
            with_target += int(has.sum())
            agree, chance, measured = _top1(b, t.gains[b.idx], t.measured[b.idx], len(rows))
            sums["agree"] += agree
            sums["chance"] += chance
            with_best += measured
    policy = sums["policy"] / with_target if with_target else 0.0
    value = sums["value"] / len(t)
    return {"loss": policy + cfg.value_weight * value, "policy": policy, "value": value,
            "top1": sums["agree"] / with_best if with_best else None,
            "chance_top1": sums["chance"] / with_best if with_best else None}


def _top1(b: Batch, gains: torch.Tensor, measured: torch.Tensor, n: int) -> tuple[float, float, int]:
    """(rows where the model's pick among the measured children is a best one, expected agreement
    of a uniform pick among them, rows with a best). Unmeasured children are left out: nothing
    says whether picking one would have been right."""
    logits = b.logits.masked_fill(~measured, -math.inf)
    best_gain = torch.full((n,), -math.inf).scatter_reduce(0, b.seg, gains, "amax")
    top_logit = torch.full((n,), -math.inf).scatter_reduce(0, b.seg, logits, "amax")
    is_best = (gains == best_gain[b.seg]) & torch.isfinite(gains)
    picked_best = torch.zeros(n).index_add(0, b.seg, (is_best & (logits == top_logit[b.seg])).float()) > 0
    n_best = torch.zeros(n).index_add(0, b.seg, is_best.float())
    n_actions = torch.zeros(n).index_add(0, b.seg, measured.float())
    measured = torch.isfinite(best_gain)
    return (float(picked_best[measured].sum()), float((n_best / n_actions.clamp(min=1))[measured].sum()),
            int(measured.sum()))


Log = Callable[[str], None]


def fit(train_rows: Sequence[Row], held_rows: Sequence[Row], cfg: FitConfig,
        log: Log) -> tuple[model.PolicyNet, list[dict[str, float | int | None]]]:
    """Train on `train_rows`, reporting on `held_rows` (see `Dataset.partition`); returns the network
    and one metrics row per epoch (0: untrained)."""
    if not train_rows:
        raise CuoptError(f'no training rows (split "{dataset.TRAIN}", less the validation kernels) in the dataset')
    train, held = Tensors.of(train_rows, cfg), Tensors.of(held_rows, cfg)
    if train.actions.shape[0] == 0:
        raise CuoptError("the training rows have no actions to learn from")
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(cfg.seed)
        net = model.PolicyNet(model.Architecture(len(features.STATE_NAMES), len(features.ACTION_NAMES),
                                                 cfg.hidden, cfg.embed))
    # the actions the policy loss sees: a rule never measured keeps a neutral scale, not a huge one
    net.set_normalisation(model.normalisation_stats(train.states, train.actions[train.known]))
    optimizer = torch.optim.AdamW(net.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    generator = torch.Generator().manual_seed(cfg.seed)
    metrics = [_epoch_metrics(net, 0, train, held, cfg, log)]
    for epoch in range(1, cfg.epochs + 1):
        net.train()
        for batch in torch.randperm(len(train), generator=generator).split(cfg.batch_rows):
            optimizer.zero_grad()
            loss(net, train, batch, cfg).backward()
            optimizer.step()
        net.eval()
        metrics.append(_epoch_metrics(net, epoch, train, held, cfg, log))
    return net, metrics


def _epoch_metrics(net: model.PolicyNet, epoch: int, train: Tensors, held: Tensors, cfg: FitConfig,
                   log: Log) -> dict[str, float | int | None]:
    tr = evaluate(net, train, cfg)
    ho = evaluate(net, held, cfg) if len(held) else {}
    row: dict[str, float | int | None] = {"epoch": epoch, **{f"train_{k}": v for k, v in tr.items()
                                                             if k in ("loss", "policy", "value")}}
    row.update({f"held_out_{k}": v for k, v in ho.items()})
    line = f"epoch {epoch:3d}  train loss {tr['loss']:.4f} (policy {tr['policy']:.4f}, value {tr['value']:.4f})"
    if ho:
        line += f"  held-out loss {ho['loss']:.4f} (policy {ho['policy']:.4f}, value {ho['value']:.4f})"
    if ho.get("top1") is not None:
        line += f"  top-1 {ho['top1']:.1%} (chance {ho['chance_top1']:.1%})"
    log(line)
    return row


def run(paths: Sequence[Path], out: Path, cfg: FitConfig, log: Log, uniform_blend: float = 0.0) -> dict[str, object]:
    """`cuopt-train fit`: load, train, save the weights and their JSON metadata; returns the metadata.
    `uniform_blend` is a search-time setting the file carries (see `LearnedPolicy.priors`)."""
    if out.suffix == ".json":
        raise CuoptError(f"-o {out}: the model file needs another suffix than .json (its metadata is .json)")
    data = dataset.load(paths)
    summary = data.summary()
    if data.skipped:
        log(f"skipped {data.skipped} row(s) of another feature schema (this cuopt: {features.SCHEMA_VERSION})")
    if data.upgraded:
        log(f"read {data.upgraded} row(s) of an older feature schema in this one's terms "
            f"(this cuopt: {features.SCHEMA_VERSION})")
    log(f"{summary['rows']} rows: " + ", ".join(f"{k} {v} ({summary['kernels'][k]} kernels)"
                                                for k, v in summary["splits"].items()))
    log(f"{summary['actions']} actions ({summary['actions_per_row']} per row): "
        + ", ".join(f"{k} {v}" for k, v in summary["status"].items()))
    train_rows, held_rows = data.partition(cfg.validation)
    if cfg.validation:
        kernels = {r.kernel for r in data.split(dataset.TRAIN)}
        aside = kernels - {r.kernel for r in train_rows}
        log(f"validation: {len(aside)} of {len(kernels)} training kernels set aside "
            f"({len(held_rows) - len(data.held_out())} rows)")
    if not held_rows:
        log("no held-out rows (every row is in the train split): reporting training losses only")
    start = time.monotonic()
    net, metrics = fit(train_rows, held_rows, cfg, log)
    schema = features.schema()
    metadata: dict[str, object] = {
        "schema": {"version": schema["version"], "state": list(schema["state"]), "action": list(schema["action"])},
        "hyperparameters": asdict(cfg),
        "search": {"uniform_blend": uniform_blend},
        "dataset": {"files": [str(p) for p in paths], "train_rows": len(train_rows),
                    "held_out_rows": len(held_rows), "summary": summary},
        "metrics": metrics,
        "train_seconds": round(time.monotonic() - start, 1),
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "cuopt": __version__,
        "torch": str(torch.__version__),
    }
    model.save(out, net, metadata)
    log(f"wrote {out} and {metadata_path(out)}")
    return metadata
