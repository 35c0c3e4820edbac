"""`minrepro report`: one Markdown document to paste into a GitHub issue.

Sections: title, diagnosis, evidence excerpt (with context read by a second streaming pass),
loss-curve sparkline (convergence causes), the repro script exactly as `minrepro repro`
writes it and how to run it, optional verify result, environment (what the log reveals and,
labelled apart, the machine that ran minrepro), and the traceback, collapsed.

`build_report` is a pure function of its inputs (golden tests inject a fixed `EnvReport`);
`build_report_for_log` gathers the pieces: the excerpt, the script, the local environment,
the verify run.

Redaction is on by default because these reports are pasted into public trackers, and
training logs carry home paths, user names, host names and internal IP addresses; masking
them costs nothing a maintainer needs to reproduce the failure. It covers every piece of log
text outside the python block (evidence, context, traceback, summary, values). The python
block is left alone: it must equal what `minrepro repro` writes, and it holds no log text
beyond the sanitised header comments of the template.

Log text is untrusted Markdown too: it only appears inside code fences longer than any run
of backticks it contains, or escaped, so it cannot close a fence or open HTML.
"""

from __future__ import annotations

import math
import os
import tempfile
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from minrepro.diagnose.reader import LogReader
from minrepro.errors import BadInputError, RenderError
from minrepro.files import write_atomic
from minrepro.model import PACKAGE_FACT, Diagnosis, Evidence, Line, ParamValue, package_versions
from minrepro.output.redact import Redactor, local_redactor, redact_script
from minrepro.output.text import failure_summary, human_bytes
from minrepro.report.envreport import EnvReport, format_env_text
from minrepro.report.markdown import clean_line, code_span, fence, md_escape, package_row, sparkline
from minrepro.repro.verify import VerifyResult
from minrepro.sanitize import shown

#: Masks identifying text (a `Redactor`), or returns it unchanged.
Mask = Callable[[str], str]

CONTEXT_LINES = 2  # lines shown before and after each evidence line
MAX_EVIDENCE_LINES = 12  # evidence lines shown; a diagnosis may cite more
MAX_TRACEBACK_CHARS = 20_000
# Differences below 1 % of the loss are noise for the eye; a plateau at 2.3026 +- 0.0002
# must draw flat, not as a jagged line that suggests oscillation.
_CURVE_CAUSES = frozenset({"overfitting"})  # curve causes outside the convergence category
_ENV_LABELS = {
    "torch_version": "PyTorch", "cuda_version": "CUDA", "driver_version": "NVIDIA driver",
    "gpu_name": "GPU", "compute_capability": "Compute capability",
    "supported_archs": "Architectures the build supports", "python_version": "Python",
    "dtype": "dtype",
}


@dataclass(frozen=True, slots=True)
class ExcerptLine:
    """One line of the evidence excerpt: an evidence line or context around one."""

    line: int
    text: str
    rank: int | None = None
    evidence: bool = False


# --- gathering the pieces ------------------------------------------------------------------


def build_report_for_log(log: str | os.PathLike[str], diagnosis: Diagnosis, *,
                         verify: bool = False, redact: bool = True,
                         local_env: EnvReport | None = None, user: str | None = None,
                         hostname: str | None = None, verify_timeout: float = 60.0,
                         packs: tuple[Path, ...] = ()) -> str:
    """The report for `diagnosis` of `log`: reads the excerpt, renders, probes, verifies.
    `packs`: the user's rule packs, whose templates/ folders render their own causes."""
    script, script_error = repro_script(diagnosis, packs)
    if local_env is None:
        from minrepro.report.envreport import collect_env

        local_env = collect_env()
    verify_result = run_verify(script, verify_timeout) if verify and script else None
    return build_report(
        diagnosis, script=script, script_error=script_error,
        excerpt=excerpt_for(log, diagnosis.evidence), local_env=local_env,
        verify_result=verify_result,
        redactor=local_redactor(user=user, hostname=hostname) if redact else None)


def repro_script(diagnosis: Diagnosis, packs: tuple[Path, ...] = ()
                 ) -> tuple[str | None, str | None]:
    """(script, None), or (None, why there is none) for a diagnosed cause without one."""
    if not diagnosis.diagnosed:
        return None, None
    from minrepro.repro.render import has_template, pack_template_dirs, render_repro

    folders = pack_template_dirs(packs)
    if not has_template(diagnosis.cause or "", folders):
        return None, f"no repro template for {diagnosis.cause} yet"
    try:
        return render_repro(diagnosis, folders), None
    except RenderError as err:
        return None, f"the repro script could not be rendered: {err}"


def run_verify(script: str, timeout: float) -> VerifyResult:
    from minrepro.repro.verify import verify_script

    with tempfile.TemporaryDirectory(prefix="minrepro-report-") as folder:
        path = Path(folder) / "repro.py"
        path.write_text(script, encoding="utf-8")
        return verify_script(path, timeout=timeout)


def excerpt_for(log: str | os.PathLike[str],
                evidence: Sequence[Evidence]) -> tuple[ExcerptLine, ...]:
    """Evidence with context from a second pass over `log`; just the evidence when the log
    cannot be read again (stdin, a pipe, a file gone since)."""
    chosen = _chosen_evidence(evidence)
    if not chosen:
        return ()
    if str(log) == "-" or not Path(log).is_file():
        return evidence_only(chosen)
    try:
        return read_excerpt(LogReader(log), chosen)
    except BadInputError:
        return evidence_only(chosen)


def _chosen_evidence(evidence: Sequence[Evidence]) -> list[Evidence]:
    """The first MAX_EVIDENCE_LINES distinct evidence lines, in line order."""
    by_line: dict[int, Evidence] = {}
    for item in evidence:
        if len(by_line) >= MAX_EVIDENCE_LINES:
            break
        by_line.setdefault(item.line, item)
    return [by_line[n] for n in sorted(by_line)]


def evidence_only(evidence: Iterable[Evidence]) -> tuple[ExcerptLine, ...]:
    return tuple(ExcerptLine(e.line, e.text, e.rank, True) for e in evidence)


def read_excerpt(reader: Iterable[Line], evidence: Sequence[Evidence], *,
                 context: int = CONTEXT_LINES) -> tuple[ExcerptLine, ...]:
    """Evidence lines and `context` lines around each, in one streaming pass.

    Keeps only the wanted lines and stops after the last one, so memory is bounded by the
    excerpt, not the log. Of a line rewritten with '\\r' the last update is shown, as a
    terminal would; evidence lines show the text the diagnosis cited.
    """
    cited = {e.line: e for e in evidence}
    wanted = {n for line in cited for n in range(max(line - context, 1), line + context + 1)}
    last_wanted = max(wanted, default=0)
    seen: dict[int, ExcerptLine] = {}
    last_number = 0
    records = iter(reader)
    try:
        for record in records:
            if record.line > last_wanted:
                break
            last_number = record.line
            if record.line in wanted:
                seen[record.line] = ExcerptLine(record.line, record.text, record.rank)
    finally:  # a LogReader's generator closes its file when closed; a list iterator has none
        getattr(records, "close", lambda: None)()
    return _assemble(cited, wanted, seen, last_number)


def _assemble(cited: dict[int, Evidence], wanted: set[int], seen: dict[int, ExcerptLine],
              last_number: int) -> tuple[ExcerptLine, ...]:
    lines = []
    for number in sorted(wanted):
        if number in cited:
            item = cited[number]
            lines.append(ExcerptLine(number, item.text, item.rank, True))
        elif number <= last_number:  # numbers the reader skipped are blank lines
            lines.append(seen.get(number, ExcerptLine(number, "")))
    return tuple(lines)


# --- the document --------------------------------------------------------------------------


def build_report(diagnosis: Diagnosis, *, script: str | None = None,
                 script_error: str | None = None, excerpt: Sequence[ExcerptLine] | None = None,
                 local_env: EnvReport | None = None, verify_result: VerifyResult | None = None,
                 redactor: Redactor | None = None) -> str:
    """The Markdown report. Pure: the same inputs give the same text.

    `excerpt` None means the evidence lines alone; `redactor` None means no masking.
    """
    mask: Mask = redactor or str
    if excerpt is None:
        excerpt = evidence_only(_chosen_evidence(diagnosis.evidence))
    parts = [_title(diagnosis, mask)]
    if diagnosis.diagnosed:
        parts += [_diagnosis_section(diagnosis, mask), _evidence_section(excerpt, mask)]
        parts += _curve_section(diagnosis)
        parts.append(_repro_section(diagnosis, redact_script(script, mask), script_error,
                                    verify_result))
    else:
        parts.append(_no_cause_section(diagnosis, mask))
    parts.append(_env_section(diagnosis, local_env, mask))
    parts += _traceback_section(diagnosis, mask)
    parts.append(_footer(diagnosis, mask, redacted=redactor is not None))
    return shown("\n\n".join(p.rstrip("\n") for p in parts if p) + "\n", multiline=True)


def _title(diagnosis: Diagnosis, mask: Mask) -> str:
    name = md_escape(mask(diagnosis.source or "the log"))
    if diagnosis.diagnosed:
        what = f"{diagnosis.category}/{diagnosis.cause}"
    elif diagnosis.root is not None:
        what = f"{diagnosis.root.value} failure (no known cause)"
    else:
        what = "no known cause"
    lines = [f"# minrepro: {what} in {name}"]
    lines += [f"> **Warning:** {md_escape(mask(w))}" for w in diagnosis.warnings]
    return "\n\n".join(lines)


def _diagnosis_section(diagnosis: Diagnosis, mask: Mask) -> str:
    title = diagnosis.title or (diagnosis.cause or "").replace("_", " ")
    first = failure_summary(diagnosis)
    lines = [
        "## Diagnosis", "",
        f"**{md_escape(title)}**", "",
        *([f"- **What failed first:** {md_escape(mask(first))}"] if first else []),
        f"- **Root class:** `{diagnosis.root.value if diagnosis.root else 'unknown'}`",
        f"- **Category / cause:** `{diagnosis.category}` / `{diagnosis.cause}`",
        f"- **Confidence:** {diagnosis.confidence:.2f}",
    ]
    if diagnosis.rule_id:
        rule = clean_line(diagnosis.rule_id, 40)
        lines.append(f"- **Rule:** {code_span(rule)} (`minrepro rules {rule}` explains it)")
    if diagnosis.variant:
        lines.append(f"- **Variant:** {code_span(diagnosis.variant)}")
    if diagnosis.params:
        values = ", ".join(f"{code_span(k)} = {code_span(_param(k, v, mask))}"
                           for k, v in diagnosis.params.items())
        lines.append(f"- **Values from the log:** {values}")
    lines.append(f"- **Fix:** {md_escape(diagnosis.fix or '-')}")
    lines.append(f"- **Alternatives:** {_alternatives(diagnosis) or 'none'}")
    return "\n".join(lines)


def _param(name: str, value: ParamValue, mask: Mask) -> str:
    if isinstance(value, str):
        return mask(value)
    try:
        if name.endswith("_bytes") and type(value) is int:
            return f"{value} ({human_bytes(value)})"
        return repr(value)
    except (ValueError, OverflowError):  # an int of thousands of digits, beyond float range
        return "a huge number"


def _alternatives(diagnosis: Diagnosis) -> str:
    return ", ".join(f"`{a.cause}` ({a.category}, {a.confidence:.2f})"
                     for a in diagnosis.alternatives)


def _evidence_section(excerpt: Sequence[ExcerptLine], mask: Mask) -> str:
    if not excerpt:
        return ""
    note = ("Lines of the log (`>` marks the evidence, the others are context;"
            " `[rank N]` is the process that printed it):")
    if all(line.evidence for line in excerpt):
        note = ("Evidence lines of the log (`[rank N]` is the process that printed it; no"
                " context: the log could not be read a second time, e.g. it came from stdin):")
    return "\n\n".join(["## Evidence", note, fence(format_excerpt(excerpt, mask))])


def format_excerpt(excerpt: Sequence[ExcerptLine], mask: Mask = str) -> str:
    width = len(str(max(line.line for line in excerpt)))
    rows: list[str] = []
    previous = None
    for line in excerpt:
        if previous is not None and line.line > previous + 1:
            rows.append(" " * (width + 2) + "...")
        rank = f"[rank {line.rank}] " if line.rank is not None else ""
        mark = ">" if line.evidence else " "
        rows.append(f"{mark} {line.line:>{width}} | {rank}{clean_line(mask(line.text))}"
                    .rstrip())
        previous = line.line
    return "\n".join(rows)


def _curve_section(diagnosis: Diagnosis) -> list[str]:
    curve = diagnosis.loss_curve
    if not curve or not (diagnosis.category == "convergence" or diagnosis.cause in _CURVE_CAUSES):
        return []
    finite = [v for v in curve if math.isfinite(v)]
    bad = len(curve) - len(finite)
    stats = (f"{len(curve)} points, first {curve[0]:g}, min {min(finite):g},"
             f" max {max(finite):g}, last {curve[-1]:g}" if finite else f"{len(curve)} points")
    stats += f"; {bad} NaN/Inf shown as !" if bad else ""
    return [f"## Loss curve\n\n{fence(sparkline(curve))}\n\n{stats}. Bars scale from min to"
            " max; changes under 1 % of the loss draw flat."]


def _repro_section(diagnosis: Diagnosis, script: str | None, script_error: str | None,
                   verify_result: VerifyResult | None) -> str:
    if script is None:
        why = script_error or f"no repro template for {diagnosis.cause} yet"
        return f"## Repro\n\n_{md_escape(why)}._"
    parts = ["## Repro",
             "Standalone (standard library + torch), written by `minrepro repro`."
             " Save it as `repro.py`:",
             fence(script, "python"), _HOW_TO_RUN]
    if verify_result is not None:
        parts.append(_verify_text(verify_result))
    return "\n\n".join(parts)


_HOW_TO_RUN = """\
How to run it (exit codes follow `git bisect run`):

- `python repro.py`: exit 1 and a last line `REPRODUCED: <cause>: ...` when it fails the \
same way; exit 0 and `NOT REPRODUCED: ...` when it does not; exit 125 when it cannot be \
tested on that machine (e.g. it needs CUDA).
- `python repro.py --fixed`: the same with the recommended fix applied; it should exit 0.
- `python repro.py --device cpu` (or `cuda`) chooses the device."""


def _verify_text(result: VerifyResult) -> str:
    code = "killed after the timeout" if result.exit_code is None else f"exit {result.exit_code}"
    last = code_span(result.last_line) if result.last_line else "(no output)"
    return ("**Verify result** (volatile: from one run on the machine that ran minrepro, when"
            f" the report was made): `{result.outcome.value}`, {code}, last line {last}")


def _no_cause_section(diagnosis: Diagnosis, mask: Mask) -> str:
    summary = md_escape(mask(diagnosis.summary or "no known training-failure cause"))
    lines = ["## Diagnosis", ""]
    first = failure_summary(diagnosis)
    if first:
        lines += [f"**What failed first:** {md_escape(mask(first))}", ""]
        root = diagnosis.root.value if diagnosis.root else "unknown (the evidence does not decide)"
        lines.append(f"- **Root class:** `{root}`")
        if diagnosis.rule_id:
            lines.append(f"- **Rule:** {code_span(clean_line(diagnosis.rule_id, 40))}"
                         f" ({md_escape(diagnosis.title)})")
            lines.append(f"- **Fix:** {md_escape(diagnosis.fix)}")
        lines.append("")
    lines += [summary, "",
              "minrepro found no known training-failure cause, so there is no repro script.",
              "", "### Weak candidates", ""]
    if diagnosis.alternatives:
        lines += [f"- `{a.cause}` ({a.category}), confidence {a.confidence:.2f}"
                  for a in diagnosis.alternatives]
    else:
        lines.append("None: no rule matched, even weakly.")
    return "\n".join(lines)


def _env_section(diagnosis: Diagnosis, local_env: EnvReport | None, mask: Mask) -> str:
    parts = ["## Environment", "### From the log"]
    if diagnosis.env:
        facts = {k: v for k, v in diagnosis.env.items() if not k.startswith(PACKAGE_FACT)}
        keys = [k for k in _ENV_LABELS if k in facts] + [k for k in facts if k not in _ENV_LABELS]
        rows = [f"- {_ENV_LABELS.get(k, md_escape(k))}: {code_span(facts[k])}" for k in keys]
        parts.append("\n".join(rows + package_row(package_versions(diagnosis.env))))
    else:
        parts.append("The log does not reveal versions or GPU.")
    if local_env is not None:
        summary = "Machine that ran minrepro (not necessarily the failing machine)"
        parts.append(f"<details><summary>{summary}</summary>\n\n"
                     f"{fence(mask(format_env_text(local_env)))}\n\n</details>")
    return "\n\n".join(parts)


def _traceback_section(diagnosis: Diagnosis, mask: Mask) -> list[str]:
    text = diagnosis.traceback.strip("\n")
    if not text:
        return []
    if len(text) > MAX_TRACEBACK_CHARS:
        text = "...\n" + text[-MAX_TRACEBACK_CHARS:]
    body = "\n".join(clean_line(mask(line)).rstrip() for line in text.splitlines())
    return [f"<details><summary>Traceback</summary>\n\n{fence(body)}\n\n</details>"]


def _footer(diagnosis: Diagnosis, mask: Mask, *, redacted: bool) -> str:
    name = md_escape(mask(diagnosis.source or "LOG"))
    line = f"_Generated by `minrepro report` from {name}."
    if redacted:
        line += (" Home paths, user and host names, IP and e-mail addresses in log text are"
                 " masked (`<user>`, `<host>`, `<ip>`, `<email>`).")
    return line + "_"


def write_text(text: str, path: str | os.PathLike[str], *, force: bool = False,
               protect: tuple[str | os.PathLike[str], ...] = ()) -> Path:
    """Write the report atomically (0o666 less the umask); never clobber unless `force`."""
    return write_atomic(text, path, force=force, protect=protect)
