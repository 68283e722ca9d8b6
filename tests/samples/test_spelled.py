"""samples/spelled/ holds four samples as older code spells them: each is the spelling of its
sample (cuopt.training.spellings.older_code) under a two-line header, with the sample's spec."""
from __future__ import annotations

import pytest

from cuopt.training.spellings import older_code

from tests.conftest import SAMPLES

SPELLED = sorted(p.stem for p in (SAMPLES / "spelled").glob("*.cu"))


def test_the_four_benchmarked_samples_are_spelled() -> None:
    assert SPELLED == ["matmul", "matvec", "softmax", "stencil2d"]


@pytest.mark.parametrize("name", SPELLED)
def test_a_spelled_sample_is_its_sample_in_older_code_s_spelling(name: str) -> None:
    text = (SAMPLES / "spelled" / f"{name}.cu").read_text()
    body = text.split("\n", 2)[2]
    assert text.startswith(f"// samples/{name}.cu as older code spells it")
    assert body == older_code((SAMPLES / f"{name}.cu").read_text())
    assert (SAMPLES / "spelled" / f"{name}.cuopt.toml").read_text() == (SAMPLES / f"{name}.cuopt.toml").read_text()
