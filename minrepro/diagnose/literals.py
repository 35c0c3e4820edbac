"""Find which of many literal strings occur in a text, fast.

A flat alternation of a hundred literals makes `re` try each one at every position; a trie-shaped
pattern (common prefixes factored out) lets it reject most positions after one character.
`hyperscan`, where installed, scans whole chunks for all literals at once (see scan.py).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable


def trie_pattern(words: Iterable[str]) -> str:
    """A trie-shaped regex source that finds where any of the literals occurs (a literal that
    extends a shorter one adds nothing: the shorter one is found first)."""
    trie: dict = {}
    for word in sorted(set(words)):
        node = trie
        for char in word:
            node = node.setdefault(char, {})
        node[""] = {}  # end of a word
    return _emit(trie) if trie else r"(?!)"


_TRIES: dict[tuple[str, ...], re.Pattern[str]] = {}


def _compiled_trie(words: tuple[str, ...]) -> re.Pattern[str]:
    """One compiled trie per set of literals: a process diagnosing many logs (triage) builds
    each matcher's pattern once, not once a log."""
    if len(_TRIES) >= 16:  # user packs vary the sets; keep the cache small
        _TRIES.clear()
    if words not in _TRIES:
        _TRIES[words] = re.compile(trie_pattern(words))
    return _TRIES[words]


def _emit(node: dict) -> str:
    if "" in node:  # a word ends here: whatever follows, the shortest match suffices for search
        return ""
    branches = [re.escape(char) + _emit(child) for char, child in sorted(node.items())]
    return branches[0] if len(branches) == 1 else "(?:" + "|".join(branches) + ")"


# Texts tested word by word (`in`) before the trie is compiled: compiling a trie of hundreds of
# literals costs as much as testing a few hundred short lines one word at a time, so a short
# log (and the start of every log) never pays for it.
NAIVE_CALLS = 256


class LiteralSet:
    """Lower-case literals; `present(lowered)` says which occur in an already-lowered text."""

    def __init__(self, words: Iterable[str], naive_calls: int = NAIVE_CALLS) -> None:
        self.words = tuple(sorted({w.lower() for w in words if w}))
        self._pattern: re.Pattern[str] | None = None  # compiled after naive_calls texts
        self._naive_left = naive_calls
        # Each word under its shortest prefix that is itself a word: the trie finds that prefix
        # wherever the word starts, so only the words of that bucket need a startswith there.
        self._bucket: dict[str, list[str]] = {}
        for word in self.words:  # sorted: a word's shorter prefixes come before it
            shortest = next((word[:n] for n in range(1, len(word)) if word[:n] in self._bucket),
                            word)
            self._bucket.setdefault(shortest, []).append(word)

    def present(self, lowered: str) -> list[str]:
        """Which of the literals occur (exact, including overlapping ones), in sorted order."""
        if self._pattern is None:
            self._pattern = _TRIES.get(self.words)
        if self._pattern is None:
            if self._naive_left > 0:
                self._naive_left -= 1
                return [word for word in self.words if word in lowered]
            self._pattern = _compiled_trie(self.words)
        found: set[str] = set()
        match = self._pattern.search(lowered)
        while match:  # each start of a word, overlaps included
            start = match.start()
            found.update(word for word in self._bucket[match.group()]
                         if lowered.startswith(word, start))
            match = self._pattern.search(lowered, start + 1)
        return sorted(found)


def minimal(words: Iterable[str]) -> list[str]:
    """The words that contain no other word of the set (a shorter one already decides)."""
    unique = sorted(set(words), key=len)
    return [w for w in unique if not any(o != w and o in w for o in unique)]


def any_of(words: Iterable[str], naive_calls: int = NAIVE_CALLS) -> Callable[[str], bool]:
    """A test "does the text hold any of these literals?" (case-sensitive): `in` for one
    word, else `in` word by word for the first naive_calls texts, then one trie-shaped regex
    (start-up stays fast)."""
    kept = minimal(w for w in words if w)
    if not kept:
        return lambda text: False
    if len(kept) == 1:
        word = kept[0]
        return lambda text: word in text
    search: list[Callable[[str], re.Match[str] | None]] = []
    naive_left = [naive_calls]
    key = tuple(kept)

    def holds(text: str) -> bool:
        if not search and key in _TRIES:
            search.append(_TRIES[key].search)
        if not search:
            if naive_left[0] > 0:
                naive_left[0] -= 1
                return any(word in text for word in kept)
            search.append(_compiled_trie(key).search)
        return search[0](text) is not None

    return holds
