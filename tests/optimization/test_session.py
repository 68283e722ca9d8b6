"""The measurement cache's context: what a cached measurement was taken for."""
from __future__ import annotations

from dataclasses import replace

from cuopt.optimization.session import context_hash
from cuopt.targets import collect

from tests.conftest import SAMPLES

DEVICE = {"name": "NVIDIA H200", "driver": "580"}


def test_the_spec_s_kernel_key_is_part_of_the_context() -> None:
    """Same source and launch, another instantiation launched: not the same measurement."""
    target = collect([SAMPLES / "saxpy.cu"])[0]
    plain = context_hash(target, DEVICE)

    def instantiating(kernel: str):
        return replace(target, bound=replace(target.bound, spec=replace(target.spec, kernel=kernel)))

    named, other = instantiating("saxpy"), instantiating("saxpy_v2")
    assert context_hash(named, DEVICE) != context_hash(other, DEVICE)
    assert context_hash(target, DEVICE) == plain  # no `kernel` key: earlier caches stay valid
    assert context_hash(target, {**DEVICE, "name": "other"}) != plain


def test_macro_sizes_are_part_of_the_context_with_how_they_are_set() -> None:
    import hashlib
    import json

    from cuopt import __version__
    from cuopt.optimization.session import SEARCH_TIMING

    target = collect([SAMPLES / "saxpy.cu"])[0]
    sized = replace(target, macro_sizes=frozenset({"n"}))
    assert context_hash(sized, DEVICE) != context_hash(target, DEVICE)
    spec = target.spec
    as_with_defines = [__version__, DEVICE["name"], DEVICE["driver"], str(SEARCH_TIMING), repr(spec.sizes),
                       repr(spec.check_sizes), repr(spec.args), repr(spec.tolerance), spec.seed, [], ["n"]]
    old = hashlib.sha256(json.dumps(as_with_defines, default=str).encode()).hexdigest()[:16]
    assert context_hash(sized, DEVICE) != old  # builds that passed -Dn=... measured something else
