"""samples/vendor.py, the vendor-library timings of the samples: every sample with a spec has an
equivalent that stands for one of its output buffers; with PyTorch installed, every equivalent matches
its float64 reference on the CPU at the sample's smallest check size."""
from __future__ import annotations

import importlib.util
import sys
from types import ModuleType

import pytest

from cuopt.spec.model import Buffer
from cuopt.targets import collect

from tests.conftest import SAMPLES, sample_files


@pytest.fixture(scope="module")
def vendor() -> ModuleType:
    spec = importlib.util.spec_from_file_location("cuopt_samples_vendor", SAMPLES / "vendor.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up by name
    try:
        spec.loader.exec_module(module)
        yield module
    finally:
        del sys.modules[spec.name]


def test_every_sample_with_a_spec_has_an_equivalent(vendor: ModuleType) -> None:
    kernels = {t.kernel.name for t in collect(sample_files())}
    assert kernels, "no samples with a spec"
    assert sorted(kernels) == sorted(vendor.EQUIVALENTS)


def test_each_equivalent_stands_for_an_output_buffer(vendor: ModuleType) -> None:
    for target in collect(sample_files()):
        eq = vendor.EQUIVALENTS[target.kernel.name]
        buf = target.spec.arg(eq.output)
        assert isinstance(buf, Buffer) and buf.role in ("out", "inout"), (target.kernel.name, eq.output)
        assert eq.op


def test_without_torch_it_says_so(vendor: ModuleType, capsys: pytest.CaptureFixture[str]) -> None:
    if vendor.torch is not None:
        pytest.skip("PyTorch is installed")
    assert vendor.main([]) == 2
    assert "PyTorch is not installed" in capsys.readouterr().err


@pytest.mark.parametrize("name", sorted(p.name.removesuffix(".cuopt.toml") for p in SAMPLES.glob("*.cuopt.toml")))
def test_equivalent_matches_its_reference_on_the_cpu(vendor: ModuleType, name: str) -> None:
    pytest.importorskip("torch")
    [target] = collect([SAMPLES / f"{name}.cu"])
    smallest = min(target.bound.instances(), key=lambda i: i.bytes_moved())
    _, ok, worst = vendor.check(target, smallest, "cpu")
    assert ok, f"{name} at {smallest.sizes}: max abs err {worst}"
