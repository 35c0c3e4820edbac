"""What a rule's signals hit in one log, and the Finding those hits make.

The matcher (matcher.py) records each signal's hits in a bounded `SignalState`; at the end,
`finding_of` weighs a rule's signals: its primaries name the cause, supporting and against
signals count only near a primary hit, the evidence and the params come from the hits.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from minrepro.diagnose.extract.units import parse_duration_ms, parse_size
from minrepro.diagnose.rules.pack import Rule, Signal
from minrepro.model import Evidence, Finding, Line, ParamValue, Role

KEEP_HITS = 6  # evidence kept per signal (the first), and its last hit besides
KEEP_LINES = 64  # hit line numbers kept per signal, first and last, for proximity checks
_EVIDENCE = 8  # evidence lines a finding shows: its first hits, and its last


@dataclass(slots=True, eq=False)
class Hit:
    line: int
    rank: int | None
    text: str
    groups: dict[str, str]


@dataclass(slots=True, eq=False)
class SignalState:
    hits: list[Hit] = field(default_factory=list)
    first_lines: list[int] = field(default_factory=list)
    last_lines: deque[int] = field(default_factory=lambda: deque(maxlen=KEEP_LINES))
    # the last hit past the first KEEP_HITS: the same error again at the log's end (every
    # launch of a sweep running out of memory) is how the log ended. Kept as it came (a
    # signal on every metric line hits thousands of times); its Hit is made once, at the end
    last: tuple[Line, dict[str, str]] | None = None

    def add(self, line: Line, groups: dict[str, str]) -> None:
        if len(self.hits) < KEEP_HITS:
            self.hits.append(_hit(line, groups))
        else:
            self.last = (line, groups)
        if len(self.first_lines) < KEEP_LINES:
            self.first_lines.append(line.line)
        else:
            self.last_lines.append(line.line)

    def lines(self) -> list[int]:
        return self.first_lines + list(self.last_lines)

    def kept(self) -> list[Hit]:
        """The first KEEP_HITS hits, and the last one past them."""
        return self.hits + [_hit(*self.last)] if self.last else self.hits


def _hit(line: Line, groups: dict[str, str]) -> Hit:
    return Hit(line.line, line.rank, line.text[:500], groups)


def finding_of(rule: Rule, states: dict[int, SignalState]) -> Finding | None:
    """The rule's finding from its signals' hits (signal index -> state); None when none of
    its primaries hit and nothing vetoes its cause."""
    primary = [s for s in states if rule.signals[s].role is Role.PRIMARY]
    against = [s for s in states if rule.signals[s].role is Role.AGAINST]
    if not primary:
        # Evidence against a cause still vetoes what analyzers say of it.
        return _veto(rule, _kept_share(rule.signals, against)) if against else None
    primary_lines = sorted({n for s in primary for n in states[s].lines()})
    primary, primary_lines = _clear_of(rule, states, primary, primary_lines, against)
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
        kept_share=1.0 if any(rule.signals[s].decisive for s in primary)
        else _kept_share(rule.signals, [s for s in counted if s in against]),
    )


def _clear_of(rule: Rule, states: dict[int, SignalState], primary: list[int],
              lines: list[int], against: list[int]) -> tuple[list[int], list[int]]:
    """(primaries, their lines) less the hits an against-signal sits by, where other hits are
    clear of every one: evidence against a cause speaks of the hits it is near (a host OOM
    kill's words read as OOM prose), not of the cause's hits elsewhere in the log (the CUDA
    OOM of an earlier run of a sweep)."""
    if not against:
        return primary, lines
    clear = [n for n in lines if not any(_near(states[a].lines(), [n], rule.signals[a].within)
                                         for a in against)]
    if not clear or len(clear) == len(lines):
        return primary, lines
    kept = set(clear)
    return [s for s in primary if kept.intersection(states[s].lines())], clear


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


def _evidence(states: dict[int, SignalState], counted: list[int], rule: Rule) -> tuple:
    hits = {(h.line, h.text): h for s in counted if rule.signals[s].role is not Role.AGAINST
            for h in states[s].kept()}
    ordered = sorted(hits.values(), key=lambda h: h.line)
    # the first lines, and the last: where it showed first and whether it was how it ended
    chosen = ordered if len(ordered) <= _EVIDENCE else ordered[:_EVIDENCE - 1] + ordered[-1:]
    return tuple(Evidence(line=h.line, text=h.text, rank=h.rank) for h in chosen)


def _params(rule: Rule, states: dict[int, SignalState], ordered: list[int]) -> tuple:
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
