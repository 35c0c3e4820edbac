"""Find which of many literal strings occur in a text, fast.

A flat alternation of a hundred literals makes `re` try each one at every position; a trie-shaped
pattern (common prefixes factored out) lets it reject most positions after one character.
`hyperscan`, where installed, scans whole chunks for all literals at once (see scan.py).
"""

from __future__ import annotations

import re
from collections.abc import Iterable


def trie_pattern(words: Iterable[str]) -> str:
    """A regex source matching exactly the given literals, shaped as a trie."""
    trie: dict = {}
    for word in sorted(set(words)):
        node = trie
        for char in word:
            node = node.setdefault(char, {})
        node[""] = {}  # end of a word
    return _emit(trie) if trie else r"(?!)"


def _emit(node: dict) -> str:
    ends = "" in node
    branches = [re.escape(char) + _emit(child) for char, child in sorted(node.items()) if char]
    if not branches:
        return ""
    body = branches[0] if len(branches) == 1 else "(?:" + "|".join(branches) + ")"
    if ends:  # a shorter word ends here: the rest is optional (the shortest match suffices)
        return ""
    return body


class LiteralSet:
    """Lower-case literals; `search(lowered)` says whether any occurs in an already-lowered text."""

    def __init__(self, words: Iterable[str]) -> None:
        self.words = tuple(sorted({w.lower() for w in words if w}))
        self._pattern: re.Pattern[str] | None = None  # compiled on first use (start-up)

    def search(self, lowered: str) -> bool:
        if self._pattern is None:
            self._pattern = re.compile(trie_pattern(self.words))
        return self._pattern.search(lowered) is not None

    def present(self, lowered: str) -> list[str]:
        """Which of the literals occur (exact, including overlapping ones)."""
        return [w for w in self.words if w in lowered] if self.search(lowered) else []
