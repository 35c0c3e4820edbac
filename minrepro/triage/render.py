"""A triage's outputs: a rich table, Markdown with an SVG chart, JSON, CSV.

Every format is produced as a stream of text chunks from the store (group members are never
all in memory). Text from logs is untrusted: in Markdown it is escaped or put in code spans,
in the SVG only fixed root-class names and numbers appear.
"""

from __future__ import annotations

import csv
import io
import json
import time
from collections.abc import Iterator
from pathlib import Path

from minrepro.report.markdown import code_span, fence, md_escape
from minrepro.triage.groups import Group, Summary

CHART_NAME = "roots.svg"
REPORT_NAME = "triage.md"
MD_DETAILS = 20  # groups described in full; the table lists all of them


def when(stamp: float | None) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.gmtime(stamp)) if stamp else "-"


def label(group: Group) -> str:
    return group.cause or group.kind


# --- JSON and CSV ---------------------------------------------------------------------------


def iter_json(summary: Summary) -> Iterator[str]:
    """One JSON object: logs, groups (each with every member's path), roots, causes, errors."""
    yield f'{{"logs": {summary.logs}, "failures": {summary.failures}, "groups": ['

    for index, group in enumerate(summary.groups()):
        head = {"fingerprint": group.fingerprint, "cause": group.cause, "kind": group.kind,
                "root": group.root, "count": group.count, "share": round(group.share, 4),
                "frame": group.frame, "message": group.message,
                "first_seen": when(group.first_seen), "last_seen": when(group.last_seen),
                "script": group.script}
        yield ("," if index else "") + "\n  " + json.dumps(head)[:-1] + ', "logs": ['
        for number, path in enumerate(summary.logs_of(group.fingerprint)):
            yield ("," if number else "") + json.dumps(path)
        yield "]}"
    yield '\n], "roots": ' + json.dumps(summary.roots()) + ', "causes": ['
    causes = [{"cause": c, "root": r, "count": n} for c, r, n in summary.causes()]
    yield ", ".join(json.dumps(c) for c in causes) + '], "errors": ['
    for index, (path, reason) in enumerate(summary.errors()):
        yield ("," if index else "") + "\n  " + json.dumps({"path": path, "reason": reason})
    yield "\n]}\n"


CSV_COLUMNS = ("fingerprint", "cause", "kind", "root", "count", "share", "first_seen",
               "last_seen", "frame", "message", "example", "script")


def iter_csv(summary: Summary) -> Iterator[str]:
    """One row a group."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for group in summary.groups():
        writer.writerow((group.fingerprint, group.cause or "", group.kind, group.root,
                         group.count, f"{group.share:.4f}", when(group.first_seen),
                         when(group.last_seen), group.frame, group.message,
                         group.examples[0] if group.examples else "", group.script or ""))
        yield buffer.getvalue()
        buffer.seek(0)
        buffer.truncate()
    yield buffer.getvalue()


# --- Markdown and its chart -----------------------------------------------------------------


def roots_svg(roots: dict[str, int]) -> str:
    """A horizontal bar chart of failures a root class (fixed names and numbers only)."""
    rows = [(name, count) for name, count in roots.items()]
    top = max((count for _, count in rows), default=0) or 1
    total = sum(count for _, count in rows) or 1
    height = 30 + 24 * len(rows)
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="560" height="{height}"'
             ' font-family="sans-serif" font-size="13">',
             '<text x="10" y="18" font-weight="bold">Failures by root class</text>']
    for index, (name, count) in enumerate(rows):
        y = 30 + 24 * index
        width = round(330 * count / top)
        parts.append(f'<text x="10" y="{y + 15}">{name}</text>'
                     f'<rect x="110" y="{y + 3}" width="{width}" height="16" fill="#4c78a8"/>'
                     f'<text x="{115 + width}" y="{y + 15}">{count}'
                     f' ({100 * count / total:.0f}%)</text>')
    parts.append("</svg>\n")
    return "\n".join(parts)


def write_chart(summary: Summary, folder: Path) -> Path:
    path = folder / CHART_NAME
    path.write_text(roots_svg(summary.roots()), encoding="utf-8")
    return path


def iter_markdown(summary: Summary, chart: str = CHART_NAME) -> Iterator[str]:
    """The report: counts, the root-cause distribution (chart + tables), groups, errors."""
    groups = list(summary.groups())
    yield "# Fleet triage\n\n"
    yield (f"{summary.logs} logs read, {summary.failures} failures (a job of several rank"
           f" logs counts once) in {len(groups)} groups.\n\n")
    yield from _md_distribution(summary, chart)
    yield from _md_groups(groups)
    errors = list(_md_errors(summary))
    if errors:
        yield "## Inputs that could not be read\n\n| path | reason |\n|---|---|\n"
        yield from errors
        yield "\n"


def _md_distribution(summary: Summary, chart: str) -> Iterator[str]:
    total = summary.failures or 1
    yield f"## Root-cause distribution\n\n![failures by root class]({chart})\n\n"
    yield "| root class | failures | share |\n|---|---:|---:|\n"
    for root, count in summary.roots().items():
        yield f"| {root} | {count} | {100 * count / total:.1f} % |\n"
    yield "\n### By cause\n\n| cause | root class | failures | share |\n|---|---|---:|---:|\n"
    for cause, root, count in summary.causes():
        yield f"| {md_escape(cause)} | {root} | {count} | {100 * count / total:.1f} % |\n"
    yield "\n"


def _md_groups(groups: list[Group]) -> Iterator[str]:
    yield ("## Groups\n\n| # | cause | root class | failures | share | first seen | last seen"
           " | script |\n|---:|---|---|---:|---:|---|---|---|\n")
    for number, group in enumerate(groups, 1):
        script = code_span(group.script) if group.script else "-"
        yield (f"| {number} | {md_escape(label(group))} | {group.root} | {group.count} |"
               f" {100 * group.share:.1f} % | {when(group.first_seen)} |"
               f" {when(group.last_seen)} | {script} |\n")
    yield "\n"
    for number, group in enumerate(groups[:MD_DETAILS], 1):
        yield from _md_group(number, group)


def _md_group(number: int, group: Group) -> Iterator[str]:
    yield f"### {number}. {md_escape(label(group))} ({group.count})\n\n"
    yield f"- fingerprint: {code_span(group.fingerprint)}\n"
    if group.frame:
        yield f"- where: {code_span(group.frame)}\n"
    if group.message:
        yield f"- message: {code_span(group.message)}\n"
    yield "- examples: " + ", ".join(code_span(p) for p in group.examples) + "\n"
    if group.script:
        yield f"- script: {code_span(group.script)}\n"
    if group.evidence:
        lines = "\n".join(f"{e['line']}: {e['text']}" for e in group.evidence)
        yield "\nEvidence of " + code_span(group.examples[0]) + ":\n\n" + fence(lines) + "\n"
    yield "\n"


def _md_errors(summary: Summary) -> Iterator[str]:
    for path, reason in summary.errors():
        yield f"| {code_span(path)} | {md_escape(reason)} |\n"
