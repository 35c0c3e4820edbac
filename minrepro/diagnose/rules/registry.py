"""One registry of everything with a rule id: the built-in rule files, the analyzers' checks
and the user's packs (yamllint's `_RULES` / bandit's `plugins_by_id`).

A finding carries the id of what made it; `decide`, `--json`, `report` and `minrepro rules ID`
look that id up here for its title and fix. An analyzer check is a `Rule` without signals: it
has an id, a cause, a title and an explanation of its own, and the fix of its cause's rule.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from minrepro.diagnose.analyze.checks import CHECKS, AnalyzerCheck
from minrepro.diagnose.roots import ROOT_RULES
from minrepro.diagnose.rules import files as rulefiles
from minrepro.diagnose.rules.files import BUILTIN_DIR
from minrepro.diagnose.rules.pack import Rule, check_rule
from minrepro.errors import RulePackError, shown_path
from minrepro.taxonomy import CATEGORY_OF, ROOT_OF


@dataclass(frozen=True)
class RuleSet:
    """Every rule by id, in a fixed order: built-in files, analyzer checks, user packs."""

    rules: tuple[Rule, ...]
    user_ids: frozenset[str] = frozenset()  # the rules of the user's packs

    def __iter__(self) -> Iterator[Rule]:
        return iter(self.rules)

    def __len__(self) -> int:
        return len(self.rules)

    @property
    def pattern_rules(self) -> tuple[Rule, ...]:
        """The rules the matcher runs (those with signals)."""
        return tuple(rule for rule in self.rules if rule.signals)

    def get(self, rule_id: str) -> Rule | None:
        """The rule with this id, in any case (`mr-mem-002`)."""
        wanted = rule_id.upper()
        return next((rule for rule in self.rules if rule.id == wanted), None)

    def for_cause(self, cause: str) -> list[Rule]:
        return [rule for rule in self.rules if rule.cause == cause]

    def lookup(self, name: str) -> list[Rule]:
        """The rules a user means by `name`: an id, or a cause's name."""
        found = self.get(name)
        return [found] if found is not None else self.for_cause(name)


def load_rules(extra_dirs: Iterable[str | Path] = (), *, eager: bool = False) -> RuleSet:
    """The built-in rules and checks, then the user's; a user rule may not reuse an id.

    Built-in regexes compile on first use (start-up stays fast; the test suite compiles and
    checks them all with eager=True); a user's pack is always checked in full when loaded.
    """
    builtin = (_frozen_rules() if not eager else None) or _load_dir(BUILTIN_DIR, eager=eager)
    rules = builtin + analyzer_rules(builtin) + root_rules()
    known = {rule.id: rule.source for rule in rules}
    users: dict[str, str] = {}
    for directory in extra_dirs:
        for rule in _load_pack(Path(directory)):
            if rule.id in known:
                raise RulePackError(f"{rule.source}: {rule.id}: id: already defined by the"
                                    f" built-in {known[rule.id]} (a pack cannot override it)")
            if rule.id in users:
                raise RulePackError(f"{rule.source}: {rule.id}: id: duplicate of {users[rule.id]}"
                                    " in another rule pack")
            users[rule.id] = rule.source
            rules += (rule,)
    return RuleSet(rules, frozenset(users))


def analyzer_rules(builtin: Iterable[Rule]) -> tuple[Rule, ...]:
    """The analyzers' checks as rules without signals, each with its cause's fix."""
    fixes: dict[str, str] = {}
    for rule in builtin:
        fixes.setdefault(rule.cause, rule.fix)
    return tuple(_as_rule(check, fixes.get(check.cause, "")) for check in CHECKS)


def root_rules() -> tuple[Rule, ...]:
    """The root rules of roots.py (no cause: where a failure outside the taxonomy came from)
    as rules without signals, listed as root/<class>."""
    return tuple(Rule(id=r.id, cause=r.root.value if r.root else "undecided", category="root",
                      title=r.title, explanation=r.title + ".", fix=r.fix, signals=(),
                      root=r.root, source="roots.py") for r in ROOT_RULES)


def _as_rule(check: AnalyzerCheck, fix: str) -> Rule:
    return Rule(id=check.id, cause=check.cause, category=CATEGORY_OF[check.cause],
                title=check.title, explanation=check.explanation, fix=fix, signals=(),
                root=ROOT_OF[check.cause], source=check.source)


def _load_dir(directory: Path, *, eager: bool) -> tuple[Rule, ...]:
    if not directory.is_dir():
        raise RulePackError(f"{shown_path(directory)}: rule directory not found")
    return _checked(((path, rulefiles.read_rule_file(path))
                     for path in rulefiles.rule_files(directory)), eager=eager)


def _load_pack(path: Path) -> tuple[Rule, ...]:
    """A user's pack: a directory of rule files, or one rule file; every rule checked in full
    (regexes compiled, examples run), new causes allowed."""
    if path.is_file():
        files = [path]
    elif path.is_dir():
        files = list(rulefiles.rule_files(path))
        if not files:
            raise RulePackError(f"{shown_path(path)}: no rule files (*.yaml, *.yml) in this"
                                " directory")
    else:
        raise RulePackError(f"{shown_path(path)}: rule pack not found (a directory or a .yaml)")
    return _checked(((p, rulefiles.read_rule_file(p)) for p in files), eager=True, user=True)


def _checked(parsed: Iterable[tuple[Path, Any]], *, eager: bool = False,
             user: bool = False) -> tuple[Rule, ...]:
    rules: list[Rule] = []
    seen: dict[str, str] = {}
    for path, data in parsed:
        rule = check_rule(path, data, eager=eager, user=user)
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
    """What `minrepro rules ID` prints: the rule explains itself."""
    signals = "".join(f"  - {s.name} ({s.role.value}, weight {s.weight}): {s.source}\n"
                      for s in rule.signals) or "  (an analyzer check: code, not patterns)\n"
    refs = "".join(f"  {ref}\n" for ref in rule.references)
    return (f"{rule.id}  {rule.category}/{rule.cause}  ({rule.source})\n{rule.title}\n\n"
            f"{rule.explanation}\n\nfix: {rule.fix}\n\nsignals:\n{signals}"
            + (f"\nreferences:\n{refs}" if refs else ""))
