"""Score findings into one Diagnosis with ranked alternatives.

Findings for the same cause (a rule's regex hits, an analyzer's curve reading) are combined as
independent evidence. A finding that explains another cause damps it (a fragmented allocator
explains the OOM; a memory leak explains the OOM it ends in). A cascade (an NCCL watchdog on
the ranks that waited for a crashed one) loses to the crash. Below THRESHOLD: no known cause.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from minrepro.diagnose.analyze.events import held_elsewhere
from minrepro.diagnose.rootrule import RootRule
from minrepro.diagnose.roots import ROOT_RULES, root_of
from minrepro.diagnose.rules.pack import Rule
from minrepro.diagnose.rules.registry import RuleSet
from minrepro.model import (
    Alternative,
    Diagnosis,
    Evidence,
    Failure,
    FailureKind,
    Finding,
    ParamValue,
    RootClass,
    Severity,
    package_key,
    package_versions,
)
from minrepro.patterns import lazy
from minrepro.taxonomy import CATEGORY_OF, ROOT_OF

THRESHOLD = 0.5  # the least confidence at which a cause is named
EXPLAINED_SHARE = 0.5  # what a finding keeps of its score when another explains it, or it
#: is the cascade of a crash
MAX_EVIDENCE = 8
CORROBORATION = 0.25  # what a root rule's placement adds to a weak finding of its cause
#: the confidence of a cause named by its root rule's placement alone (a signature refused at
#: a framework's hook, an ImportError of an installed package's own name): the rule's own
#: reading of the failure, where no signal of the cause's rules is on its lines
PLACEMENT_ONLY = 0.55

_SIGNALS = {2: "SIGINT", 6: "SIGABRT", 7: "SIGBUS", 9: "SIGKILL", 11: "SIGSEGV", 15: "SIGTERM"}
_DTYPES = {"float": "float32", "double": "float64", "half": "float16", "bfloat16": "bfloat16",
           "long": "int64", "int": "int32", "c10::half": "float16", "c10::bfloat16": "bfloat16",
           "float32": "float32", "float64": "float64", "float16": "float16", "int64": "int64"}


@dataclass(frozen=True)
class Context:
    """What the pipeline saw besides findings: used to explain and to enrich the diagnosis."""

    source: str = ""
    env: dict[str, str] | None = None
    loss_curve: tuple[float, ...] = ()
    failures: tuple[Failure, ...] = ()  # the first few exceptions and the last one
    warnings: tuple[str, ...] = ()
    first_failure: Failure | None = None  # what failed first, across ranks (failures.py)
    cascade: tuple[Failure, ...] = ()  # what followed from it
    first_is_failure: bool = False  # a failure of its own, not only a cascade or a wrapper
    empty: bool = False  # no line with anything but white space
    last_record_line: int = 0  # the last training record: an error before it did not stop the run
    no_batches: tuple[int, ...] = ()  # exception lines right after a loop over no batch


def decide(findings: Iterable[Finding], rules: RuleSet, context: Context) -> Diagnosis:
    merged = _rank(_later(_damp(_unrefuted(_merge(findings), context),
                                context.first_failure if context.first_is_failure else None),
                          context))
    merged = [f for f in merged if f.score > 0]  # a pure veto names no alternative
    placed: RootRule | None = None  # the first failure's root rule, asked only below THRESHOLD
    if not merged or merged[0].score < THRESHOLD:
        placed = _placed(context)
        merged = _rank(_corroborated(merged, context, placed))
    alternatives = tuple(Alternative(f.cause, f.category, f.score) for f in merged[1:4])
    if not merged or merged[0].score < THRESHOLD:
        return _undiagnosed(merged, alternatives, context, placed)
    best = merged[0]
    # The rule credited is the one whose finding weighed most; a finding without an id (a
    # hand-made one in a test, a cause named by placement alone) gets the first rule of its
    # cause.
    rule = (rules.get(best.rule_id) if best.rule_id
            else next(iter(rules.for_cause(best.cause)), None))
    return Diagnosis(
        cause=best.cause, category=best.category, confidence=round(best.score, 2),
        params=_with_logged_version(_normalise(dict(best.params)), context.env or {}),
        evidence=best.evidence,
        fix=fitted_fix(rule.fix_for(best.variant), context.env or {}) if rule else "",
        alternatives=alternatives,
        rule_id=rule.id if rule else None, title=rule.title if rule else best.cause,
        variant=best.variant, summary=rule.title if rule else "",
        source=context.source, env=dict(context.env or {}), loss_curve=context.loss_curve,
        **_failure_fields(context.first_failure
                          or _nearest_failure(context.failures, best.first_line)),
        root=root_of_cause(best, rule, context), cascade=context.cascade,
        warnings=context.warnings,
    )


def _placed(context: Context) -> RootRule | None:
    """The root rule of the first failure, where there is one (the log's trained length
    decides the rules that need a run that trained first; a loop over no batch just before
    it, those of an empty data set)."""
    first = context.first_failure
    if first is None:
        return None
    return root_of(first, trained=len(context.loss_curve) >= TRAINED_POINTS,
                   no_batches=first.line in context.no_batches)


def _unrefuted(findings: list[Finding], context: Context) -> list[Finding]:
    """Findings less those of the cause the first failure's root rule rules out, where their
    evidence is that failure's own lines (a missing module that is the project's own package
    is no package to install)."""
    first = context.first_failure
    refuted = {f.cause for f in findings if f.cause in _REFUTABLE}
    if first is None or not refuted:
        return findings
    rule = _placed(context)
    if rule is None or rule.refutes not in refuted:
        return findings
    return [f for f in findings if f.cause != rule.refutes
            or not all(first.first_line <= e.line <= first.line for e in f.evidence)]


_REFUTABLE = frozenset(r.refutes for r in ROOT_RULES if r.refutes)


def _corroborated(findings: list[Finding], context: Context,
                  rule: RootRule | None) -> list[Finding]:
    """A finding too weak alone, on the first failure's own lines, of the cause the failure's
    root `rule` says its placement is evidence of (a keyword refused at a call into a library:
    the version rule's match and the signal's are two readings of one exception) gains
    CORROBORATION; where no rule of that cause found anything, the placement names it alone
    (at PLACEMENT_ONLY)."""
    first = context.first_failure
    if first is None or not context.first_is_failure or rule is None or not rule.corroborates:
        return findings
    if not any(f.cause == rule.corroborates for f in findings):
        return [*findings, _placement(first, rule)]
    return [replace(f, score=min(round(f.score + CORROBORATION, 3), 0.99))
            if f.cause == rule.corroborates
            and any(first.first_line <= e.line <= first.line for e in f.evidence) else f
            for f in findings]


def _placement(first: Failure, rule: RootRule) -> Finding:
    """The cause a root rule's placement is evidence of, where no rule of that cause saw
    anything: named at PLACEMENT_ONLY, the failure's exception line its evidence (no rule id:
    decide credits the cause's own first rule)."""
    return Finding(rule_id="", cause=rule.corroborates,
                   category=CATEGORY_OF[rule.corroborates], score=PLACEMENT_ONLY,
                   first_line=first.first_line,
                   evidence=(Evidence(line=first.line, text=first.headline, rank=first.rank),))


def _undiagnosed(merged: list[Finding], alternatives: tuple[Alternative, ...],
                 context: Context, placed: RootRule | None) -> Diagnosis:
    """No cause named: what failed first, and the root class its root rule (`placed`, or that
    of the exception chained to it) gives."""
    first = context.first_failure
    root_rule = placed
    if first is not None and root_rule is None:
        root_rule = _root_of_what_followed(first, context.cascade)
    last = context.failures[-1] if context.failures else None
    if first is not None:
        seen = ("what failed first: "
                + (first.headline or first.message or "a traceback cut before its exception line"))
    elif last is not None:
        headline = last.headline or "a traceback cut off before its exception line"
        seen = (f"{headline} (line {last.line}) did not stop the run: it trained on after it"
                if last.line < context.last_record_line else f"the log ends in {headline}")
    elif merged:
        seen = f"only weak signs of {merged[0].cause} (confidence {merged[0].score:.2f})"
    elif context.empty:
        seen = "the log is empty"
    else:
        seen = "no error or failing metric was found"
    alts = tuple(Alternative(f.cause, f.category, f.score) for f in merged[:3])
    return Diagnosis(
        cause=None, category=None, confidence=0.0, alternatives=alts or alternatives,
        summary=f"no known training-failure cause: {seen}", source=context.source,
        env=dict(context.env or {}), loss_curve=context.loss_curve,
        failure=first, traceback=_traceback_text(first or last),
        warnings=context.warnings,
        root=root_rule.root if root_rule else None, cascade=context.cascade if first else (),
        rule_id=root_rule.id if root_rule else None,
        title=root_rule.title if root_rule else "", fix=root_rule.fix if root_rule else "",
    )


def _root_of_what_followed(first: Failure, cascade: Sequence[Failure]) -> RootRule | None:
    """Where no root rule knows the first failure, the exception raised while handling it
    (chained, printed right after it) may say what it meant: a KeyError, then
    `ConfigurationError: key "train_data_path" is required`. Told by nearness, not by the
    traceback extractor's chain flag: pasted excerpts often drop the "During handling of the
    above exception" line between the two."""
    chained = next((f for f in cascade if f.rank == first.rank
                    and f.kind is FailureKind.EXCEPTION  # (a kill that followed says nothing of it)
                    and 0 < f.first_line - first.line <= _CHAIN_GAP), None)
    return root_of(chained) if chained is not None else None


_CHAIN_GAP = 4  # lines between an exception and the traceback chained to it (the separator)
TRAINED_POINTS = 20  # loss records before a failure that show the run had been training

#: A CUDA OOM while another process holds the card is the environment's, not the config's.
_OTHER_PROCESS = lazy(r"Process \d+ has [\d.]+ [GM]iB memory in use|"
                            r"another process|other processes", re.IGNORECASE)


def root_of_cause(best: Finding, rule: Rule | None, context: Context) -> RootClass | None:
    """The usual root class of the cause (its rule's), unless the evidence names another."""
    root = rule.root if rule is not None and rule.root is not None else ROOT_OF.get(best.cause)
    by_variant = dict(rule.variant_roots) if rule is not None else {}
    if best.variant in by_variant:
        return by_variant[best.variant]
    if best.cause == "cuda_oom":
        held = _held_elsewhere(best.params)
        if held is None:  # no numbers: what the report says of other processes decides
            held = any(_OTHER_PROCESS.search(e.text) for e in best.evidence)
        if held:
            return RootClass.ENVIRONMENT
    return root


def _held_elsewhere(pairs: tuple[tuple[str, ParamValue], ...]) -> bool | None:
    """The OOM report's numbers leave most of the card to another process (`held_elsewhere`,
    the fragmentation check's reading too); None without those numbers.
    (The numbers decide over the report's "Process N has X GiB memory in use" lines: in a
    container the process itself is listed so, its PID not being its own.)"""
    params = dict(pairs)
    capacity, free, reserved = (params.get(k) for k in ("capacity_bytes", "free_bytes",
                                                        "reserved_bytes"))
    if not (isinstance(capacity, (int, float)) and isinstance(free, (int, float))
            and isinstance(reserved, (int, float))) or capacity <= 0:
        return None
    return held_elsewhere(capacity, free, reserved)


def _merge(findings: Iterable[Finding]) -> list[Finding]:
    groups: dict[str, list[Finding]] = {}
    for finding in findings:
        groups.setdefault(finding.cause, []).append(finding)
    return [_combine(sorted(group, key=lambda f: -f.score)) for group in groups.values()]


def _combine(group: list[Finding]) -> Finding:
    missing = 1.0
    for finding in group:
        missing *= 1.0 - finding.score
    params: dict[str, ParamValue] = {}
    for finding in group:  # the strongest finding's values first
        for name, value in finding.params:
            params.setdefault(name, value)
    evidence = {(e.line, e.text): e for f in group for e in f.evidence}
    kept = 1.0
    for finding in group:
        kept *= finding.kept_share
    group = [f for f in group if f.score > 0] or group  # a pure veto carries no evidence
    best = group[0]
    return replace(
        best, score=min(round((1.0 - missing) * kept, 3), 0.99), kept_share=1.0,
        first_line=min(f.first_line for f in group),
        evidence=tuple(sorted(evidence.values(), key=lambda e: e.line))[:MAX_EVIDENCE],
        params=tuple(params.items()),
        severity=(Severity.CRASH if any(f.severity is Severity.CRASH for f in group)
                  else best.severity),
        variant=next((f.variant for f in group if f.variant), None),
        cascade=all(f.cascade for f in group),
        supersedes=tuple(sorted({c for f in group for c in f.supersedes})),
    )


def _damp(findings: list[Finding], first: Failure | None = None) -> list[Finding]:
    explained = {c for f in findings if f.score >= THRESHOLD for c in f.supersedes}
    crashed = any(not f.cascade and f.severity is Severity.CRASH and f.score >= THRESHOLD
                  for f in findings) or (
        # a failure no rule names (rank 2's worker error) came before the watchdogs
        first is not None and all(not f.cascade for f in findings if f.first_line <= first.line))
    damped = []
    for finding in findings:
        factor = EXPLAINED_SHARE if finding.cause in explained else 1.0
        if finding.cascade and crashed:
            factor *= EXPLAINED_SHARE
        damped.append(replace(finding, score=round(finding.score * factor, 3)))
    return damped


def _later(findings: list[Finding], context: Context) -> list[Finding]:
    """A crash finding wholly on the lines of a later failure of another type, where the
    first failure is an exception of its own (attempts appended to one log: the first failed
    with a ValueError, a later one with a shape mismatch), keeps EXPLAINED_SHARE: the
    diagnosis is of what failed first (a later copy of the same exception is still it)."""
    first = context.first_failure
    if first is None or not context.first_is_failure or not first.exc_type or first.stopped:
        return findings
    later = min((f.first_line for f in context.failures if f.first_line > first.line
                 and f.short_type != first.short_type), default=0)
    if not later:
        return findings
    return [replace(f, score=round(f.score * EXPLAINED_SHARE, 3))
            if f.severity is Severity.CRASH and not f.cascade and f.evidence
            and min(e.line for e in f.evidence) >= later else f for f in findings]


def _rank(findings: list[Finding]) -> list[Finding]:
    """Highest score first; near-ties go to the failure that came first in the log."""
    ordered = sorted(findings, key=lambda f: (-f.score, f.first_line))
    if len(ordered) >= 2 and ordered[0].score - ordered[1].score < 0.05:
        tied = [f for f in ordered if ordered[0].score - f.score < 0.05
                 and f.severity is Severity.CRASH]
        if tied:
            first = min(tied, key=lambda f: f.first_line)
            ordered.remove(first)
            ordered.insert(0, first)
    return ordered


def _normalise(params: dict[str, ParamValue]) -> dict[str, ParamValue]:
    """Spell values the way templates expect them: dtypes as torch names, ops lower-case."""
    for name in ("expected_dtype", "found_dtype"):
        value = params.get(name)
        if isinstance(value, str):
            params[name] = _DTYPES.get(value.lower().removeprefix("torch."), value)
    if isinstance(params.get("op"), str):
        params["op"] = str(params["op"]).lower()
    code = params.get("exit_code")
    if "signal" not in params and isinstance(code, int) and -code in _SIGNALS:
        params["signal"] = _SIGNALS[-code]  # a launcher's exitcode -N: killed by signal N
    return params


def _with_logged_version(params: dict[str, ParamValue], env: dict[str, str]
                         ) -> dict[str, ParamValue]:
    """The version the log shows of the package a finding names (pip freeze, a banner); a
    missing keyword or name with no package named is the one package the log shows, if one."""
    named = package_versions(env)
    if "package" not in params and ("keyword" in params or "symbol" in params) and len(named) == 1:
        params["package"] = next(iter(named))
    package = params.get("package")
    if isinstance(package, str) and "logged_version" not in params:
        key = package_key(package)
        version = env.get("torch_version") if key == package_key("torch") else env.get(key)
        if version:
            params["logged_version"] = version
    return params


def _nearest_failure(failures: Sequence[Failure], line: int) -> Failure | None:
    """The exception whose traceback holds `line`, else the first one after it. Not one
    before it: called where no first failure was found, so the run went on past those. Not
    the user's Ctrl-C either: a stop is no failure."""
    failures = [f for f in failures if not f.interrupted]
    for failure in failures:
        if failure.first_line <= line <= failure.line:
            return failure
    return next((f for f in failures if f.first_line >= line), None)


def _traceback_text(failure: Failure | None) -> str:
    return failure.text if failure is not None else ""


def _failure_fields(failure: Failure | None) -> dict[str, Any]:
    return {"failure": failure, "traceback": failure.text if failure else ""}



_MIXED_PRECISION = lazy(r",? (?:use |enable )?(?:automatic )?mixed precision"
                              r"(?: \((?:bf16|fp16)(?:/(?:bf16|fp16))?\))?(?=[,.;])")


def fitted_fix(fix: str, env: dict[str, str]) -> str:
    """The rule's fix, less what the log shows the run already does: no "mixed precision"
    advice to a run that trains in fp16 or bf16."""
    if env.get("dtype", "").lower() in ("fp16", "bf16", "float16", "bfloat16"):
        return _MIXED_PRECISION.sub("", fix)
    return fix
