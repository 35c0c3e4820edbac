"""The literal finder the rule matcher runs on every line: exact, overlaps included."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from minrepro.diagnose.literals import LiteralSet, any_of, trie_pattern

_WORDS = st.lists(st.text(alphabet="ab c", min_size=1, max_size=4), max_size=8)


@settings(max_examples=400, deadline=None)
@given(_WORDS, st.text(alphabet="ab cd", max_size=30))
def test_present_finds_exactly_the_words_that_occur(words: list[str], text: str) -> None:
    expected = sorted({w for w in words if w in text})
    assert LiteralSet(words).present(text) == expected  # word by word, before the trie
    assert LiteralSet(words, naive_calls=0).present(text) == expected  # the trie


@settings(max_examples=300, deadline=None)
@given(_WORDS, st.text(alphabet="ab cd", max_size=30))
def test_the_aho_corasick_scanner_finds_the_same_words(words: list[str], text: str) -> None:
    """Where hyperscan is not used (no wheel: MINREPRO_ENGINE says so here), a set past its
    word-by-word phase searches with an Aho-Corasick automaton, not the trie: same answers,
    overlapping and nested words included."""
    import os

    import pytest

    pytest.importorskip("ahocorasick_rs")
    from minrepro.diagnose import literals

    expected = sorted({w for w in words if w in text})
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(os, "environ", {**os.environ, "MINREPRO_ENGINE": "ahocorasick"})
        patch.setattr(literals, "_TRIES", {})
        patch.setattr(literals, "_SCANNERS", {})
        found = LiteralSet(words, naive_calls=0)
        assert found.present(text) == expected
        if found.words:  # (no words: nothing to build, the empty trie answers)
            assert found._pattern is None and found._present is not None


@settings(max_examples=200, deadline=None)
@given(_WORDS, st.lists(st.text(alphabet="ab cd", max_size=12), max_size=6))
def test_any_of_answers_the_same_before_and_after_the_trie(words: list[str],
                                                           texts: list[str]) -> None:
    """The first texts are tested word by word, the rest by the compiled trie: same answers."""
    holds = any_of(words, naive_calls=2)
    assert [holds(t) for t in texts] == [any(w and w in t for w in words) for t in texts]


@settings(max_examples=200, deadline=None)
@given(_WORDS, st.text(alphabet="ab cd", max_size=30))
def test_the_trie_pattern_finds_a_word_wherever_one_occurs(words: list[str], text: str) -> None:
    found = re.search(trie_pattern(words), text) is not None
    assert found == any(w in text for w in words)


def test_overlapping_and_nested_words() -> None:
    words = LiteralSet(["loss", "loss scale", "scale", "oss", "nan"])
    assert words.present("the loss scale fell") == ["loss", "loss scale", "oss", "scale"]
    assert words.present("no hint here") == []
    assert LiteralSet([]).present("anything") == []


def test_a_cached_scanner_is_used_from_the_first_text(tmp_path, monkeypatch) -> None:  # noqa: ANN001
    """With hyperscan imported (a big log's selector) and the set's compiled scanner in the
    cache, a new set scans with it at once: no word-by-word or trie phase; answers the same."""
    import pytest

    hyperscan = pytest.importorskip("hyperscan")
    from minrepro.diagnose import literals

    monkeypatch.setenv("MINREPRO_CACHE", str(tmp_path))
    words = ("cuda out of memory", "nccl watchdog", "traceback zq")  # a set of this test only
    monkeypatch.setattr(literals, "_SCANNERS", {})
    assert not literals._cached_scanner(tuple(sorted(words)))  # nothing cached yet
    literals._hyperscan_present(tuple(sorted(words)))  # compiles and saves it
    monkeypatch.setattr(literals, "_SCANNERS", {})  # a fresh process
    assert "hyperscan" in __import__("sys").modules and hyperscan
    fresh = LiteralSet(words)
    assert fresh.present("RuntimeError: cuda out of memory; nccl watchdog") == [
        "cuda out of memory", "nccl watchdog"]
    assert fresh._present is not None and fresh._trie_left == literals.TRIE_LINES
