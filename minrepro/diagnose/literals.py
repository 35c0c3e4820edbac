"""Find which of many literal strings occur in a text, fast.

A flat alternation of a hundred literals makes `re` try each one at every position; a trie-shaped
pattern (common prefixes factored out) lets it reject most positions after one character.
`hyperscan`, where installed, scans whole chunks for all literals at once (see scan.py).
"""

from __future__ import annotations

import functools
import os
import re
import threading
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


@functools.lru_cache(maxsize=16)
def _compiled_trie(words: tuple[str, ...]) -> re.Pattern[str]:
    """One compiled trie per set of literals: a process diagnosing many logs (triage) builds
    each matcher's pattern once, not once a log."""
    return re.compile(trie_pattern(words))


def _emit(node: dict) -> str:
    if "" in node:  # a word ends here: whatever follows, the shortest match suffices for search
        return ""
    branches = [re.escape(char) + _emit(child) for char, child in sorted(node.items())]
    return branches[0] if len(branches) == 1 else "(?:" + "|".join(branches) + ")"


TRIE_LINES = 4000  # lines a LiteralSet reads with the trie before it builds a faster scanner


class LiteralSet:
    """Literals; `present(text)` says which occur in a text (lower-cased already, unless
    `fold_case` is False: then the literals are matched as they are written)."""

    def __init__(self, words: Iterable[str], *, fold_case: bool = True) -> None:
        self.words = tuple(sorted({w.lower() if fold_case else w for w in words if w}))
        self._present: Callable[[str], list[str]] | None = None  # chosen after TRIE_LINES
        self._calls = 0
        # Each word under its shortest prefix that is itself a word: the trie finds that prefix
        # wherever the word starts, so only the words of that bucket need a startswith there.
        self._bucket: dict[str, list[str]] = {}
        for word in self.words:  # sorted: a word's shorter prefixes come before it
            shortest = next((word[:n] for n in range(1, len(word)) if word[:n] in self._bucket),
                            word)
            self._bucket.setdefault(shortest, []).append(word)

    def present(self, text: str) -> list[str]:
        """Which of the literals occur (exact, including overlapping ones), in sorted order.
        The first lines go to the trie (compiled in milliseconds); after TRIE_LINES, to
        hyperscan where installed (tens of milliseconds to compile, then ~10x faster)."""
        if self._present is None:
            self._calls += 1
            if self._calls <= TRIE_LINES:
                return self._trie_present(text)
            self._present = _hyperscan_present(self.words) or self._trie_present
        return self._present(text)

    def _trie_present(self, text: str) -> list[str]:
        pattern = _compiled_trie(self.words)
        found: set[str] = set()
        match = pattern.search(text)
        while match:  # each start of a word, overlaps included
            start = match.start()
            found.update(word for word in self._bucket[match.group()]
                         if text.startswith(word, start))
            match = pattern.search(text, start + 1)
        return sorted(found)


@functools.lru_cache(maxsize=32)
def _hyperscan_present(words: tuple[str, ...]) -> Callable[[str], list[str]] | None:
    """`present` by one hyperscan scan of the text's UTF-8 (a substring of the text is a
    substring of its bytes and back), each literal reported once: ~0.5 us a line, where
    the trie's search from every start of a frequent literal costs microseconds each.
    None where hyperscan is not installed (or MINREPRO_ENGINE names another engine).
    Compiled once per set of literals (a triage worker builds an ExtractorSet a log)."""
    if not words or os.environ.get("MINREPRO_ENGINE", "hyperscan") not in ("hyperscan", ""):
        return None
    try:
        import hyperscan  # noqa: PLC0415 - optional, and only imported when first needed
    except ImportError:  # pragma: no cover - depends on the platform's wheels
        return None
    expressions = ["".join(f"\\x{b:02x}" for b in w.encode("utf-8", "surrogatepass")).encode()
                   for w in words]
    database = hyperscan.Database()
    try:
        database.compile(expressions=expressions, ids=list(range(len(words))),
                         elements=len(words), flags=[hyperscan.HS_FLAG_SINGLEMATCH] * len(words))
    except Exception:  # noqa: BLE001 - any accelerator failure falls back to the trie
        return None
    scan = database.scan
    local = threading.local()  # a scratch space a thread: one is in use while a scan runs

    def present(text: str) -> list[str]:
        found: list[int] = []
        scratch = getattr(local, "scratch", None)
        if scratch is None:
            scratch = local.scratch = hyperscan.Scratch(database)
        scan(text.encode("utf-8", "surrogatepass"),
             match_event_handler=lambda index, _start, _end, _flags, _context:
             found.append(index), scratch=scratch)
        found.sort()
        return [words[index] for index in found]

    return present


def minimal(words: Iterable[str]) -> list[str]:
    """The words that contain no other word of the set (a shorter one already decides)."""
    unique = sorted(set(words), key=len)
    return [w for w in unique if not any(o != w and o in w for o in unique)]


def any_of(words: Iterable[str]) -> Callable[[str], bool]:
    """A test "does the text hold any of these literals?" (case-sensitive): `in` for one
    word, else one trie-shaped regex, compiled on first use (start-up stays fast)."""
    kept = minimal(w for w in words if w)
    if not kept:
        return lambda text: False
    if len(kept) == 1:
        word = kept[0]
        return lambda text: word in text
    search: list[Callable[[str], re.Match[str] | None]] = []

    def holds(text: str) -> bool:
        if not search:
            search.append(re.compile(trie_pattern(kept)).search)
        return search[0](text) is not None

    return holds
