"""Rule packs: YAML data, one file per cause, validated when loaded.

A rule file looks like::

    id: MR-CONV-001                # stable, never renumbered
    cause: position_overflow       # spelled as in DESIGN.md
    category: convergence
    title: Input longer than the position-embedding table
    explanation: ...
    fix: ...
    references: [https://...]
    params: {seq_len: int, max_positions: int}
    signals:
      - name: hf-size-mismatch
        pattern: 'The size of tensor a \\((?P<seq_len>\\d+)\\) must match ...'
        hint: The size of tensor     # literal(s) a line must contain before the regex runs
        requires: [must match]       # optional: and one of these too (a rarer word of the regex)
        weight: 0.6                  # evidence strength, combined as a noisy-OR
        role: primary                # primary | support | against
        severity: crash              # crash | symptom | warning | prose
        within: 40                   # support/against: counts only this near a primary hit
        variant: hf_buffer           # the repro variant this evidence points to
        exceeds: [seq_len, max_positions]  # optional: a hit only where the first group's
                                           # number is larger than the second's
        decisive: true               # optional, a primary that says why the run died:
                                     # 'against' signals take nothing off its finding
    examples: {match: [...], no_match: [...]}   # single lines for the regexes alone
    cases:                         # named logs run through the whole diagnose path
      - name: bert-long-input
        log: |
          ...
        cause: position_overflow   # what diagnose must say of it (null: no cause)
        params: {seq_len: 937}     # optional: values it must extract

Errors name the file, the rule id and the key: `cuda_oom.yaml: MR-MEM-002: signals[1].weight:
should be a number in (0, 1]` (checked with minrepro.schema, as the template specs are).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from minrepro.diagnose.rules import files as rulefiles
from minrepro.diagnose.rules import regexcost
from minrepro.errors import RulePackError, shown_path
from minrepro.model import ParamValue, Role, Severity
from minrepro.patterns import lazy
from minrepro.schema import IDENTIFIER, Checker
from minrepro.taxonomy import CATEGORY_OF, ROOT_OF, RootClass

if TYPE_CHECKING:
    import regex

PARAM_TYPES = ("int", "float", "bytes", "duration_ms", "str")
_RULE_KEYS = {"id", "cause", "category", "root", "variant_roots", "variant_fixes", "title",
              "explanation", "fix",
              "references", "params", "signals", "examples", "cases", "cascade", "supersedes"}
_SIGNAL_KEYS = {"name", "pattern", "hint", "requires", "weight", "role", "severity", "within",
                "variant", "ignore_case", "exceeds", "decisive"}
_CASE_KEYS = {"name", "log", "cause", "params"}
_REQUIRED = ("id", "cause", "category", "title", "explanation", "fix", "signals")
ID = lazy(r"MR-(?:MEM|CONV|SPD|PREC|ENV|PROG|DIST|HW|ROOT|USR|MON)-\d{3}")
_MAX_CASE_CHARS = 20_000
_SHORT_ID = lazy(r"[A-Za-z0-9-]{1,12}")  # a mistyped id, shown; anything else is not


_COMPILED: dict[tuple[str, bool], regex.Pattern[str]] = {}


@dataclass(frozen=True, slots=True)
class Signal:
    name: str
    source: str  # the regex, compiled on first use (built-in packs are checked by the tests)
    ignore_case: bool
    hints: tuple[str, ...]  # lower-case literals; empty = run on every line
    weight: float
    role: Role = Role.PRIMARY
    severity: Severity = Severity.CRASH
    within: int = 40
    variant: str | None = None
    requires: tuple[str, ...] = ()  # lower-case literals, one of which must occur too
    # (larger, smaller): a match counts only where the number the first named group captured
    # is larger than the second's (a sequence of 8 never overflows a table of 1024)
    exceeds: tuple[str, str] | None = None
    # a primary that says outright why the run died (SLURM: "exceeded memory limit ...,
    # being killed"): the rule's 'against' signals (the cancel line that kill prints) take
    # nothing off a finding it is counted in
    decisive: bool = False

    def holds(self, groups: dict[str, str]) -> bool:
        """Whether a match's groups keep the signal's number relation (none: always)."""
        if self.exceeds is None:
            return True
        try:
            larger, smaller = (float(groups[name].replace(",", "")) for name in self.exceeds)
        except (KeyError, ValueError):
            return False
        return larger > smaller

    @property
    def pattern(self) -> regex.Pattern[str]:
        key = (self.source, self.ignore_case)
        compiled = _COMPILED.get(key)
        if compiled is None:
            compiled = _COMPILED[key] = _compile(self.source, self.ignore_case)
        return compiled


def _compile(source: str, ignore_case: bool) -> regex.Pattern[str]:
    import regex  # on first use: a log without rule hits never needs it

    return regex.compile(source, (regex.IGNORECASE if ignore_case else 0) | regex.VERSION0)


@dataclass(frozen=True, slots=True)
class Case:
    """A named log a rule must (or, with `cause` None, must not) diagnose."""

    name: str
    log: str
    cause: str | None
    params: tuple[tuple[str, ParamValue], ...] = ()


@dataclass(frozen=True, slots=True)
class Rule:
    id: str
    cause: str
    category: str
    title: str
    explanation: str
    fix: str
    signals: tuple[Signal, ...]
    root: RootClass | None = None
    params: tuple[tuple[str, str], ...] = ()  # (name, type)
    references: tuple[str, ...] = ()
    examples_match: tuple[str, ...] = ()
    examples_no_match: tuple[str, ...] = ()
    cases: tuple[Case, ...] = ()
    cascade: bool = False  # a consequence of another rank's failure (NCCL watchdog, ...)
    supersedes: tuple[str, ...] = ()  # causes this one explains (a leak explains its OOM)
    source: str = ""  # file name, for messages
    # the root class where the evidence points to a variant that has another one (a
    # checkpoint's `module.` prefix is the code's, a size mismatch the config's)
    variant_roots: tuple[tuple[str, RootClass], ...] = ()
    # the fix where the evidence points to a variant with a fix of its own (a launcher's
    # --local-rank is fixed in the script's arguments, not by a version pin)
    variant_fixes: tuple[tuple[str, str], ...] = ()

    def fix_for(self, variant: str | None) -> str:
        return dict(self.variant_fixes).get(variant or "", self.fix)

    def param_type(self, name: str) -> str | None:
        return dict(self.params).get(name)


class _RuleChecker(Checker):
    """Checks one rule mapping; errors read `file: rule id: key: problem`."""

    def __init__(self, path: Path, data: Any, *, eager: bool = True, user: bool = False) -> None:
        self.eager = eager  # compile and check regexes now (user packs); else on first use
        self.user = user  # a user's pack may declare causes of its own
        raw_id = data.get("id") if isinstance(data, dict) else None
        # Only a plausible id goes into messages: a crafted one could be huge or multi-line.
        # Nor a long one: a pack may hold a link to a file that is no rule (`id: <a token>`).
        rule_id = raw_id if isinstance(raw_id, str) and ID.fullmatch(raw_id) else (
            shown_path(raw_id) if isinstance(raw_id, str) and _SHORT_ID.fullmatch(raw_id)
            else "?")
        super().__init__(f"{shown_path(path.name)}: {rule_id}", RulePackError)
        self.file = shown_path(path.name)
        if not isinstance(data, dict):
            self.fail("rule", "the file should hold one mapping (a rule)")
        self.data = data

    def rule(self) -> Rule:
        data = self.mapping(self.data, "", _RULE_KEYS)
        self.require(data, _REQUIRED)
        rule_id, cause, category = (self.text(data, k) for k in ("id", "cause", "category"))
        if not ID.fullmatch(rule_id):
            shown_id = repr(rule_id) if _SHORT_ID.fullmatch(rule_id) else "the id"
            self.fail("id", f"{shown_id} should look like MR-MEM-001"
                      " (MEM|CONV|SPD|PREC|ENV|PROG|DIST|HW|ROOT|USR|MON)")
        root = self._root_of(data, cause, category)
        params = self._params(data.get("params") or {})
        signals = data["signals"]
        if not isinstance(signals, list) or not signals:
            self.fail("signals", "should be a non-empty list")
        examples = self.mapping(data.get("examples") or {}, "examples", {"match", "no_match"})
        return Rule(
            id=rule_id, cause=cause, category=category, title=self.text(data, "title"),
            explanation=self.text(data, "explanation"), fix=self.text(data, "fix"),
            signals=tuple(self._signal(s, i, dict(params)) for i, s in enumerate(signals)),
            root=root, params=params, references=self.strings(data, "references"),
            examples_match=self.strings(examples, "match", "examples."),
            examples_no_match=self.strings(examples, "no_match", "examples."),
            cases=self._cases(data.get("cases") or []),
            cascade=self.flag(data, "cascade"), supersedes=self._causes(data, "supersedes"),
            source=self.file, variant_roots=self._variant_roots(data, signals),
            variant_fixes=self._variant_fixes(data, signals),
        )

    def _variant_roots(self, data: dict, signals: list) -> tuple[tuple[str, RootClass], ...]:
        given = self._per_variant(data, "variant_roots", signals)
        return tuple((variant, self.choice(given, variant, RootClass, RootClass.CODE,
                                           "variant_roots.")) for variant in given)

    def _variant_fixes(self, data: dict, signals: list) -> tuple[tuple[str, str], ...]:
        given = self._per_variant(data, "variant_fixes", signals)
        return tuple((variant, self.text(given, variant, "variant_fixes.")) for variant in given)

    def _per_variant(self, data: dict, key: str, signals: list) -> dict:
        """The mapping under `key`, each of whose keys one of the rule's signals names as its
        variant."""
        given = self.mapping(data.get(key) or {}, key)
        variants = {s.get("variant") for s in signals if isinstance(s, dict)}
        for variant in given:
            if variant not in variants:
                self.fail(f"{key}.{variant}", "no signal of this rule has this variant")
        return given

    def _root_of(self, data: dict, cause: str, category: str) -> RootClass:
        """A known cause keeps its category (its root class may be given); a user's pack
        declares a new cause by naming it with its category and root class."""
        if cause in CATEGORY_OF:
            if CATEGORY_OF[cause] != category:
                self.fail("category",
                          f"{cause} belongs to {CATEGORY_OF[cause]!r}, not {category!r}")
            return self.choice(data, "root", RootClass, ROOT_OF[cause])
        if not self.user:
            self.fail("cause", f"unknown cause {cause!r}; `minrepro rules --taxonomy` lists them")
        if "root" not in data:
            self.fail("root", f"a new cause ({cause!r}) needs its root class: one of "
                      + ", ".join(r.value for r in RootClass))
        self.identifier(cause, "cause")
        self.identifier(category, "category")
        return self.choice(data, "root", RootClass, RootClass.CODE)

    def _causes(self, mapping: dict, key: str) -> tuple[str, ...]:
        causes = self.strings(mapping, key)
        for cause in causes:
            if cause not in CATEGORY_OF:
                self.fail(key, f"unknown cause {cause!r}")
        return causes

    def _params(self, params: Any) -> tuple[tuple[str, str], ...]:
        self.mapping(params, "params")
        for name, kind in params.items():
            self.identifier(name, f"params.{name}")
            if kind not in PARAM_TYPES:
                self.fail(f"params.{name}", f"type should be one of {', '.join(PARAM_TYPES)}")
        return tuple(params.items())

    def _signal(self, raw: Any, index: int, params: dict[str, str]) -> Signal:
        key = f"signals[{index}]."
        self.mapping(raw, key.rstrip("."), _SIGNAL_KEYS)
        name, source = self.text(raw, "name", key), self.text(raw, "pattern", key)
        ignore_case = self.flag(raw, "ignore_case", key)
        if self.eager:
            self._check_pattern(source, ignore_case, params, key)
        weight = raw.get("weight")
        if isinstance(weight, bool) or not isinstance(weight, (int, float)) or not 0 < weight <= 1:
            self.fail(key + "weight", "should be a number in (0, 1]")
        within = raw.get("within", 40)
        if isinstance(within, bool) or not isinstance(within, int) or within < 0:
            self.fail(key + "within", "should be a non-negative integer (lines)")
        variant = raw.get("variant")
        if variant is not None and not (isinstance(variant, str) and IDENTIFIER.fullmatch(variant)):
            self.fail(key + "variant", "should be an identifier")
        exceeds = raw.get("exceeds")
        if exceeds is not None:
            pair = exceeds if isinstance(exceeds, list) else []
            if len(pair) != 2 or not all(name in params for name in pair):
                self.fail(key + "exceeds", "should name two params the pattern captures:"
                          " [larger, smaller]")
            if self.eager and not all(f"(?P<{name}>" in source for name in pair):
                self.fail(key + "exceeds", "both groups should be captured by the pattern")
            exceeds = (pair[0], pair[1])
        return Signal(
            name=name, source=source, ignore_case=ignore_case, exceeds=exceeds,
            hints=tuple(w.lower() for w in self.words(raw, "hint", key)), weight=float(weight),
            role=self.choice(raw, "role", Role, Role.PRIMARY, key),
            severity=self.choice(raw, "severity", Severity, Severity.CRASH, key), within=within,
            variant=variant, requires=tuple(w.lower() for w in self.words(raw, "requires", key)),
            decisive=self.flag(raw, "decisive", key))

    def _cases(self, raw: Any) -> tuple[Case, ...]:
        if not isinstance(raw, list):
            self.fail("cases", "should be a list")
        cases = []
        for index, item in enumerate(raw):
            key = f"cases[{index}]."
            self.mapping(item, key.rstrip("."), _CASE_KEYS)
            self.require(item, ("name", "log", "cause"), key)
            log = self.text(item, "log", key)
            if len(log) > _MAX_CASE_CHARS:
                self.fail(key + "log", f"longer than {_MAX_CASE_CHARS} characters")
            cause = item["cause"]
            if cause is not None and cause not in CATEGORY_OF:
                self.fail(key + "cause", f"unknown cause {cause!r} (null: no cause)")
            params = self.mapping(item.get("params") or {}, key + "params")
            cases.append(Case(self.text(item, "name", key), log, cause, tuple(params.items())))
        return tuple(cases)

    def _check_pattern(self, source: str, ignore_case: bool, params: dict[str, str], key: str
                       ) -> None:
        import regex

        cost = regexcost.expansion(source)
        if cost > regexcost.MAX_EXPANSION:
            self.fail(key + "pattern", f"too costly to compile: nested counted repeats expand"
                      f" to about {cost} nodes (at most {regexcost.MAX_EXPANSION})")
        try:
            pattern = _compile(source, ignore_case)
        except regex.error as err:
            self.fail(key + "pattern", f"bad regex: {err}")
        for group in pattern.groupindex:
            if group not in params:
                self.fail(key + "pattern", f"named group {group!r} is not declared in params")
        _COMPILED[(source, ignore_case)] = pattern


def check_rule(path: Path, data: Any, *, eager: bool = True, user: bool = False) -> Rule:
    """The rule in `data` (parsed from `path`), checked; RulePackError names what is wrong.
    A user's rule (`user`) may declare a new cause, and its examples must hold."""
    rule = _RuleChecker(path, data, eager=eager, user=user).rule()
    if user:
        _check_examples(rule)
    return rule


def _check_examples(rule: Rule) -> None:
    """Each `examples.match` line matches a signal of the rule; no `no_match` line does."""
    def matched(text: str) -> bool:
        try:
            return any(signal_matches(signal, text) for signal in rule.signals)
        except TimeoutError:
            raise RulePackError(f"{rule.source}: {rule.id}: examples: a pattern takes over a"
                                " second on an example (a catastrophic regex?)") from None

    for text in rule.examples_match:
        if not matched(text):
            raise RulePackError(f"{rule.source}: {rule.id}: examples.match: no signal matches "
                                f"{shown_path(text[:60])!r}")
    for text in rule.examples_no_match:
        if matched(text):
            raise RulePackError(f"{rule.source}: {rule.id}: examples.no_match: a signal "
                                f"matches {shown_path(text[:60])!r}")


def signal_matches(signal: Signal, text: str) -> bool:
    """Whether the signal's regex matches `text` with groups that keep its relation."""
    return hit_groups(signal, signal.pattern.search(text, timeout=1.0)) is not None


def hit_groups(signal: Signal, found: regex.Match[str] | None) -> dict[str, str] | None:
    """The captured groups of a search of the signal, or None: no match, or numbers that
    break its relation (`exceeds`)."""
    if found is None:
        return None
    groups = {k: v for k, v in found.groupdict().items() if v is not None}
    return groups if signal.holds(groups) else None


def load_rule_file(path: Path, *, eager: bool = True) -> Rule:
    return check_rule(path, rulefiles.read_rule_file(path), eager=eager)
