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
    examples: {match: [...], no_match: [...]}

Errors name the file, the rule id and the key: `cuda_oom.yaml: MR-MEM-002: signals[1].weight:
should be a number in 0..1`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from minrepro.diagnose.rules import files as rulefiles
from minrepro.errors import RulePackError, shown_path
from minrepro.diagnose.rules.files import BUILTIN_DIR
from minrepro.taxonomy import CATEGORY_OF

if TYPE_CHECKING:
    import regex

PARAM_TYPES = ("int", "float", "bytes", "duration_ms", "str")
ROLES = ("primary", "support", "against")
SEVERITIES = ("crash", "symptom", "warning", "prose")
_RULE_KEYS = {"id", "cause", "category", "title", "explanation", "fix", "references", "params",
              "signals", "examples", "cascade", "supersedes"}
_SIGNAL_KEYS = {"name", "pattern", "hint", "requires", "weight", "role", "severity", "within",
                "variant", "ignore_case"}
_REQUIRED = ("id", "cause", "category", "title", "explanation", "fix", "signals")
_ID = re.compile(r"MR-(?:MEM|CONV|SPD|PREC|ENV|USR)-\d{3}")


_COMPILED: dict[tuple[str, bool], regex.Pattern[str]] = {}


@dataclass(frozen=True, slots=True)
class Signal:
    name: str
    source: str  # the regex, compiled on first use (built-in packs are checked by the tests)
    ignore_case: bool
    hints: tuple[str, ...]  # lower-case literals; empty = run on every line
    weight: float
    role: str = "primary"
    severity: str = "crash"
    within: int = 40
    variant: str | None = None
    requires: tuple[str, ...] = ()  # lower-case literals, one of which must occur too

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
class Rule:
    id: str
    cause: str
    category: str
    title: str
    explanation: str
    fix: str
    signals: tuple[Signal, ...]
    params: tuple[tuple[str, str], ...] = ()  # (name, type)
    references: tuple[str, ...] = ()
    examples_match: tuple[str, ...] = ()
    examples_no_match: tuple[str, ...] = ()
    cascade: bool = False  # a consequence of another rank's failure (NCCL watchdog, ...)
    supersedes: tuple[str, ...] = ()  # causes this one explains (a leak explains its OOM)
    source: str = ""  # file name, for messages

    def param_type(self, name: str) -> str | None:
        return dict(self.params).get(name)


class _Checker:
    """Validates one rule mapping, raising RulePackError with file, rule id and key."""

    def __init__(self, path: Path, data: Any, *, eager: bool = True) -> None:
        self.eager = eager  # compile and check regexes now (user packs); else on first use
        self.where = shown_path(path.name)
        raw_id = data.get("id") if isinstance(data, dict) else None
        # Only a plausible id goes into messages: a crafted one could be huge or multi-line.
        self.rule_id = raw_id if isinstance(raw_id, str) and _ID.fullmatch(raw_id) else (
            shown_path(raw_id[:40]) if isinstance(raw_id, str) else "?")
        if not isinstance(data, dict):
            self.fail("", "the file should hold one mapping (a rule)")
        self.data = data

    def fail(self, key: str, problem: str) -> None:
        raise RulePackError(f"{self.where}: {self.rule_id}: {key or 'rule'}: {problem}")

    def text(self, mapping: dict, key: str, prefix: str = "", required: bool = True) -> str:
        value = mapping.get(key)
        if value is None and not required:
            return ""
        if not isinstance(value, str) or not value.strip():
            self.fail(prefix + key, "should be a non-empty string")
        return value.strip()

    def rule(self) -> Rule:
        data = self.data
        self._keys(data, _RULE_KEYS, "")
        for key in _REQUIRED:
            if key not in data:
                self.fail(key, "is required")
        rule_id, cause, category = (self.text(data, k) for k in ("id", "cause", "category"))
        if not _ID.fullmatch(rule_id):
            self.fail("id", f"{rule_id!r} should look like MR-MEM-001 (MEM|CONV|SPD|PREC|ENV|USR)")
        if cause not in CATEGORY_OF:
            self.fail("cause", f"unknown cause {cause!r}; see the taxonomy in DESIGN.md")
        if CATEGORY_OF[cause] != category:
            self.fail("category", f"{cause} belongs to {CATEGORY_OF[cause]!r}, not {category!r}")
        params = self._params(data.get("params") or {})
        signals = data["signals"]
        if not isinstance(signals, list) or not signals:
            self.fail("signals", "should be a non-empty list")
        examples = data.get("examples") or {}
        self._keys(examples, {"match", "no_match"}, "examples.")
        return Rule(
            id=rule_id, cause=cause, category=category, title=self.text(data, "title"),
            explanation=self.text(data, "explanation"), fix=self.text(data, "fix"),
            signals=tuple(self._signal(s, i, dict(params)) for i, s in enumerate(signals)),
            params=params, references=self._strings(data, "references"),
            examples_match=self._strings(examples, "match", "examples."),
            examples_no_match=self._strings(examples, "no_match", "examples."),
            cascade=self._bool(data, "cascade"), supersedes=self._causes(data, "supersedes"),
            source=self.where,
        )

    def _keys(self, mapping: Any, allowed: set[str], prefix: str) -> None:
        if not isinstance(mapping, dict):
            self.fail(prefix.rstrip("."), "should be a mapping")
        for key in mapping:
            if key not in allowed:
                self.fail(f"{prefix}{key}", f"unknown key (allowed: {', '.join(sorted(allowed))})")

    def _strings(self, mapping: dict, key: str, prefix: str = "") -> tuple[str, ...]:
        value = mapping.get(key) or []
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            self.fail(prefix + key, "should be a list of strings")
        return tuple(value)

    def _causes(self, mapping: dict, key: str) -> tuple[str, ...]:
        causes = self._strings(mapping, key)
        for cause in causes:
            if cause not in CATEGORY_OF:
                self.fail(key, f"unknown cause {cause!r}")
        return causes

    def _bool(self, mapping: dict, key: str, prefix: str = "") -> bool:
        value = mapping.get(key, False)
        if not isinstance(value, bool):
            self.fail(prefix + key, "should be true or false")
        return value

    def _params(self, params: Any) -> tuple[tuple[str, str], ...]:
        self._keys(params, set(params) if isinstance(params, dict) else set(), "params.")
        for name, kind in params.items():
            if kind not in PARAM_TYPES:
                self.fail(f"params.{name}", f"type should be one of {', '.join(PARAM_TYPES)}")
        return tuple(params.items())

    def _signal(self, raw: Any, index: int, params: dict[str, str]) -> Signal:
        key = f"signals[{index}]."
        self._keys(raw, _SIGNAL_KEYS, key)
        name, source = self.text(raw, "name", key), self.text(raw, "pattern", key)
        ignore_case = self._bool(raw, "ignore_case", key)
        if self.eager:
            self._check_pattern(source, ignore_case, params, key)
        weight = raw.get("weight")
        if isinstance(weight, bool) or not isinstance(weight, (int, float)) or not 0 < weight <= 1:
            self.fail(key + "weight", "should be a number in (0, 1]")
        role = raw.get("role", "primary")
        if role not in ROLES:
            self.fail(key + "role", f"should be one of {', '.join(ROLES)}")
        severity = raw.get("severity", "crash")
        if severity not in SEVERITIES:
            self.fail(key + "severity", f"should be one of {', '.join(SEVERITIES)}")
        within = raw.get("within", 40)
        if isinstance(within, bool) or not isinstance(within, int) or within < 0:
            self.fail(key + "within", "should be a non-negative integer (lines)")
        hints, requires = self._literals(raw, "hint", key), self._literals(raw, "requires", key)
        variant = raw.get("variant")
        if variant is not None and not isinstance(variant, str):
            self.fail(key + "variant", "should be a string")
        return Signal(name=name, source=source, ignore_case=ignore_case, hints=hints,
                      weight=float(weight), role=role, severity=severity, within=within,
                      variant=variant, requires=requires)

    def _literals(self, raw: dict, name: str, key: str) -> tuple[str, ...]:
        words = raw.get(name, [])
        words = [words] if isinstance(words, str) else words
        if not isinstance(words, list) or not all(isinstance(w, str) and w for w in words):
            self.fail(key + name, "should be a string or a list of non-empty strings")
        return tuple(w.lower() for w in words)

    def _check_pattern(self, source: str, ignore_case: bool, params: dict[str, str], key: str
                       ) -> None:
        import regex

        try:
            pattern = _compile(source, ignore_case)
        except regex.error as err:
            self.fail(key + "pattern", f"bad regex: {err}")
        for group in pattern.groupindex:
            if group not in params:
                self.fail(key + "pattern", f"named group {group!r} is not declared in params")
        _COMPILED[(source, ignore_case)] = pattern


def load_rule_file(path: Path, *, eager: bool = True) -> Rule:
    return _Checker(path, rulefiles.read_rule_file(path), eager=eager).rule()


def load_rules(extra_dirs: Iterable[str | Path] = (), *, eager: bool = False
               ) -> tuple[Rule, ...]:
    """The built-in rules, then the user's; a user rule may not reuse a built-in id.

    Built-in regexes compile on first use (start-up stays fast; the test suite compiles and
    checks them all with eager=True); a user's pack is always checked in full when loaded.
    """
    rules = (_frozen_rules() if not eager else None) or _load_dir(BUILTIN_DIR, eager=eager)
    builtin = {rule.id: rule.source for rule in rules}
    users: dict[str, str] = {}
    for directory in extra_dirs:
        for rule in _load_dir(Path(directory), eager=True):
            if rule.id in builtin:
                raise RulePackError(f"{rule.source}: {rule.id}: id: already defined by the"
                                    f" built-in {builtin[rule.id]} (a pack cannot override it)")
            if rule.id in users:
                raise RulePackError(f"{rule.source}: {rule.id}: id: duplicate of {users[rule.id]}"
                                    " in another rule pack")
            users[rule.id] = rule.source
            rules += (rule,)
    return rules


def _load_dir(directory: Path, *, eager: bool) -> tuple[Rule, ...]:
    if not directory.is_dir():
        raise RulePackError(f"{shown_path(directory)}: rule directory not found")
    return _checked(((path, rulefiles.read_rule_file(path))
                     for path in rulefiles.rule_files(directory)), eager=eager)


def _checked(parsed: Iterable[tuple[Path, Any]], *, eager: bool = False) -> tuple[Rule, ...]:
    rules: list[Rule] = []
    seen: dict[str, str] = {}
    for path, data in parsed:
        rule = _Checker(path, data, eager=eager).rule()
        if rule.id in seen:
            raise RulePackError(f"{path.name}: {rule.id}: id: duplicate of {seen[rule.id]}")
        seen[rule.id] = path.name
        rules.append(rule)
    return tuple(rules)


def _frozen_rules() -> tuple[Rule, ...] | None:
    """The built-in rules from the frozen copy, checked as the YAML would be (None: no
    usable copy, read the YAML)."""
    parsed = rulefiles.frozen_builtin()
    return None if parsed is None else _checked(parsed)


def freeze() -> str:
    """Parse the built-in YAML (checking it in full) and write the frozen copy; says so."""
    paths = rulefiles.rule_files(BUILTIN_DIR)
    parsed = [(path, rulefiles.read_rule_file(path)) for path in paths]
    _checked(parsed, eager=True)
    return rulefiles.write_frozen(parsed)


def list_rules(rules: Iterable[Rule]) -> str:
    """One line a rule: id, category/cause, title."""
    return "".join(f"{r.id:<12} {r.category + '/' + r.cause:<36} {r.title}\n"
                   for r in sorted(rules, key=lambda r: r.id))


def describe_rule(rule: Rule) -> str:
    signals = "".join(f"  - {s.name} ({s.role}, weight {s.weight}): {s.source}\n"
                      for s in rule.signals)
    refs = "".join(f"  {ref}\n" for ref in rule.references)
    return (f"{rule.id}  {rule.category}/{rule.cause}  ({rule.source})\n{rule.title}\n\n"
            f"{rule.explanation}\n\nfix: {rule.fix}\n\nsignals:\n{signals}"
            + (f"\nreferences:\n{refs}" if refs else ""))

