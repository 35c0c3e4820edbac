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


class _AhoCorasick:
    """Literals and whole words in one automaton over the lower-cased block. A whole word is
    a pattern per non-word byte after it ("nan " "nan," ...), so "info" never matches "inf"
    and the rare real hits alone get their byte before checked (as `\\b` says)."""

    drops_gil = False

    def __init__(self, literals: tuple[str, ...], words: tuple[str, ...]) -> None:
        module = _module("ahocorasick")
        assert module is not None
        patterns = [p.encode() for p in dict.fromkeys(literals)]
        self._first_word = len(patterns)
        after = [bytes([b]) for b in range(128) if b not in _WORD_BYTES]  # ASCII: a DFA
        self._endings = len(after)
        self._words = [w for w in dict.fromkeys(w.lower() for w in words) if w not in literals]
        self._cased = frozenset(w.encode() for w in words)
        patterns += [w.encode() + end for w in self._words for end in after]
        self._automaton = module.BytesAhoCorasick(
            patterns, matchkind=module.MATCHKIND_LEFTMOST_LONGEST,
            implementation=module.Implementation.DFA)

    def hits(self, block: Buffer) -> Hits:
        lower = bytes(block).lower() + b"\n"  # a word at the very end is followed by a line end
        found: Hits = []
        for pid, start, _end in self._automaton.find_matches_as_indexes(lower):
            if pid < self._first_word:
                found.append((start, pid))
                continue
            word = (pid - self._first_word) // self._endings
            if (start == 0 or lower[start - 1] not in _WORD_BYTES) and _written(
                    block, start, len(self._words[word]), self._cased):
                found.append((start, self._first_word + word))
        return found


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
