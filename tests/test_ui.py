"""Terminal output keeps the user's names as written."""
from __future__ import annotations

import pytest

from cuopt import ui


@pytest.mark.parametrize("make", [ui.console, ui.err_console])
def test_a_kernel_named_like_an_emoji_code_prints_as_written(make, capsys: pytest.CaptureFixture[str]) -> None:
    make().print("seismic.cu:wave: 20 evaluations, best 1.16x; fire.cu:fire: 3")
    out = capsys.readouterr()
    assert "seismic.cu:wave: 20 evaluations" in out.out + out.err
    assert "fire.cu:fire: 3" in out.out + out.err
