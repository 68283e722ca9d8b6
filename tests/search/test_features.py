"""Feature vectors of the learned policy: fixed lengths, finite and deterministic values on every
sample and every offered rewrite, a pinned schema, and a few values that mean what they say."""
from __future__ import annotations

import dataclasses
import hashlib
import json
import math
from functools import cache

import pytest

from cuopt.search import features as F
from cuopt.resources import data_dir
from cuopt.rewrite.context import Context
from cuopt.rewrite.engine import Engine, Offer
from cuopt.rewrite.rule import load_rules
from cuopt.spec.model import Launch
from cuopt.targets import collect
from tests.conftest import SAMPLES, sample_names

# Update only together with SCHEMA_VERSION (see the test below).
SCHEMA_HASH = "f792fc66ddacdf86"


def schema_hash() -> str:
    pinned = [F.SCHEMA_VERSION, list(F.STATE_NAMES), list(F.ACTION_NAMES), list(F.RULE_IDS)]
    return hashlib.sha256(json.dumps(pinned).encode()).hexdigest()[:16]


@cache
def contexts(sample: str) -> tuple[Context, ...]:
    return tuple(Context(t.source.source, t.spec.launch, t.kernel.name, t.spec)
                 for t in collect([SAMPLES / f"{sample}.cu"]))


@cache
def offers(sample: str) -> tuple[tuple[Context, Offer], ...]:
    engine = Engine.default()
    return tuple((ctx, o) for ctx in contexts(sample) for o in engine.offers(ctx))


def state(ctx: Context, **kwargs: object) -> dict[str, float]:
    return dict(zip(F.STATE_NAMES, F.state_features(ctx, **kwargs)))  # type: ignore[arg-type]


def action(ctx: Context, offer: Offer) -> dict[str, float]:
    return dict(zip(F.ACTION_NAMES, F.action_features(ctx, offer)))


def offer_by_id(sample: str, action_id: str) -> tuple[Context, Offer]:
    return next((c, o) for c, o in offers(sample) if o.action.id == action_id)


def test_the_schema_is_pinned() -> None:
    assert schema_hash() == SCHEMA_HASH, (
        "the feature names, their order or RULE_IDS changed: bump SCHEMA_VERSION in cuopt/search/features.py "
        f"(models trained on the old features must not load) and set SCHEMA_HASH to {schema_hash()!r}")


def test_schema_lists_the_names() -> None:
    assert F.schema() == {"version": F.SCHEMA_VERSION, "state": list(F.STATE_NAMES), "action": list(F.ACTION_NAMES)}
    assert len(set(F.STATE_NAMES)) == len(F.STATE_NAMES)
    assert len(set(F.ACTION_NAMES)) == len(F.ACTION_NAMES)


def test_rule_ids_name_rules_of_the_registry() -> None:
    """RULE_IDS names rule folders; a folder it does not name (a rule added since the schema) is
    `rule:other` until the next retrain."""
    rules = set(load_rules(data_dir("rules")))
    gone = sorted(set(F.RULE_IDS) - rules)
    assert not gone, (f"RULE_IDS names {gone}, which no folder of rules/ holds: a rule renamed or removed "
                      "changes the schema (bump SCHEMA_VERSION, update SCHEMA_HASH, retrain)")
    assert list(F.RULE_IDS) == sorted(set(F.RULE_IDS))


@pytest.mark.parametrize("sample", sample_names())
def test_state_features_are_finite_and_deterministic(sample: str) -> None:
    for ctx in contexts(sample):
        first = F.state_features(ctx)
        fresh = Context(ctx.source, ctx.launch, ctx.kernel_name, ctx.spec)
        assert len(first) == len(F.STATE_NAMES)
        assert all(isinstance(x, float) and math.isfinite(x) for x in first)
        assert F.state_features(fresh) == first
        assert state(ctx)["flag:analysis_failed"] == 0.0
        with_resources = F.state_features(ctx, {"registers": 64, "shared_bytes": 4096, "spills": 8},
                                          {"sms": 108, "arch": "sm_80"})
        assert len(with_resources) == len(F.STATE_NAMES) and all(math.isfinite(x) for x in with_resources)


@pytest.mark.parametrize("sample", sample_names())
def test_action_features_of_every_offer(sample: str) -> None:
    pairs = offers(sample)
    assert pairs
    for ctx, offer in pairs:
        values = F.action_features(ctx, offer)
        assert len(values) == len(F.ACTION_NAMES), offer.action.id
        assert all(isinstance(x, float) and math.isfinite(x) for x in values), offer.action.id
        assert F.action_features(ctx, offer) == values
        named = dict(zip(F.ACTION_NAMES, values))
        rule = offer.action.rule if offer.action.rule in F.RULE_IDS else "other"
        assert named[f"rule:{rule}"] == 1.0
        assert named["delta:failed"] == 0.0
        assert named["launch:changes"] == float(offer.changes_launch)


def test_a_rule_outside_the_schema_is_other() -> None:
    ctx, offer = offers("saxpy")[0]
    renamed = dataclasses.replace(offer, action=dataclasses.replace(offer.action, rule="some-new-rule"))
    named = action(ctx, renamed)
    assert named["rule:other"] == 1.0
    assert all(named[f"rule:{r}"] == 0.0 for r in F.RULE_IDS)


def test_parameters_are_encoded_by_position_and_word() -> None:
    ctx, offer = offer_by_id("matmul", "block-size@2:1/block=32x4")
    named = action(ctx, offer)
    assert named["param0:log2"] == 7.0 and named["param:shape2d"] == 1.0
    assert named["launch:block_x_ratio"] == 1.0 and named["launch:block_y_ratio"] == -2.0
    ctx, offer = offer_by_id("softmax", "row-parallel@2:1/unit=warp,block=256")
    named = action(ctx, offer)
    assert named["param:warp"] == 1.0 and named["param1:log2"] == 8.0 and named["param0:numeric"] == 0.0


def test_result_deltas_follow_the_rewrite() -> None:
    ctx, offer = offer_by_id("matmul", "smem-tile@8:9/tile=16")
    named = action(ctx, offer)
    assert named["delta:shared"] > 0 and named["delta:barriers"] > 0 and named["delta:bytes_ratio"] > 0
    assert named["launch:grid_blocks_ratio"] == 0.0  # 16 x 16 tiles for a 16 x 16 block
    ctx, offer = offer_by_id("histogram", "privatize@6:9/per_thread=16")
    named = action(ctx, offer)
    assert named["delta:shared"] == 1.0 and named["delta:grid_stride"] > 0  # one __shared__ array
    assert named["launch:grid_blocks_ratio"] == -4.0


def test_access_patterns_and_reuse() -> None:
    matmul, = contexts("matmul")
    s = state(matmul)
    assert s["access:reuse_invariant_frac"] == 1.0  # A ignores threadIdx.x, B ignores threadIdx.y
    assert s["access:coalesced_frac"] == pytest.approx(2 / 3)
    assert s["work:intensity"] > 8  # 2*M*N*K flops over 3 matrices
    stencil, = contexts("stencil2d")
    assert state(stencil)["access:reuse_overlap_frac"] == 1.0  # neighbours read each other's cells
    conv, = contexts("conv1d")
    assert state(conv)["access:reuse_overlap_frac"] == 0.5  # x[i + j] slides, w[j] is shared


def test_occupancy_from_registers_and_shared_memory() -> None:
    matmul, = contexts("matmul")  # 256 threads
    s = state(matmul, resources={"registers": 128, "shared_bytes": 0, "spills": 0})
    assert s["occ:fraction"] == 0.25 and s["occ:limit_registers"] == 1.0
    s = state(matmul, resources={"registers": 32, "shared_bytes": 100_000, "spills": 0})
    assert s["occ:fraction"] == 0.25 and s["occ:limit_shared"] == 1.0
    s = state(matmul)
    assert s["occ:fraction"] == 1.0 and s["occ:limit_threads"] == 1.0 and s["flag:resources_known"] == 0.0


def test_device_limits() -> None:
    assert F.device_limits(None) == F.DEFAULT_LIMITS
    limits = F.device_limits({"sms": 84, "max_threads_per_sm": 1536, "max_shared_per_sm": 0, "arch": "sm_89"})
    assert limits["sms"] == 84 and limits["max_threads_per_sm"] == 1536
    assert limits["max_shared_per_sm"] == F.DEFAULT_LIMITS["max_shared_per_sm"]
    assert limits["max_blocks_per_sm"] == 24


def test_without_a_spec_the_sizes_are_unknown() -> None:
    matmul, = contexts("matmul")
    ctx = Context(matmul.source, matmul.launch, matmul.kernel_name)
    s = state(ctx)
    assert s["flag:spec"] == 0.0 and s["flag:launch_known"] == 0.0 and s["work:flops"] == 0.0
    assert s["flag:analysis_failed"] == 0.0 and s["access:global"] > 0


def test_analysis_failures_give_zeros_and_a_flag() -> None:
    saxpy, = contexts("saxpy")
    ctx = Context(saxpy.source, Launch((128,), saxpy.launch.grid), "no_such_kernel", saxpy.spec)
    s = state(ctx)
    assert s["flag:analysis_failed"] == 1.0 and s["access:global"] == 0.0 and s["launch:block_threads"] == 7.0
    _, offer = offers("saxpy")[0]
    named = action(ctx, offer)
    assert named["delta:failed"] == 1.0 and len(named) == len(F.ACTION_NAMES)
