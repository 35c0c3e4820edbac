"""The `minrepro` command line. Commands parse arguments, call the library, format the result.

Library errors (MinreproError) are caught once, in `main`, and become one line on stderr.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from enum import IntEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from minrepro.errors import MinreproError
from minrepro.model import Diagnosis

if TYPE_CHECKING:
    from minrepro.repro.verify import VerifyResult


class ExitCode(IntEnum):
    DIAGNOSED = 0  # diagnose/repro: a cause was found (and, for repro, written)
    NO_KNOWN_CAUSE = 1
    USAGE = 2  # bad input or usage: one line on stderr
    CANNOT_TEST = 125  # verify: the script cannot be tested on this machine


app = typer.Typer(
    add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
    help="Diagnose a failed PyTorch training log and write a minimal repro script.",
)

LogArg = Annotated[str | None, typer.Argument(
    metavar="LOG", show_default=False,
    help="The training log: a file, a .gz file, or - for stdin (the default when stdin is a"
         " pipe or a file).")]
RulesOpt = Annotated[list[Path] | None, typer.Option(
    "--rules", help="A directory of extra YAML rule packs (repeatable).")]


def _log_source(log: str | None) -> str:
    """LOG as given; `-` when it is left out and stdin is not a terminal."""
    stdin_is_tty = sys.stdin is not None and sys.stdin.isatty()
    if log is None:
        if sys.stdin is None or stdin_is_tty:
            raise MinreproError("no LOG given: name a log file, or pipe one in (`- < run.log`)")
        return "-"
    if log == "-" and stdin_is_tty:
        typer.echo("minrepro: reading the log from stdin (Ctrl-D ends it)", err=True)
    return log


def _diagnose(log: str, rules: list[Path] | None = None, *, progress: bool = False) -> Diagnosis:
    from minrepro.diagnose.pipeline import diagnose_log
    from minrepro.diagnose.reader import LogReader
    from minrepro.output.progress import progress_for

    reader = LogReader(log)
    with progress_for(reader, enabled=progress):
        return diagnose_log(log, rule_dirs=[str(r) for r in rules or ()], reader=reader)


def _echo_warnings(diagnosis: Diagnosis) -> None:
    for warning in diagnosis.warnings:
        typer.echo(f"minrepro: warning: {warning}", err=True)


@app.command()
def diagnose(log: LogArg = None, json_: Annotated[bool, typer.Option(
        "--json", help="Print the diagnosis as one JSON object.")] = False,
             rules: RulesOpt = None) -> None:
    """Say what went wrong in LOG: cause, evidence lines, values, fix. Exit 0/1/2."""
    log = _log_source(log)
    from minrepro.output.contract import diagnosis_to_json
    from minrepro.output.terminal import emit
    from minrepro.output.text import diagnosis_to_text

    diagnosis = _diagnose(log, rules, progress=not json_)
    if json_:
        typer.echo(json.dumps(diagnosis_to_json(diagnosis), indent=2, ensure_ascii=False))
    else:
        emit(diagnosis_to_text(diagnosis))
    _echo_warnings(diagnosis)
    raise typer.Exit(ExitCode.DIAGNOSED if diagnosis.answered else ExitCode.NO_KNOWN_CAUSE)


@app.command()
def repro(log: LogArg = None,
          output: Annotated[Path | None, typer.Option(
              "-o", "--output", help="Write the script here (default: stdout).")] = None,
          force: Annotated[bool, typer.Option(help="Overwrite an existing output file.")] = False,
          verify: Annotated[bool, typer.Option(
              "--verify", help="Run the script and report whether it reproduces.")] = False,
          rules: RulesOpt = None) -> None:
    """Write a standalone repro script for the cause diagnosed in LOG."""
    log = _log_source(log)
    from minrepro.repro.render import render_repro, write_script

    diagnosis = _diagnose(log, rules, progress=True)  # on stderr, at a terminal only
    _echo_warnings(diagnosis)
    if not diagnosis.diagnosed:
        typer.echo(f"minrepro: {diagnosis.summary}", err=True)
        raise typer.Exit(ExitCode.NO_KNOWN_CAUSE)
    text = render_repro(diagnosis)
    if output is not None:
        write_script(text, output, force=force, protect=(log,) if log != "-" else ())
        typer.echo(f"minrepro: wrote {output} ({diagnosis.cause})", err=True)
    else:
        typer.echo(text, nl=False)
    if verify:
        result = _verify_text(text, output)
        typer.echo(f"minrepro: verify: {_verify_line(result)}", err=True)
        raise typer.Exit(_verify_exit(result))
    raise typer.Exit(ExitCode.DIAGNOSED)


def _verify_text(text: str, written: Path | None) -> VerifyResult:
    from minrepro.repro.verify import verify_script

    if written is not None:
        return verify_script(written)
    with tempfile.TemporaryDirectory(prefix="minrepro-") as tmp:
        path = Path(tmp) / "repro.py"
        path.write_text(text, encoding="utf-8")
        return verify_script(path)


def _verify_line(result: VerifyResult) -> str:
    """`reproduced: exit 1 in 1.2s: REPRODUCED: ...`, or the reason a run failed."""
    code = "killed" if result.exit_code is None else f"exit {result.exit_code}"
    said = result.reason if result.outcome in ("error", "cannot_test") else result.last_line
    return f"{result.outcome.value}: {code} in {result.seconds:.1f}s: {said or result.last_line}"


def _verify_exit(result: VerifyResult) -> int:
    """0 the expected outcome, 1 the other one, 125 cannot test here, 2 an error."""
    if result.passed:
        return 0
    if result.outcome == "cannot_test":
        return int(ExitCode.CANNOT_TEST)
    return 1 if result.outcome in ("reproduced", "not_reproduced") else int(ExitCode.USAGE)


@app.command()
def verify(script: Annotated[Path, typer.Argument(help="A repro script written by minrepro.")],
           fixed: Annotated[bool, typer.Option(
               "--fixed", help="Run with the fix applied; success is NOT REPRODUCED.")] = False,
           timeout: Annotated[float, typer.Option(
               help="Seconds before the run is killed.")] = 120.0,
           device: Annotated[str | None, typer.Option(help="cpu or cuda.")] = None) -> None:
    """Run SCRIPT and say: reproduced / not reproduced / cannot test here / error.

    Exit 0 when the outcome is the expected one (reproduced; with --fixed, not reproduced),
    1 when it is the other one, 125 when it cannot be tested here, 2 on an error.
    """
    from minrepro.errors import BadInputError, shown_path
    from minrepro.repro.verify import verify_script

    if not script.is_file():
        raise BadInputError(f"{shown_path(script)}: no such file")
    result = verify_script(script, fixed=fixed, timeout=timeout, device=device)
    typer.echo(_verify_line(result))
    raise typer.Exit(_verify_exit(result))


@app.command()
def report(log: LogArg = None,
           output: Annotated[Path | None, typer.Option(
               "-o", "--output", help="Write the Markdown here (default: stdout).")] = None,
           force: Annotated[bool, typer.Option(help="Overwrite an existing output file.")] = False,
           verify: Annotated[bool, typer.Option(
               help="Run the repro and include the result.")] = False,
           redact: Annotated[bool, typer.Option(
               help="Mask home paths, user and host names, IPs.")] = True,
           rules: RulesOpt = None) -> None:
    """A Markdown bug report: diagnosis, evidence, repro script, environment, traceback."""
    log = _log_source(log)
    from minrepro.report.bugreport import build_report_for_log

    diagnosis = _diagnose(log, rules, progress=True)  # on stderr, at a terminal only
    _echo_warnings(diagnosis)
    text = build_report_for_log(log, diagnosis, verify=verify, redact=redact)
    if output is not None:
        from minrepro.report.bugreport import write_text

        write_text(text, output, force=force, protect=(log,) if log != "-" else ())
        typer.echo(f"minrepro: wrote {output}", err=True)
    else:
        typer.echo(text, nl=False)
    raise typer.Exit(ExitCode.DIAGNOSED if diagnosis.answered else ExitCode.NO_KNOWN_CAUSE)


@app.command()
def env(json_: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False) -> None:
    """Report this machine's environment (OS, Python, torch, CUDA, GPUs, env vars, packages)."""
    from minrepro.report.envreport import collect_env, env_to_json, format_env_text

    report_ = collect_env()
    if json_:
        typer.echo(json.dumps(env_to_json(report_), indent=2))
    else:
        from minrepro.output.terminal import emit

        emit(format_env_text(report_))


@app.command()
def rules(rule_id: Annotated[str | None, typer.Argument(
              metavar="[ID]", help="A rule id (MR-MEM-002) or cause name to explain.")] = None,
          extra: RulesOpt = None,
          taxonomy: Annotated[bool, typer.Option(
              "--taxonomy", help="Print the causes by category, with their root classes.")]
          = False) -> None:
    """List the rules, or explain one (a rule id or a cause name)."""
    from minrepro.diagnose.rules.registry import describe_rule, list_rules, load_rules
    from minrepro.output.terminal import emit

    if taxonomy:
        from minrepro.output.text import taxonomy_text

        emit(taxonomy_text())
        return
    loaded = load_rules([str(r) for r in extra or ()])
    if rule_id is None:
        emit(list_rules(loaded))
        return
    matches = loaded.lookup(rule_id)
    if not matches:
        raise MinreproError(f"no rule {rule_id!r}; `minrepro rules` lists them")
    emit("\n".join(describe_rule(r) for r in matches))


def _version(value: bool) -> None:
    if value:
        from minrepro import __version__

        typer.echo(f"minrepro {__version__}")
        raise typer.Exit()


@app.callback()
def _options(version: Annotated[bool, typer.Option(
        "--version", callback=_version, is_eager=True, help="Print the version and exit.")]
        = False) -> None:
    """Diagnose a failed PyTorch training log and write a minimal repro script."""


@app.command()
def preflight(config: Annotated[Path, typer.Argument(
                  help="A training config: HF TrainingArguments JSON/YAML, Lightning or flat "
                       "YAML, or a minrepro snapshot.")],
              model_config: Annotated[Path | None, typer.Option(
                  "--model-config", help="The model's config.json.")] = None,
              data: Annotated[Path | None, typer.Option(
                  "--data", help="A sample of the training data: jsonl, csv, or a folder of "
                                 "class subfolders.")] = None,
              lock: Annotated[Path | None, typer.Option(
                  "--lock", help="A lock file pinning torch/CUDA (requirements, conda, "
                                 "snapshot).")] = None,
              gpu: Annotated[str | None, typer.Option(
                  "--gpu", help="Check against this card (A100-80GB, V100-16GB, T4, ...) "
                                "instead of this machine's.")] = None,
              json_: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False) -> None:
    """Check CONFIG before a run: one check per preventable cause. Exit 0 all pass, 1 any
    fail, 2 bad input."""
    from minrepro.preflight.checks import (
        any_failed,
        gather,
        results_to_json,
        results_to_text,
        run_checks,
    )

    results = run_checks(gather(config, model_config=model_config, data=data, lock=lock,
                                gpu=gpu))
    if json_:
        typer.echo(json.dumps(results_to_json(results), indent=2))
    else:
        typer.echo(results_to_text(results), nl=False)
    raise typer.Exit(ExitCode.NO_KNOWN_CAUSE if any_failed(results) else ExitCode.DIAGNOSED)


@app.command()
def snapshot(config: Annotated[Path | None, typer.Argument(
                 help="The run's config (optional: without it, the environment only).")] = None,
             out_dir: Annotated[Path | None, typer.Option(
                 "-o", "--output-dir", help="Where snapshots live (default "
                                            ".minrepro/snapshots).")] = None,
             list_: Annotated[bool, typer.Option(
                 "--list", help="List the snapshots in the directory.")] = False) -> None:
    """Store the run as content-hashed JSON: config, packages, CUDA/GPU, git, data."""
    from minrepro.preflight.snapshot import DEFAULT_DIR, list_snapshots, take_snapshot

    where = out_dir or DEFAULT_DIR
    if list_:
        for row in list_snapshots(where):
            typer.echo("  ".join(str(row[k] if row[k] is not None else "-") for k in (
                "id", "created", "config", "torch", "gpu", "commit"))
                       + ("  (uncommitted changes)" if row["dirty"] else ""))
        return
    taken = take_snapshot(config, where)
    typer.echo(f"{taken.id}  {taken.path}")


@app.command()
def diff(run_a: Annotated[str, typer.Argument(help="The good run: a log, snapshot or config.")],
         run_b: Annotated[str, typer.Argument(help="The failing run: a log, snapshot or config.")],
         cause: Annotated[str | None, typer.Option(
             help="B's failure, when B is no log (a taxonomy cause name).")] = None,
         json_: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False) -> None:
    """The differences between two runs, ranked by how likely each caused B's failure."""
    from minrepro.preflight.diff import compare, differences_to_json, differences_to_markdown
    from minrepro.preflight.facts import read_run
    from minrepro.taxonomy import ROOT_OF

    if cause is not None and cause not in ROOT_OF:
        raise MinreproError(f"unknown cause {cause!r}; see DESIGN.md's taxonomy")
    a, b = read_run(run_a), read_run(run_b)
    ranked = compare(a, b, cause)
    if json_:
        typer.echo(json.dumps(differences_to_json(a, b, ranked, cause), indent=2))
    else:
        typer.echo(differences_to_markdown(a, b, ranked, cause), nl=False)


@app.command()
def triage(paths: Annotated[list[str], typer.Argument(
               help="Logs: files, folders (recursively), globs, .gz.", show_default=False)],
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


def main() -> None:
    """Console entry point: one line on stderr for any error, never a traceback.

    Typer handles its own usage errors (exit 2) and exits; library errors come out here.
    """
    code: int = 0
    try:
        app()
    except MinreproError as err:
        typer.echo(f"minrepro: error: {err}", err=True)
        code = ExitCode.USAGE
    except KeyboardInterrupt:
        typer.echo("minrepro: interrupted", err=True)
        code = 130
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except Exception as err:  # noqa: BLE001 - the contract is one line, never a traceback
        if os.environ.get("MINREPRO_DEBUG"):
            raise
        typer.echo(f"minrepro: internal error: {type(err).__name__}: {err}"
                   " (MINREPRO_DEBUG=1 shows the traceback)", err=True)
        code = ExitCode.USAGE
    sys.exit(int(code))
