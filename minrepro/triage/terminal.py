"""The triage on a terminal: rich tables (width-aware; plain, colourless when piped) and a
progress bar over logs that shows only on an interactive stderr."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

from rich import box
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
from rich.table import Table
from rich.text import Text

from minrepro.triage.groups import Summary
from minrepro.triage.render import label, when

TABLE_GROUPS = 30
WIDE = 120  # columns below which `where` and `last seen` are left out


def print_summary(summary: Summary, console: Console) -> None:
    """The groups table, then the root-cause distribution (root classes and causes)."""
    wide = console.width >= WIDE
    groups = Table(title=f"{summary.logs} logs, {summary.failures} failures", box=box.SIMPLE)
    groups.add_column("#", justify="right")
    groups.add_column("failures", justify="right", min_width=8)
    groups.add_column("share", justify="right")
    groups.add_column("cause", overflow="fold", min_width=20, max_width=28)
    groups.add_column("root", no_wrap=True, min_width=11)
    if wide:
        groups.add_column("where", no_wrap=True, overflow="ellipsis", max_width=28)
        groups.add_column("last seen", no_wrap=True, min_width=16)
    groups.add_column("message", no_wrap=True, overflow="ellipsis",
                      max_width=max(20, console.width - (110 if wide else 62)))
    for number, group in enumerate(summary.groups(), 1):
        if number > TABLE_GROUPS:
            break
        cells: list[str | Text] = [str(number), str(group.count), f"{100 * group.share:.1f}%",
                                   Text(label(group)), group.root]
        if wide:
            cells += [Text(group.frame or "-"), when(group.last_seen)]
        groups.add_row(*cells, Text(group.message or group.headline or "-"))
    console.print(groups)
    console.print(_roots_table(summary))
    errors = sum(1 for _ in summary.errors())
    if errors:
        console.print(f"{errors} inputs could not be read (--json lists them)")


def _roots_table(summary: Summary) -> Table:
    total = summary.failures or 1
    table = Table(title="root-cause distribution", box=box.SIMPLE)
    table.add_column("root class / cause")
    table.add_column("failures", justify="right")
    table.add_column("share", justify="right")
    for root, count in summary.roots().items():
        table.add_row(root, str(count), f"{100 * count / total:.1f}%")
    table.add_section()
    for cause, root, count in summary.causes():
        table.add_row(Text(f"{cause} [{root}]"), str(count), f"{100 * count / total:.1f}%")
    return table


@contextmanager
def progress_bar(console: Console) -> Iterator[tuple[Callable[[int], None],
                                                       Callable[[int], None]]]:
    """(on_start(total), on_progress(done)) callbacks: a bar on a terminal, nothing else."""
    if not console.is_terminal:
        yield (lambda total: None), (lambda done: None)
        return
    bar = Progress(TextColumn("triage"), BarColumn(), MofNCompleteColumn(),
                   TimeRemainingColumn(), console=console, transient=True)
    task = bar.add_task("logs", total=None)
    with bar:
        yield (lambda total: bar.update(task, total=total)), \
            (lambda done: bar.advance(task, done))
