"""CUDA's vector types for the rules that load and store several elements at once (vectorize,
window, row-cache)."""
from __future__ import annotations

from cuopt.rewrite.context import Refuse
from cuopt.source import ctypes


def vector_type(element: str, width: int) -> str:
    """CUDA's `width`-wide vector of `element` (cuopt/source/ctypes.py); Refuse where it has none."""
    vt = ctypes.vector_type(element, width)
    if vt is None:
        raise Refuse(f"no {width}-wide vector type for {element}")
    return vt
