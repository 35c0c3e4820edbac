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
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from minrepro.diagnose.extract.units import parse_duration_ms, parse_size
from minrepro.diagnose.literals import LiteralSet
from minrepro.diagnose.rules.pack import Rule, Signal
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


@dataclass(slots=True)
class _Hit:
    line: int
    rank: int | None
    text: str
    groups: dict[str, str]


@dataclass(slots=True)
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


class RuleMatcher:
    def __init__(self, rules: Iterable[Rule]) -> None:
        self.rules = tuple(rule for rule in rules if rule.signals)  # checks have no patterns
        self.timeouts: set[str] = set()  # signals switched off: too slow on this log
        self._spent: dict[str, float] = {}  # regex seconds per signal
        self._total = 0.0
        self._chars = 0  # text read so far: budgets grow with it
        self.exhausted = False  # the log's budget is spent: no more regexes on this log
        self._state: dict[tuple[int, int], _SignalState] = {}
        self._by_hint: dict[str, list[tuple[int, int, Signal]]] = {}
        self._always: list[tuple[int, int, Signal]] = []
        machine_hints: set[str] = set()
        for r, rule in enumerate(self.rules):
            for s, signal in enumerate(rule.signals):
                for hint in signal.hints:
                    self._by_hint.setdefault(hint, []).append((r, s, signal))
                    if signal.severity is not Severity.PROSE:
                        machine_hints.add(hint)
                if not signal.hints:
                    self._always.append((r, s, signal))
        self._all_hints = LiteralSet(self._by_hint)
        self._machine_hints = LiteralSet(machine_hints)

    def feed(self, line: Line) -> None:
        prose = line.line <= PROSE_LINES
        self._chars += len(line.text)
        lowered = line.text.lower()
        hints = (self._all_hints if prose else self._machine_hints).present(lowered)
        if not hints and not self._always:
            return
        done: set[tuple[int, int]] = set()
        for hint in hints:
            for r, s, signal in self._by_hint[hint]:
                if (r, s) in done or (not prose and signal.severity is Severity.PROSE):
                    continue
                done.add((r, s))
                self._try(r, s, signal, line, lowered)
        for r, s, signal in self._always:
            self._try(r, s, signal, line, lowered)

    def _try(self, r: int, s: int, signal: Signal, line: Line, lowered: str) -> None:
        if signal.requires and not any(word in lowered for word in signal.requires):
            return
        name = f"{self.rules[r].id}/{signal.name}"
        if name in self.timeouts or self.exhausted:
            return  # a pattern that timed out once is off for the rest of the log
        match = self._search(name, signal, line.text)
        if match:
            groups = {k: v for k, v in match.groupdict().items() if v is not None}
            self._state.setdefault((r, s), _SignalState()).add(line, groups)

    def _search(self, name: str, signal: Signal, text: str) -> regex.Match[str] | None:
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
            return None
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
