"""Apply rule packs to a stream of lines, keeping bounded hit state, and turn hits into Findings.

The caller owns the loop: `matcher.feed(line)` for every line, then `matcher.findings()`. A
line is first checked against a trie of every signal's literal hints; only the signals whose
hints occur in it, and one of whose `requires` words too where it has them, run their regex
(with a timeout). Regex time is also budgeted per log: a signal that has spent its budget on
this log, or any signal once all of them together have spent the log's, is switched off (named
once in `timeouts`) and the diagnosis still comes out: a pattern that takes 0.2 s a line, under
the per-call timeout, would otherwise cost hours on a crafted log of many such lines. Budgets
grow with the text read (a big healthy log earns more time than a small crafted one). Prose
signals (words of a bug report) are read only in the first PROSE_LINES lines: a report's text
sits at its top, and in a multi-GB machine log the same words are noise that would cost a regex
per line.
"""

from __future__ import annotations

import re
import time
from collections import deque
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, cast

from minrepro.diagnose.hits import SignalState, finding_of
from minrepro.diagnose.literals import LiteralSet, any_of
from minrepro.diagnose.prefilter import SignalPrefilter
from minrepro.diagnose.rules.pack import Rule, Signal, hit_groups
from minrepro.model import Finding, Line, Role, Severity

if TYPE_CHECKING:
    import regex

REGEX_TIMEOUT_S = 0.25  # one search on one line
SIGNAL_BUDGET_S = 1.0  # one signal over the whole log, plus SIGNAL_S_PER_MB
LOG_BUDGET_S = 10.0  # all signals together over the whole log, plus LOG_S_PER_MB
SIGNAL_S_PER_MB = 0.2  # per million characters of text read
LOG_S_PER_MB = 1.0
_MIN_TIMEOUT_S = 0.001
PROSE_LINES = 5000
_TIMED_OUT = object()


#: rule index, signal index, the signal, its name, the test of its `requires` words
Candidate = tuple[int, int, Signal, str, Callable[[str], bool] | None]
#: a line's searches: (r, s, name, groups or None) of each signal searched, and the
#: candidates that wait for a primary
Outcome = tuple[list[tuple[int, int, str, dict[str, str] | None]], list[Candidate]]
_MEMO_LINES = 4096  # distinct line texts whose results a matcher keeps (progress bars repeat)
_SLOW_LINE_S = 0.001  # a line whose searches took longer is searched again when repeated


class _Plan:
    """What a matcher derives from its rules, built once per rule set (a triage run
    diagnoses thousands of logs with one): which signals a line's hints call for. The
    signals of a set of hints are worked out once per set (a log's lines hold a few dozen
    distinct sets); a signal's `requires` words are one compiled test."""

    def __init__(self, rules: tuple[Rule, ...], builtin: frozenset[str] = frozenset()) -> None:
        """`builtin`: ids of the rules whose searches the prefilter may spare."""
        self.rules = rules
        self.by_hint: dict[str, list[Candidate]] = {}
        self.always: list[Candidate] = []
        self.waits: frozenset[tuple[int, int]] = frozenset(
            (r, s) for r, rule in enumerate(rules)
            if any(signal.role is Role.PRIMARY for signal in rule.signals)
            for s, signal in enumerate(rule.signals) if _waits(signal))
        machine_hints: set[str] = set()
        for r, rule in enumerate(rules):
            for s, signal in enumerate(rule.signals):
                test = any_of(signal.requires) if signal.requires else None
                candidate = (r, s, signal, f"{rule.id}/{signal.name}", test)
                for hint in signal.hints:
                    self.by_hint.setdefault(hint, []).append(candidate)
                    if signal.severity is not Severity.PROSE:
                        machine_hints.add(hint)
                if not signal.hints:
                    self.always.append(candidate)
        self.prefilter = SignalPrefilter(((r, s), signal) for r, rule in enumerate(rules)
                                         if rule.id in builtin
                                         for s, signal in enumerate(rule.signals))
        self.all_hints = LiteralSet(self.by_hint)
        self.machine_hints = LiteralSet(machine_hints)
        self._candidates: dict[tuple[tuple[str, ...], bool], list[Candidate]] = {}

    def candidates(self, lowered: str, prose: bool) -> list[Candidate]:
        """The signals whose hints the line (lower-cased) holds, in the order they are tried;
        their `requires` words are still to be tested."""
        hints = tuple((self.all_hints if prose else self.machine_hints).present(lowered))
        found = self._candidates.get((hints, prose))
        if found is None:
            found = []
            done: set[tuple[int, int]] = set()
            for hint in hints:
                for candidate in self.by_hint[hint]:
                    r, s, signal, _, _ = candidate
                    if (r, s) in done or (not prose and signal.severity is Severity.PROSE):
                        continue
                    done.add((r, s))
                    found.append(candidate)
            found += self.always
            if len(self._candidates) < _MEMO_LINES:
                self._candidates[(hints, prose)] = found
        return found


_PLANS: dict[int, tuple[tuple[Rule, ...], _Plan]] = {}


def _plan(rules: Iterable[Rule]) -> _Plan:
    source = getattr(rules, "rules", None)  # a RuleSet: its tuple is the cache key
    kept = tuple(rule for rule in (source if source is not None else rules) if rule.signals)
    if not isinstance(source, tuple):
        return _Plan(kept)
    cached = _PLANS.get(id(source))
    if cached is None or cached[0] is not source:
        if len(_PLANS) > 8:
            _PLANS.clear()
        users: frozenset[str] = getattr(rules, "user_ids", frozenset())
        builtin = frozenset(rule.id for rule in kept if rule.id not in users)
        cached = _PLANS[id(source)] = (source, _Plan(kept, builtin))
    return cached[1]


class RuleMatcher:
    def __init__(self, rules: Iterable[Rule]) -> None:
        self._plan = _plan(rules)
        self.rules = self._plan.rules  # checks have no patterns
        self.timeouts: set[str] = set()  # signals switched off: too slow on this log
        self._spent: dict[str, float] = {}  # regex seconds per signal
        self._total = 0.0
        self._chars = 0  # text read so far: budgets grow with it
        self.exhausted = False  # the log's budget is spent: no more regexes on this log
        self._state: dict[tuple[int, int], SignalState] = {}
        # A line's outcome depends on its text alone (and whether prose is read): a text seen
        # before replays its matches (progress bars, repeated warnings) without a regex. A
        # line whose searches were slow is not kept: each copy of it pays, and spends the
        # budgets, as a crafted log of many such lines must.
        self._memo: tuple[dict[str, Outcome], dict[str, Outcome]] = ({}, {})
        # The line before was a traceback's `File "...", line N, in f`: this one is the source
        # line Python quotes (`ckpt = torch.load(w)  # avoid a CUDA memory leak`).
        self._after_frame = False
        self._code_line = 0  # the last line of a printed file's code seen
        self._primary_line: dict[int, int] = {}  # rule -> the last line a primary of it hit
        # lines whose waiting searches were not run yet: (line, text, the candidates)
        self._waiting: deque[tuple[Line, str, list[Candidate]]] = deque(maxlen=_WAITING_LINES)

    def feed(self, line: Line) -> None:
        text = line.text
        after_frame, self._after_frame = self._after_frame, _is_frame(text)
        # Python's copy of the source, or a printed source or settings file (nanoGPT prints
        # its config file): a comment is its author talking, no evidence (the line is still
        # shown whole)
        code = "=" in text and _ASSIGNMENT.match(text) is not None
        if not code and self._code_line and 0 < line.line - self._code_line <= _CODE_GAP:
            code = text.lstrip().startswith("#")  # (a blank line between keeps it the file's)
        if code:
            self._code_line = line.line
        if "#" in text and (after_frame or code):
            text = text.partition("#")[0].rstrip()
        prose = line.line <= PROSE_LINES
        self._chars += len(text)
        memo = self._memo[prose]
        outcome = memo.get(text)
        if outcome is None:
            outcome = self._run(line, text, prose)
            if outcome is not None:
                if len(memo) >= _MEMO_LINES:
                    memo.clear()
                memo[text] = outcome
            return
        searched, waiting = outcome
        for r, s, name, groups in searched:  # as the searches would go, switched-off ones aside
            if name not in self.timeouts and not self.exhausted and groups is not None:
                self._add(r, s, line, groups)
        if waiting:
            self._wait_or_search(line, text, waiting)

    def feed_rejoined(self, line: Line, last: int) -> None:
        """An exception message that a paste (or a terminal) wrapped over lines `line.line`
        to `last`, put back on one (`line.text`): a signal that needs words of two of them
        matches here. A signal that matched one of those lines already is not counted twice."""
        self._chars += len(line.text)
        self._run(line, line.text, line.line <= PROSE_LINES, rejoined=last)

    def _run(self, line: Line, text: str, prose: bool, rejoined: int = 0) -> Outcome | None:
        """Search the line's `text`; ((r, s, name, groups or None) of each signal searched,
        the candidates that wait for a primary), or None when a search timed out or was slow
        (the outcome is then not to be replayed)."""
        outcome: list[tuple[int, int, str, dict[str, str] | None]] | None = []
        waiting: list[Candidate] = []
        spent = self._total
        lowered = text.lower()
        prefilter = self._plan.prefilter
        possible, checked = None, False
        for r, s, signal, name, requires in self._plan.candidates(lowered, prose):
            if (r, s) in prefilter.filtered:
                if not checked:
                    possible, checked = prefilter.possible(text), True
                if possible is not None and (r, s) not in possible:
                    continue  # it cannot match this line: no search
            if requires is not None and not requires(lowered):
                continue
            if name in self.timeouts or self.exhausted:
                continue  # a pattern that timed out once is off for the rest of the log
            if (r, s) in self._plan.waits:
                waiting.append((r, s, signal, name, requires))
                continue
            timed_out, groups = self._groups(name, signal, text)
            if timed_out:
                outcome = None
                continue
            prefilter.note((r, s), groups is not None)
            if groups is not None:
                state = self._state.get((r, s))
                if not (rejoined and state is not None
                        and any(line.line <= n <= rejoined for n in state.lines())):
                    self._add(r, s, line, groups)
            if outcome is not None:
                outcome.append((r, s, name, groups))
        if waiting:
            self._wait_or_search(line, text, waiting)
        if outcome is None or self._total - spent > _SLOW_LINE_S:
            return None
        return outcome, waiting

    def _add(self, r: int, s: int, line: Line, groups: dict[str, str]) -> None:
        self._state.setdefault((r, s), SignalState()).add(line, groups)
        if self._plan.rules[r].signals[s].role is Role.PRIMARY:
            before = self._primary_line.get(r)
            self._primary_line[r] = line.line
            if before is None or line.line - before > WAIT_WITHIN:
                self._search_waiting(r, line.line)

    def _wait_or_search(self, line: Line, text: str, waiting: list[Candidate]) -> None:
        """The waiting candidates of a line: searched now where a primary of their rule hit
        within their reach before it, else kept until one does."""
        kept = []
        for candidate in waiting:
            r, _, signal, _, _ = candidate
            last = self._primary_line.get(r)
            if last is not None and line.line - last <= signal.within:
                self._search_now(candidate, line, text)
            else:
                kept.append(candidate)
        if kept:
            self._waiting.append((line, text, kept))

    def _search_waiting(self, r: int, at: int) -> None:
        """A primary of rule r hit at line `at`: the kept lines within reach before it."""
        for line, text, kept in self._waiting:
            for candidate in [c for c in kept if c[0] == r and at - line.line <= c[2].within]:
                kept.remove(candidate)
                self._search_now(candidate, line, text)

    def _search_now(self, candidate: Candidate, line: Line, text: str) -> None:
        r, s, signal, name, _ = candidate
        if name in self.timeouts or self.exhausted:
            return
        _, groups = self._groups(name, signal, text)
        if groups is not None:
            self._add(r, s, line, groups)

    def _groups(self, name: str, signal: Signal, text: str
                ) -> tuple[bool, dict[str, str] | None]:
        """(whether the search ran out of time, the signal's named groups where it matches
        the text, else None)."""
        match = self._search(name, signal, text)
        if match is _TIMED_OUT:
            return True, None
        return False, hit_groups(signal, cast("regex.Match[str] | None", match))

    def _search(self, name: str, signal: Signal, text: str) -> regex.Match[str] | object | None:
        """The signal's search, bounded by what is left of its and the log's budget."""
        spent = self._spent.get(name, 0.0)
        signal_budget = SIGNAL_BUDGET_S + self._chars / 1e6 * SIGNAL_S_PER_MB
        log_budget = LOG_BUDGET_S + self._chars / 1e6 * LOG_S_PER_MB
        left = min(signal_budget - spent, log_budget - self._total)
        started = time.perf_counter()
        try:
            return signal.pattern.search(text, timeout=max(min(REGEX_TIMEOUT_S, left),
                                                           _MIN_TIMEOUT_S))
        except TimeoutError:
            self.timeouts.add(name)
            return _TIMED_OUT
        finally:
            cost = time.perf_counter() - started
            self._spent[name] = spent + cost
            self._total += cost
            if spent + cost >= signal_budget:
                self.timeouts.add(name)
            self.exhausted = self._total >= log_budget

    def findings(self) -> list[Finding]:
        found = (finding_of(rule, {s: self._state[(r, s)] for s in range(len(rule.signals))
                                   if (r, s) in self._state})
                 for r, rule in enumerate(self.rules))
        return [f for f in found if f is not None]

#: A supporting signal this near its primaries at most, with no values to give, is searched
#: only near a primary hit: on a line within its reach of the last one, or, when a primary
#: first hits, on the lines kept from before it. Far from any primary it could not count,
#: and in a healthy log ("worker", "train", "position" ...) most of the searches were these.
WAIT_WITHIN = 64
_WAITING_LINES = 256  # lines kept with the searches they wait for


def _waits(signal: Signal) -> bool:
    return (signal.role is Role.SUPPORT and signal.within <= WAIT_WITHIN
            and "(?P<" not in signal.source)


_CODE_GAP = 2  # a comment this many lines below a file's code is the file's (a blank between)
#: a line of printed code or settings: an assignment (`eval_interval = 250 # keep frequent
#: because we'll overfit`); a comment after one is the file's too (`# we expect to overfit`),
#: where a report's Markdown heading (`# NaNs in MultiheadAttention`) is not
_ASSIGNMENT = re.compile(r"\s*[A-Za-z_][\w.]*(?:\[[^\]#]*\])?\s*[-+*/]?=\s*[^=\s]")


def _is_frame(text: str) -> bool:
    stripped = text.lstrip()
    return stripped.startswith('File "') and '", line ' in stripped


