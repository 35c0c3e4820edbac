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

try:  # typer >= 0.2x carries its own copy of click
    from typer._click import exceptions as click_errors
except ImportError:  # pragma: no cover - older typer, on click itself
    from click import exceptions as click_errors  # type: ignore[no-redef]

from minrepro.errors import MinreproError
from minrepro.model import Diagnosis
from minrepro.sanitize import shown, shown_tree

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

LogArg = Annotated[str, typer.Argument(help="The training log: a file, a .gz file, or - for stdin.",
                                       show_default=False)]
RulesOpt = Annotated[list[Path] | None, typer.Option(
    "--rules", help="A directory of extra YAML rule packs (repeatable).")]


def _diagnose(log: str, rules: list[Path] | None = None, *, progress: bool = False) -> Diagnosis:
    from minrepro.diagnose.pipeline import diagnose_log
    from minrepro.diagnose.reader import LogReader
    from minrepro.output.progress import progress_for

    reader = LogReader(log)
    with progress_for(reader, enabled=progress):
        return diagnose_log(log, rule_dirs=[str(r) for r in rules or ()], reader=reader)


def _say(message: str) -> None:
    """One `minrepro: ...` line on stderr; a name or log text in it cannot forge another."""
    typer.echo(f"minrepro: {shown(message)}", err=True)


def _echo_warnings(diagnosis: Diagnosis) -> None:
    for warning in diagnosis.warnings:
        _say(f"warning: {warning}")


@app.command()
def diagnose(log: LogArg, json_: Annotated[bool, typer.Option(
        "--json", help="Print the diagnosis as one JSON object.")] = False,
             rules: RulesOpt = None) -> None:
    """Say what went wrong in LOG: cause, evidence lines, values, fix. Exit 0/1/2."""
    from minrepro.output.contract import diagnosis_to_json
    from minrepro.output.text import diagnosis_to_text

    diagnosis = _diagnose(log, rules, progress=not json_)
    if json_:
        typer.echo(json.dumps(diagnosis_to_json(diagnosis), indent=2, ensure_ascii=False))
    else:
        typer.echo(diagnosis_to_text(diagnosis), nl=False)
    _echo_warnings(diagnosis)
    raise typer.Exit(ExitCode.DIAGNOSED if diagnosis.answered else ExitCode.NO_KNOWN_CAUSE)


@app.command()
def repro(log: LogArg,
          output: Annotated[Path | None, typer.Option(
              "-o", "--output", help="Write the script here (default or -: stdout).")] = None,
          force: Annotated[bool, typer.Option(help="Overwrite an existing output file.")] = False,
          verify: Annotated[bool, typer.Option(
              "--verify", help="Run the script and report whether it reproduces.")] = False,
          rules: RulesOpt = None) -> None:
    """Write a standalone repro script for the cause diagnosed in LOG."""
    from minrepro.repro.render import render_repro, write_script

    output = None if output == Path("-") else output  # `-o -`: stdout, as the help says
    diagnosis = _diagnose(log, rules)
    _echo_warnings(diagnosis)
    if not diagnosis.diagnosed:
        _say(diagnosis.summary)
        raise typer.Exit(ExitCode.NO_KNOWN_CAUSE)
    text = render_repro(diagnosis)
    if output is not None:
        write_script(text, output, force=force, protect=(log,))
        _say(f"wrote {output} ({diagnosis.cause})")
    else:
        typer.echo(shown(text, multiline=True), nl=False)
    if verify:
        result = _verify_text(text, output)
        _say(f"verify: {_verify_line(result)}")
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
    typer.echo(shown(_verify_line(result)))
    raise typer.Exit(_verify_exit(result))


@app.command()
def report(log: LogArg,
           output: Annotated[Path | None, typer.Option(
               "-o", "--output", help="Write the Markdown here (default: stdout).")] = None,
           force: Annotated[bool, typer.Option(help="Overwrite an existing output file.")] = False,
           verify: Annotated[bool, typer.Option(
               help="Run the repro and include the result.")] = False,
           redact: Annotated[bool, typer.Option(
               help="Mask home paths, user and host names, IPs.")] = True,
           rules: RulesOpt = None) -> None:
    """A Markdown bug report: diagnosis, evidence, repro script, environment, traceback."""
    from minrepro.report.bugreport import build_report_for_log

    output = None if output == Path("-") else output
    diagnosis = _diagnose(log, rules)
    _echo_warnings(diagnosis)
    text = build_report_for_log(log, diagnosis, verify=verify, redact=redact)
    if output is not None:
        from minrepro.report.bugreport import write_text

        write_text(text, output, force=force, protect=(log,))
    else:
        typer.echo(text, nl=False)
    raise typer.Exit(ExitCode.DIAGNOSED if diagnosis.answered else ExitCode.NO_KNOWN_CAUSE)


@app.command()
def env(json_: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False) -> None:
    """Report this machine's environment (OS, Python, torch, CUDA, GPUs, env vars, packages)."""
    from minrepro.report.envreport import collect_env, env_to_json, format_env_text

    report_ = collect_env()
    if json_:
        typer.echo(json.dumps(shown_tree(env_to_json(report_)), indent=2))
    else:  # a variable's value may hold any byte (undecodable: a surrogate): shown safely
        typer.echo(shown(format_env_text(report_), multiline=True), nl=False)


@app.command()
def rules(rule_id: Annotated[str | None, typer.Argument(
              metavar="[ID]", help="A rule id (MR-MEM-002) or cause name to explain.")] = None,
          extra: RulesOpt = None) -> None:
    """List the rules, or explain one."""
    from minrepro.diagnose.rules.registry import describe_rule, list_rules, load_rules

    loaded = load_rules([str(r) for r in extra or ()])
    if rule_id is None:
        typer.echo(shown(list_rules(loaded), multiline=True), nl=False)
        return
    matches = loaded.lookup(rule_id)
    if not matches:
        raise MinreproError(f"no rule {rule_id!r}; `minrepro rules` lists them")
    typer.echo(shown("\n".join(describe_rule(r) for r in matches), multiline=True), nl=False)


def _run_app() -> int:
    """The app without click's standalone handling (so usage errors come to `main`)."""
    try:
        result = app(standalone_mode=False)
    except click_errors.NoArgsIsHelpError as help_:  # bare `minrepro`: the help, exit 2
        typer.echo(help_.ctx.get_help() if help_.ctx else "")
        return int(ExitCode.USAGE)
    return result if isinstance(result, int) else 0


def _command_name(err: click_errors.UsageError) -> str:
    name = err.ctx.info_name if err.ctx is not None and err.ctx.parent is not None else None
    return f"{name} " if name else ""


def main() -> None:
    """Console entry point: one line on stderr for any error, never a traceback.

    Typer handles its own usage errors (exit 2) and exits; library errors come out here.
    """
    code: int = 0
    try:
        code = _run_app()
    except click_errors.UsageError as err:  # typer's 5-7-line box, as one line
        _say(f"error: {err.format_message()} (see `minrepro {_command_name(err)}--help`)")
        code = ExitCode.USAGE
    except typer.Abort:  # click turns Ctrl-C into Abort
        _say("interrupted")
        code = 130
    except MinreproError as err:
        _say(f"error: {err}")
        code = ExitCode.USAGE
    except KeyboardInterrupt:
        typer.echo("minrepro: interrupted", err=True)
        code = 130
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except Exception as err:  # noqa: BLE001 - the contract is one line, never a traceback
        if os.environ.get("MINREPRO_DEBUG"):
            raise
        _say(f"internal error: {type(err).__name__}: {err}"
             " (MINREPRO_DEBUG=1 shows the traceback)")
        code = ExitCode.USAGE
    sys.exit(int(code))
