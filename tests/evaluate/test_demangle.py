"""Reading the template instantiation a demangled entry symbol names."""
from __future__ import annotations

from cuopt.evaluate.demangle import instantiation_of, matches
from cuopt.source.templates import Instantiation, parse_instantiation


def test_instantiation_of_a_demangled_symbol() -> None:
    assert instantiation_of("void ns::scale<float, 256>(float*, float const*, float, int)") == \
        Instantiation("scale", ("float", "256"))
    assert instantiation_of("void k<Pair<int, 2>, 3u>(int*)") == Instantiation("k", ("Pair<int, 2>", "3u"))
    assert instantiation_of("saxpy(int, float, float const*, float*)") is None
    assert instantiation_of("plain") is None


def test_matches_compares_types_and_values() -> None:
    found = Instantiation("k", ("unsigned int", "256u"))
    assert matches(found, parse_instantiation("k<unsigned, 0x100>"))
    assert not matches(found, parse_instantiation("k<int, 256>"))
    assert not matches(found, parse_instantiation("j<unsigned, 256>"))
    assert not matches(found, parse_instantiation("k<unsigned>"))
