"""Shared fixtures: sample paths, GPU and nvcc detection, an isolated cache."""
from __future__ import annotations

import functools
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "samples"


@functools.lru_cache(maxsize=1)
def gpu_available() -> bool:
    try:
        import pycuda.driver as drv

        drv.init()
        return drv.Device.count() > 0
    except Exception:
        return False


def nvcc_available() -> bool:
    from cuopt.evaluate.compile import find_nvcc

    return find_nvcc() is not None


requires_nvcc = pytest.mark.skipif(not nvcc_available(), reason="nvcc (CUDA toolkit) is not installed")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if any("gpu" in item.keywords for item in items) and not gpu_available():
        skip = pytest.mark.skip(reason="needs a CUDA GPU and pycuda (run `pytest -m gpu` on a GPU machine)")
        for item in items:
            if "gpu" in item.keywords:
                item.add_marker(skip)


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Compiled cubins are shared across a session, device measurements too; nothing touches ~/.cache."""
    monkeypatch.setenv("CUOPT_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "cuopt-cache"))


@pytest.fixture
def samples(tmp_path: Path) -> Path:
    """A private copy of the top-level samples (not samples/programs/, samples/spelled/ or samples/shapes/) that
    a test may modify."""
    dest = tmp_path / "samples"
    shutil.copytree(SAMPLES, dest,
                    ignore=lambda d, names: ["programs", "spelled", "shapes"] if Path(d) == SAMPLES else [])
    return dest


def sample_files() -> list[Path]:
    """The top-level samples, each with its spec; the programs under samples/programs/ are not among them."""
    return sorted(SAMPLES.glob("*.cu"))


def sample_names() -> list[str]:
    return [p.stem for p in sample_files()]


@pytest.fixture(scope="module")
def gpu_client():
    """A GPU worker shared by a test module (launches time out after 5 s)."""
    from cuopt.evaluate.device import open_gpu

    client = open_gpu(timeout_s=5.0)
    yield client
    client.close()
