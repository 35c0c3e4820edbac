"""Find which of many literal strings occur in a text, fast.

A flat alternation of a hundred literals makes `re` try each one at every position; a trie-shaped
pattern (common prefixes factored out) lets it reject most positions after one character.
`hyperscan`, where installed, scans whole chunks for all literals at once (see scan.py).
"""

from __future__ import annotations

import functools
import importlib.util
import os
import re
import sys
import threading
from collections.abc import Callable, Iterable
from types import ModuleType

from minrepro.diagnose import hscache


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
TRIE_LINES = 4000  # then a hyperscan scanner, where installed, is built and used


class _TrieWhenDue:
    """A set of literals' compiled trie, once it pays: at once where this process already
    has it, else after `naive_calls` texts its user tested word by word."""

    def __init__(self, words: tuple[str, ...], naive_calls: int) -> None:
        self.words = words
        self.naive_left = naive_calls

    def due(self) -> bool:
        """Whether the word-by-word phase is over (at once where this process compiled the
        trie already); a text asked about during it counts towards it."""
        if self.words in _TRIES:
            return True
        if self.naive_left > 0:
            self.naive_left -= 1
            return False
        return True

    def pattern(self) -> re.Pattern[str] | None:
        """The trie, or None: test this text word by word."""
        return _compiled_trie(self.words) if self.due() else None


class LiteralSet:
    """Literals; `present(text)` says which occur in a text (lower-cased already, unless
    `fold_case` is False: then the literals are matched as they are written)."""

    def __init__(self, words: Iterable[str], naive_calls: int = NAIVE_CALLS, *,
                 fold_case: bool = True) -> None:
        self.words = tuple(sorted({w.lower() if fold_case else w for w in words if w}))
        self._present: Callable[[str], list[str]] | None = _SCANNERS.get(self.words)
        self._cache_looked = False  # whether a compiled scanner was looked for in the cache
        self._pattern: re.Pattern[str] | None = None  # compiled after naive_calls texts
        self._trie = _TrieWhenDue(self.words, naive_calls)
        self._trie_left = TRIE_LINES
        self._bucket: dict[str, list[str]] | None = None  # built with the trie's first use

    def _buckets(self) -> dict[str, list[str]]:
        """Each word under its shortest prefix that is itself a word: the trie finds that
        prefix wherever the word starts, so only the words of that bucket need a startswith
        there."""
        if self._bucket is None:
            self._bucket = {}
            for word in self.words:  # sorted: a word's shorter prefixes come before it
                shortest = next((word[:n] for n in range(1, len(word))
                                 if word[:n] in self._bucket), word)
                self._bucket.setdefault(shortest, []).append(word)
        return self._bucket

    def present(self, text: str) -> list[str]:
        """Which of the literals occur (exact, including overlapping ones), in sorted order:
        word by word for the first naive_calls texts, then by the trie; after TRIE_LINES
        more, by one hyperscan scan where installed (its compile costs tens of milliseconds,
        then a line costs ~0.5 us, where the trie's search from every start of a frequent
        literal costs microseconds each). Every way gives the same answer. Where hyperscan
        is already imported (a big log's selector uses it) and this set's compiled scanner is
        in the cache (hscache), that scanner is used from the first text."""
        if self._present is not None:
            return self._present(text)
        if not self._cache_looked:
            self._cache_looked = True
            self._present = _cached_scanner(self.words)
            if self._present is not None:
                return self._present(text)
        if self._pattern is None:
            if not self._trie.due():
                return [word for word in self.words if word in text]
            if self.words not in _TRIES and not _hyperscan_used():
                # where hyperscan is not used, an Aho-Corasick automaton builds faster than
                # the trie compiles, and searches faster
                self._present = _scanner(self.words)
                if self._present is not None:
                    return self._present(text)
            self._pattern = _compiled_trie(self.words)
        self._trie_left -= 1
        if self._trie_left < 0:
            self._present = _scanner(self.words) or self._trie_present
        return self._trie_present(text)

    def _trie_present(self, text: str) -> list[str]:
        pattern = self._pattern or _compiled_trie(self.words)
        found: set[str] = set()
        buckets = self._buckets()
        match = pattern.search(text)
        while match:  # each start of a word, overlaps included
            start = match.start()
            found.update(word for word in buckets[match.group()]
                         if text.startswith(word, start))
            match = pattern.search(text, start + 1)
        return sorted(found)


_SCANNERS: dict[tuple[str, ...], Callable[[str], list[str]]] = {}


def _scanner(words: tuple[str, ...]) -> Callable[[str], list[str]] | None:
    """The hyperscan `present` for these words (where hyperscan is not used, the
    Aho-Corasick one), built once per process (a triage worker builds an ExtractorSet a
    log)."""
    if words not in _SCANNERS:
        built = _hyperscan_present(words) or _ahocorasick_present(words)
        if built is None:
            return None
        if len(_SCANNERS) >= 16:
            _SCANNERS.clear()
        _SCANNERS[words] = built
    return _SCANNERS[words]


def _cached_scanner(words: tuple[str, ...]) -> Callable[[str], list[str]] | None:
    """The hyperscan scanner of `words`, when it costs nothing to get: hyperscan imported
    already and the compiled database in the cache (else None: the naive and trie phases)."""
    hyperscan = sys.modules.get("hyperscan")
    if hyperscan is None or not words or not _hyperscan_allowed():
        return None
    if words not in _SCANNERS and not hscache.cached(hyperscan, _expressions(words),
                                                     _flags(hyperscan, words)):
        return None
    return _scanner(words)


def _hyperscan_allowed() -> bool:
    return os.environ.get("MINREPRO_ENGINE", "hyperscan") in ("hyperscan", "")


def _hyperscan_used() -> bool:
    """Whether the scanners here are hyperscan's (installed, and not ruled out)."""
    return _hyperscan_allowed() and _installed("hyperscan")


@functools.cache
def _installed(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


def _expressions(words: tuple[str, ...]) -> list[bytes]:
    return ["".join(f"\\x{b:02x}" for b in w.encode("utf-8", "surrogatepass")).encode()
            for w in words]


def _flags(hyperscan: ModuleType, words: tuple[str, ...]) -> list[int]:
    return [hyperscan.HS_FLAG_SINGLEMATCH] * len(words)


def _hyperscan_present(words: tuple[str, ...]) -> Callable[[str], list[str]] | None:
    """`present` by one hyperscan scan of the text's UTF-8 (a substring of the text is a
    substring of its bytes and back), each literal reported once: ~0.5 us a line, where
    the trie's search from every start of a frequent literal costs microseconds each.
    None where hyperscan is not installed (or MINREPRO_ENGINE names another engine)."""
    if not words or not _hyperscan_allowed():
        return None
    try:
        import hyperscan  # noqa: PLC0415 - optional, and only imported when first needed
    except ImportError:  # pragma: no cover - depends on the platform's wheels
        return None
    try:
        database = hscache.database(hyperscan, _expressions(words), _flags(hyperscan, words))
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


def _ahocorasick_present(words: tuple[str, ...]) -> Callable[[str], list[str]] | None:
    """`present` by one Aho-Corasick search (ahocorasick-rs) of the text, overlapping matches
    included: the scanner where hyperscan has no wheel. None where it is not installed."""
    if not words or not _installed("ahocorasick_rs"):
        return None
    import ahocorasick_rs  # noqa: PLC0415 - optional, and only imported when first needed

    find = ahocorasick_rs.AhoCorasick(words).find_matches_as_indexes

    def present(text: str) -> list[str]:
        found = {index for index, _start, _end in find(text, overlapping=True)}
        return [words[index] for index in sorted(found)]

    return present


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
    trie = _TrieWhenDue(tuple(kept), naive_calls)

    def holds(text: str) -> bool:
        if not search:
            pattern = trie.pattern()
            if pattern is None:
                return any(word in text for word in kept)
            search.append(pattern.search)
        return search[0](text) is not None

    return holds
