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

import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, cast

from minrepro.diagnose.extract.units import parse_duration_ms, parse_size
from minrepro.diagnose.literals import LiteralSet, any_of
from minrepro.diagnose.prefilter import SignalPrefilter
from minrepro.diagnose.rules.pack import Rule, Signal, hit_groups
from minrepro.model import Evidence, Finding, Line, ParamValue, Role, Severity

if TYPE_CHECKING:
    import regex

REGEX_TIMEOUT_S = 0.25  # one search on one line
SIGNAL_BUDGET_S = 1.0  # one signal over the whole log, plus SIGNAL_S_PER_MB
LOG_BUDGET_S = 10.0  # all signals together over the whole log, plus LOG_S_PER_MB
SIGNAL_S_PER_MB = 0.2  # per million characters of text read
LOG_S_PER_MB = 1.0
_MIN_TIMEOUT_S = 0.001
PROSE_LINES = 5000
_KEEP_HITS = 6  # evidence kept per signal
_KEEP_LINES = 64  # hit line numbers kept per signal, first and last, for proximity checks
_TIMED_OUT = object()


@dataclass(slots=True, eq=False)
class _Hit:
    line: int
    rank: int | None
    text: str
    groups: dict[str, str]


@dataclass(slots=True, eq=False)
class _SignalState:
    count: int = 0
    hits: list[_Hit] = field(default_factory=list)
    first_lines: list[int] = field(default_factory=list)
    last_lines: deque[int] = field(default_factory=lambda: deque(maxlen=_KEEP_LINES))

    def add(self, line: Line, groups: dict[str, str]) -> None:
        self.count += 1
        if len(self.hits) < _KEEP_HITS:
            self.hits.append(_Hit(line.line, line.rank, line.text[:500], groups))
        if len(self.first_lines) < _KEEP_LINES:
            self.first_lines.append(line.line)
        else:
            self.last_lines.append(line.line)

    def lines(self) -> list[int]:
        return self.first_lines + list(self.last_lines)


#: rule index, signal index, the signal, its name, the test of its `requires` words
Candidate = tuple[int, int, Signal, str, Callable[[str], bool] | None]
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
        self._state: dict[tuple[int, int], _SignalState] = {}
        # A line's outcome depends on its text alone (and whether prose is read): a text seen
        # before replays its matches (progress bars, repeated warnings) without a regex. A
        # line whose searches were slow is not kept: each copy of it pays, and spends the
        # budgets, as a crafted log of many such lines must.
        self._memo: tuple[dict[str, list], dict[str, list]] = ({}, {})
        # The line before was a traceback's `File "...", line N, in f`: this one is the source
        # line Python quotes (`ckpt = torch.load(w)  # avoid a CUDA memory leak`).
        self._after_frame = False

    def feed(self, line: Line) -> None:
        text = line.text
        after_frame, self._after_frame = self._after_frame, _is_frame(text)
        if after_frame and "#" in text:  # Python's copy of the source: its comment is no
            text = text.partition("#")[0].rstrip()  # evidence (the line is still shown whole)
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
        for r, s, name, groups in outcome:  # as the searches would go, switched-off ones aside
            if name not in self.timeouts and not self.exhausted and groups is not None:
                self._state.setdefault((r, s), _SignalState()).add(line, groups)

    def feed_rejoined(self, line: Line, last: int) -> None:
        """An exception message that a paste (or a terminal) wrapped over lines `line.line`
        to `last`, put back on one (`line.text`): a signal that needs words of two of them
        matches here. A signal that matched one of those lines already is not counted twice."""
        self._chars += len(line.text)
        self._run(line, line.text, line.line <= PROSE_LINES, rejoined=last)

    def _run(self, line: Line, text: str, prose: bool, rejoined: int = 0) -> list | None:
        """Search the line's `text`; (r, s, name, groups or None) of each signal searched, or
        None when a search timed out or was slow (the outcome is then not to be replayed)."""
        outcome: list | None = []
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
            match = self._search(name, signal, text)
            if match is _TIMED_OUT:
                outcome = None
                continue
            groups = hit_groups(signal, cast("regex.Match[str] | None", match))
            prefilter.note((r, s), groups is not None)
            if groups is not None:
                state = self._state.setdefault((r, s), _SignalState())
                if not (rejoined and any(line.line <= n <= rejoined for n in state.lines())):
                    state.add(line, groups)
            if outcome is not None:
                outcome.append((r, s, name, groups))
        return None if self._total - spent > _SLOW_LINE_S else outcome

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
        found = (self._finding(r, rule) for r, rule in enumerate(self.rules))
        return [f for f in found if f is not None]

    def _finding(self, r: int, rule: Rule) -> Finding | None:
        states = {s: self._state[(r, s)] for s in range(len(rule.signals)) if (r, s) in self._state}
        primary = [s for s in states if rule.signals[s].role is Role.PRIMARY]
        against = [s for s in states if rule.signals[s].role is Role.AGAINST]
        if not primary:
            # Evidence against a cause still vetoes what analyzers say of it.
            return _veto(rule, _kept_share(rule.signals, against)) if against else None
        primary_lines = sorted({n for s in primary for n in states[s].lines()})
        counted = [s for s in states
                   if s in primary or _near(states[s].lines(), primary_lines,
                                            rule.signals[s].within)]
        score = _combine(rule.signals, counted)
        best = max(primary, key=lambda s: (rule.signals[s].weight, -states[s].hits[0].line))
        ordered = sorted(counted, key=lambda s: -rule.signals[s].weight)
        variant = next((rule.signals[s].variant for s in ordered if rule.signals[s].variant), None)
        return Finding(
            rule_id=rule.id, cause=rule.cause, category=rule.category, score=round(score, 3),
            first_line=min(states[s].hits[0].line for s in primary),
            evidence=_evidence(states, counted, rule), params=_params(rule, states, ordered),
            severity=rule.signals[best].severity, variant=variant, cascade=rule.cascade,
            supersedes=rule.supersedes,
            kept_share=_kept_share(rule.signals, [s for s in counted if s in against]),
        )


def _is_frame(text: str) -> bool:
    stripped = text.lstrip()
    return stripped.startswith('File "') and '", line ' in stripped


def _near(lines: list[int], anchors: list[int], within: int) -> bool:
    return any(abs(a - b) <= within for a in lines for b in anchors)


def _combine(signals: tuple[Signal, ...], counted: list[int]) -> float:
    """Noisy-OR of the weights of the primary and supporting signals seen."""
    missing = 1.0
    for s in counted:
        if signals[s].role is not Role.AGAINST:
            missing *= 1.0 - signals[s].weight
    return min(1.0 - missing, 0.99)


def _kept_share(signals: tuple[Signal, ...], against: list[int]) -> float:
    """Each 'against' signal seen takes its weight's share off the cause's score."""
    factor = 1.0
    for s in against:
        factor *= 1.0 - signals[s].weight
    return factor


def _veto(rule: Rule, kept_share: float) -> Finding:
    return Finding(rule_id=rule.id, cause=rule.cause, category=rule.category, score=0.0,
                   first_line=0, kept_share=kept_share)


def _evidence(states: dict[int, _SignalState], counted: list[int], rule: Rule) -> tuple:
    hits = {(h.line, h.text): h for s in counted if rule.signals[s].role is not Role.AGAINST
            for h in states[s].hits}
    chosen = sorted(hits.values(), key=lambda h: h.line)[:8]
    return tuple(Evidence(line=h.line, text=h.text, rank=h.rank) for h in chosen)


def _params(rule: Rule, states: dict[int, _SignalState], ordered: list[int]) -> tuple:
    values: dict[str, ParamValue] = {}
    for s in ordered:
        for hit in states[s].hits:
            for name, raw in hit.groups.items():
                if name not in values:
                    value = convert(raw, rule.param_type(name) or "str")
                    if value is not None:
                        values[name] = value
    return tuple(values.items())


def convert(raw: str, kind: str) -> ParamValue | None:
    """A captured string as the declared param type; None when it does not parse."""
    raw = raw.strip()
    try:
        if kind == "int":
            return int(raw.replace(",", ""))
        if kind == "float":
            value = float(raw)
            return value if value == value and abs(value) != float("inf") else None
        if kind == "bytes":
            return parse_size(raw)
        if kind == "duration_ms":
            return parse_duration_ms(raw) if ":" in raw else int(float(raw))
    except (ValueError, OverflowError):  # not a number, or beyond any real value
        return None
    return raw[:200]
