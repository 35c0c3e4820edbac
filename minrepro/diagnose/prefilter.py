"""Which built-in signals could match a line at all: hyperscan in prefilter mode.

A machine log's healthy lines hold a rule's hint ("pe", "data", "train") far more often than
its failure: most of the matcher's regex searches find nothing. Hyperscan compiles a
pattern in *prefilter* mode to an automaton whose matches are a superset of the pattern's
(lookarounds and other constructs it cannot run exactly are widened), so one scan of a line
says which of the frequently searched signals may match; the others are not searched. The
search itself still decides, so what matches is what matched before.

Learned as a process goes (`note` counts searches and matches): only signals searched often
and found rarely are compiled, a few at a time (compiling all of them takes seconds, longer
than diagnosing a small log). Only where the engines agree by construction:

* built-in rules only: a user's pack keeps every search, and so its per-log time budgets;
* patterns in ASCII with no syntax that Python and PCRE read differently (`{,n}`, `\\u`,
  `\\N`, `\\p`, back-references, Python's own inline flags), each compiled on its own
  first (one that fails is never tried);
* lines that are printable ASCII (`str.isascii()` and `str.isprintable()`): there `\\d`,
  `\\w`, `\\s`, `\\b` and case folding are the same in Unicode `regex` and in bytewise
  hyperscan.
"""

from __future__ import annotations

import os
import re
import threading
import time
from collections import Counter
from collections.abc import Hashable, Iterable
from typing import Any

from minrepro.diagnose import hscache
from minrepro.diagnose.rules.pack import Signal

MIN_SEARCHES = 64  # searches of a signal before it may be compiled
MAX_MATCH_SHARE = 0.5  # and at most this share of them matched
REVIEW_EVERY = 20_000  # searches between two looks at the counts (one CLI run on a 10 MiB
#                        log makes fewer: a compile would cost it more than it saves)
MAX_COMPILE_S = 0.02  # a pattern that takes longer to compile alone is never filtered
MAX_BUILDS = 8  # compiles a process at most
_DIFFERENT = re.compile(r"\{,|\\[uUNgpPX]|\\[1-9]|\(\?P=|\(\?\(|\(\?[a-zA-Z]*[LuaV]")


def _hyperscan() -> Any | None:
    if os.environ.get("MINREPRO_ENGINE", "hyperscan") not in ("hyperscan", ""):
        return None
    try:
        import hyperscan  # noqa: PLC0415 - optional, imported when first needed
    except ImportError:  # pragma: no cover - depends on the platform's wheels
        return None
    return hyperscan


class SignalPrefilter:
    """Counts searches per signal key; `possible(text)` names the keys that may match a
    line, among those it filters (`filtered`); None where it cannot say (see the module)."""

    def __init__(self, signals: Iterable[tuple[Hashable, Signal]]) -> None:
        self._signals = {key: signal for key, signal in signals
                         if signal.source.isascii() and not _DIFFERENT.search(signal.source)}
        self._searched: Counter[Hashable] = Counter()
        self._matched: Counter[Hashable] = Counter()
        self._refused: set[Hashable] = set()
        self._since = 0
        self._builds = 0
        self.filtered: frozenset[Hashable] = frozenset()
        self._keys: list[Hashable] = []
        self._database: Any = None
        self._local = threading.local()
        self._module: Any = None  # hyperscan, imported at the first review (start-up)

    def note(self, key: Hashable, matched: bool) -> None:
        """One search of the signal `key` was made (and found a match or not)."""
        if key not in self._signals or self._builds >= MAX_BUILDS:
            return
        self._searched[key] += 1
        if matched:
            self._matched[key] += 1
        self._since += 1
        if self._since >= REVIEW_EVERY and self._builds < MAX_BUILDS:
            self._since = 0
            self._review()

    def possible(self, text: str) -> set[Hashable] | None:
        """The filtered keys whose pattern may match `text`; None: no filter for this text."""
        if self._database is None or not (text.isascii() and text.isprintable()):
            return None
        scratch = getattr(self._local, "scratch", None)
        if scratch is None:  # one a thread: a scan holds its scratch
            scratch = self._local.scratch = self._module.Scratch(self._database)
        found: set[Hashable] = set()
        keys = self._keys
        self._database.scan(text.encode(), match_event_handler=lambda index, _s, _e, _f, _c:
                            found.add(keys[index]), scratch=scratch)
        return found

    def _review(self) -> None:
        self._module = self._module or _hyperscan()
        if self._module is None:
            self._builds = MAX_BUILDS  # nothing to build with: stop counting
            return
        wanted = [key for key, count in self._searched.items()
                  if count >= MIN_SEARCHES and key not in self.filtered
                  and key not in self._refused
                  and self._matched[key] <= MAX_MATCH_SHARE * count]
        chosen = [key for key in wanted if self._compiles_fast(key)]
        self._refused.update(set(wanted) - set(chosen))
        if chosen:
            self._builds += 1
            self.build(self.filtered | set(chosen))

    def build(self, keys: Iterable[Hashable]) -> bool:
        """Filter the signals `keys` from now on (and only them); False if they do not
        compile together (nothing is filtered then)."""
        self._module = self._module or _hyperscan()
        ordered = sorted(set(keys) & set(self._signals), key=str)
        database = self._compile(ordered) if ordered and self._module else None
        self._keys, self._database = ordered, database
        self._local = threading.local()
        self.filtered = frozenset(ordered) if database is not None else frozenset()
        return database is not None

    def _compiles_fast(self, key: Hashable) -> bool:
        started = time.perf_counter()
        return self._compile([key]) is not None and time.perf_counter() - started < MAX_COMPILE_S

    def _compile(self, keys: list[Hashable]) -> Any | None:
        module = self._module
        assert module is not None
        flags = module.HS_FLAG_PREFILTER | module.HS_FLAG_SINGLEMATCH
        try:  # from the on-disk cache where an earlier run (a triage worker) compiled it
            return hscache.database(
                module, [self._signals[key].source.encode() for key in keys],
                [flags | (module.HS_FLAG_CASELESS if self._signals[key].ignore_case else 0)
                 for key in keys])
        except Exception:  # noqa: BLE001 - a pattern hyperscan refuses is searched as before
            return None
