"""The command over many logs: triage."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from minrepro.cli.app import RulesOpt, app
from minrepro.errors import MinreproError


@app.command()
def triage(paths: Annotated[list[str], typer.Argument(
               help="Logs: files, folders (recursively), globs, .gz.", metavar="PATH...",
               show_default=False)],
           out: Annotated[Path, typer.Option(
               help="Folder for the result store, scripts and reports.")] = Path("minrepro-triage"),
           json_: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
           csv_: Annotated[bool, typer.Option("--csv", help="Print one CSV row a group.")] = False,
           md: Annotated[bool, typer.Option(
               "--md", help="Print Markdown (also written to OUT with an SVG chart).")] = False,
           workers: Annotated[int | None, typer.Option(
               help="Local worker processes (default: one a CPU).", min=1)] = None,
           engine: Annotated[str, typer.Option(help="local or dask.")] = "local",
           scheduler: Annotated[str | None, typer.Option(
               help="Dask scheduler address, tcp://HOST:PORT (with --engine dask).")] = None,
           job_glob: Annotated[str | None, typer.Option(
               help="File names of one job's per-rank logs in a folder (default: rank*.log,"
                    " *.out).")] = None,
           rules: RulesOpt = None) -> None:
    """Group many failed jobs' logs: a table of groups, the root-cause distribution, scripts."""
    from rich.console import Console

    from minrepro.triage import render
    from minrepro.triage.engine import make_engine
    from minrepro.triage.groups import Summary, write_scripts
    from minrepro.triage.run import run_triage
    from minrepro.triage.store import Store
    from minrepro.triage.terminal import print_summary, progress_bar

    if sum((json_, csv_, md)) > 1:
        raise MinreproError("choose one of --json, --csv, --md")
    runner = make_engine(engine, workers=workers, scheduler=scheduler,
                         rule_dirs=tuple(str(r) for r in rules or ()))
    store = Store(out)
    try:
        with progress_bar(Console(stderr=True)) as (on_start, on_progress):
            stats = run_triage(paths, store, runner, job_glob=job_glob, on_start=on_start,
                               on_progress=on_progress)
        summary = Summary(store, stats.logs)
        write_scripts(summary)
        if json_ or csv_:
            for chunk in (render.iter_json if json_ else render.iter_csv)(summary):
                sys.stdout.write(chunk)
        elif md:
            render.write_chart(summary, out)
            text = "".join(render.iter_markdown(summary))
            (out / render.REPORT_NAME).write_text(text, encoding="utf-8")
            typer.echo(text, nl=False)
        else:
            print_summary(summary, Console())
    finally:
        runner.close()
        store.close()
