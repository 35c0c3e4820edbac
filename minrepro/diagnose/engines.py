"""Find trigger words in a block of log bytes at C speed: the engines behind `scan`.

Three engines give the same hits (offset, which trigger), fastest first:

* `hyperscan` (Intel's multi-pattern matcher; a default dependency where its wheel exists),
* `ahocorasick` (ahocorasick-rs, a Rust Aho-Corasick automaton; the default elsewhere),
* `re` (one trie-shaped pattern over the lower-cased bytes; the standard library only).

`best_engine()` names the first one importable here (MINREPRO_ENGINE=<name> picks another,
for the benchmark); `bench/run.py` prints it.
Offsets may differ by engine (hyperscan reports a match's end, the others its start); the
selector only needs a position inside the line.
"""

from __future__ import annotations

import functools
import importlib
import os
import re
from functools import cache
from types import ModuleType
from typing import Any, Protocol

from minrepro.diagnose import hscache
from minrepro.diagnose.literals import trie_pattern

ENGINES = ("hyperscan", "ahocorasick", "re")
_WORD_BYTES = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")

Hits = list[tuple[int, object]]
#: What a block arrives as: a view of the reader's reused buffer (or plain bytes in tests).
Buffer = bytes | bytearray | memoryview


class Engine(Protocol):
    drops_gil: bool  # whether a scan lets other threads run (a scan may then run ahead)

    def hits(self, block: Buffer) -> Hits: ...


@cache
def _module(name: str) -> ModuleType | None:
    """An optional accelerator, imported on first need; None where its wheel is missing."""
    try:
        return importlib.import_module({"hyperscan": "hyperscan"}.get(name, "ahocorasick_rs"))
    except ImportError:  # pragma: no cover - depends on the platform's wheels
        return None


def available(name: str) -> bool:
    return name == "re" or _module(name) is not None


def best_engine() -> str:
    chosen = os.environ.get("MINREPRO_ENGINE", "")
    if chosen in ENGINES and available(chosen):
        return chosen
    return next(name for name in ENGINES if available(name))


def build(name: str, literals: tuple[str, ...], words: tuple[str, ...]) -> Engine:
    """The engine `name` ("auto": the best here) for lower-case `literals` (anywhere, any
    case) and `words` (whole words only, in the cases written: list "nan" and "NaN"); an
    engine that fails to build falls back to the next.
    Built once per process for each set of words (hyperscan's compile takes ~55 ms, longer
    than diagnosing a small log; `hscache` keeps it between runs): engines hold no state
    between scans."""
    return _build(best_engine() if name == "auto" else name, literals, words)


@functools.lru_cache(maxsize=8)
def _build(name: str, literals: tuple[str, ...], words: tuple[str, ...]) -> Engine:
    order = ENGINES[ENGINES.index(name):]
    for candidate in order:
        engine = _try_build(candidate, literals, words)
        if engine is not None:
            return engine
    raise AssertionError("the re engine always builds")  # pragma: no cover


def _try_build(name: str, literals: tuple[str, ...], words: tuple[str, ...]) -> Engine | None:
    if not available(name):
        return None
    try:
        if name == "hyperscan":
            return _Hyperscan(literals, words)
        if name == "ahocorasick":
            return _AhoCorasick(literals, words)
    except Exception:  # noqa: BLE001 - any accelerator failure falls back to the next engine
        return None
    return _Regex(literals, words)


def _words_pattern(words: tuple[str, ...]) -> str:
    return r"\b(?:" + "|".join(re.escape(w) for w in words) + r")\b" if words else "(?!)"


class _Hyperscan:
    drops_gil = True  # hs_scan runs without the GIL: a scan can run beside Python work

    def __init__(self, literals: tuple[str, ...], words: tuple[str, ...]) -> None:
        hyperscan = _module("hyperscan")
        assert hyperscan is not None
        expressions = [re.escape(w).encode() for w in literals]
        flags = [hyperscan.HS_FLAG_CASELESS] * len(expressions)
        if words:  # in the cases written: "inf" and "Inf", not the INF of every INFO line
            expressions.append(_words_pattern(words).encode())
            flags.append(0)
        self._module = hyperscan
        self._spare: list[Any] = []  # scratch spaces not in use (list.pop/append: atomic)
        self._db = hscache.database(hyperscan, expressions, flags)

    def hits(self, block: Buffer) -> Hits:
        found: Hits = []
        # a scan holds its scratch; engines are shared by threads (a scan started ahead runs
        # in a thread of its own), so each takes a spare one and gives it back
        try:  # not `if self._spare`: another thread may take the last one in between
            scratch = self._spare.pop()
        except IndexError:
            scratch = self._module.Scratch(self._db)
        try:
            self._db.scan(block, match_event_handler=lambda pid, _f, end, _fl, _c:
                          found.append((end, pid)), scratch=scratch)
        finally:
            self._spare.append(scratch)
        return found


#: The Rust crate scans with its packed SIMD searcher (Teddy) only for a set this small; one
#: automaton of all ~220 trigger literals is a plain DFA, about half as fast as four of these.
_PACKED = 64


class _AhoCorasick:
    """Literals in automatons of at most _PACKED patterns over the lower-cased block; whole
    words in the cases written (`nan`, `NaN`), over the block as it is, their ends checked
    as `\\b` says (so "info" never counts as "inf")."""

    drops_gil = True  # the crate searches bytes without the GIL (the lowering holds it)

    def __init__(self, literals: tuple[str, ...], words: tuple[str, ...]) -> None:
        module = _module("ahocorasick")
        assert module is not None
        patterns = [p.encode() for p in dict.fromkeys(literals)]
        self._automatons = [(first, _automaton(module, patterns[first:first + _PACKED]))
                            for first in range(0, len(patterns), _PACKED)]
        self._first_word = len(patterns)
        spellings = list(dict.fromkeys(w.encode() for w in words))  # as written: nan, NaN ...
        lowered = list(dict.fromkeys(w.lower() for w in spellings))
        self._word_ids = [self._first_word + lowered.index(w.lower()) for w in spellings]
        self._words = _automaton(module, spellings) if spellings else None

    def hits(self, block: Buffer) -> Hits:
        lower = bytes(block).lower()
        found: Hits = [(start, first + pid) for first, automaton in self._automatons
                       for pid, start, _end in automaton.find_matches_as_indexes(lower)]
        if self._words is not None:
            size = len(block)
            found += [(start, self._word_ids[pid])
                      for pid, start, end in self._words.find_matches_as_indexes(block)
                      if (start == 0 or block[start - 1] not in _WORD_BYTES)
                      and (end == size or block[end] not in _WORD_BYTES)]
        return found


def _automaton(module: ModuleType, patterns: list[bytes]) -> Any:
    return module.BytesAhoCorasick(patterns, matchkind=module.MATCHKIND_LEFTMOST_LONGEST,
                                   implementation=module.Implementation.DFA)


class _Regex:
    drops_gil = False

    def __init__(self, literals: tuple[str, ...], words: tuple[str, ...]) -> None:
        lowered = tuple(dict.fromkeys(w.lower() for w in words))
        self._pattern = re.compile(f"{trie_pattern(literals)}|{_words_pattern(lowered)}".encode())
        self._literals = frozenset(w.encode() for w in literals)
        self._cased = frozenset(w.encode() for w in words)

    def hits(self, block: Buffer) -> Hits:
        return [(m.start(), m.group()) for m in self._pattern.finditer(bytes(block).lower())
                if m.group() in self._literals
                or _written(block, m.start(), len(m.group()), self._cased)]


def _written(block: Buffer, start: int, size: int, cased: frozenset[bytes]) -> bool:
    """Whether the whole word found (lower-cased) at `start` is written in a listed case."""
    return bytes(block[start:start + size]) in cased
