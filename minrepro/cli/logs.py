"""The commands on one log: diagnose, repro, verify, report."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from minrepro.cli.app import (
    ExitCode,
    ForceOpt,
    LogArg,
    RulesOpt,
    app,
    diagnose_with_progress,
    echo_warnings,
    log_source,
    say,
)
from minrepro.sanitize import shown

if TYPE_CHECKING:
    from minrepro.repro.verify import VerifyResult


@app.command()
def diagnose(log: LogArg = None, json_: Annotated[bool, typer.Option(
        "--json", help="Print the diagnosis as one JSON object.")] = False,
             rules: RulesOpt = None) -> None:
    """Say what went wrong in LOG: cause, evidence lines, values, fix. Exit 0/1/2."""
    log = log_source(log)
    from minrepro.output.contract import diagnosis_to_json
    from minrepro.output.terminal import emit
    from minrepro.output.text import diagnosis_to_text

    diagnosis = diagnose_with_progress(log, rules, progress=not json_)
    if json_:
        typer.echo(json.dumps(diagnosis_to_json(diagnosis), indent=2, ensure_ascii=False))
    else:
        emit(diagnosis_to_text(diagnosis))
    echo_warnings(diagnosis)
    raise typer.Exit(ExitCode.DIAGNOSED if diagnosis.answered else ExitCode.NO_KNOWN_CAUSE)


@app.command()
def repro(log: LogArg = None,
          output: Annotated[Path | None, typer.Option(
              "-o", "--output", help="Write the script here (default or -: stdout).")] = None,
          force: ForceOpt = False,
          verify: Annotated[bool, typer.Option(
              "--verify", help="Run the script and report whether it reproduces.")] = False,
          rules: RulesOpt = None) -> None:
    """Write a standalone repro script for the cause diagnosed in LOG."""
    log = log_source(log)
    from minrepro.repro.render import pack_template_dirs, render_repro, write_script

    output = None if output == Path("-") else output  # `-o -`: stdout, as the help says
    diagnosis = diagnose_with_progress(log, rules, progress=True)  # stderr, at a terminal
    echo_warnings(diagnosis)
    if not diagnosis.diagnosed:
        say(diagnosis.summary)
        raise typer.Exit(ExitCode.NO_KNOWN_CAUSE)
    text = render_repro(diagnosis, pack_template_dirs(rules or ()))
    if output is not None:
        write_script(text, output, force=force, protect=(log,))
        say(f"wrote {output} ({diagnosis.cause})")
    else:
        typer.echo(shown(text, multiline=True), nl=False)
    if verify:
        result = _verify_text(text, output)
        say(f"verify: {_verify_line(result)}")
        raise typer.Exit(_verify_exit(result))
    raise typer.Exit(ExitCode.DIAGNOSED)


def _verify_text(text: str, written: Path | None) -> VerifyResult:
    import tempfile  # noqa: PLC0415 - only `repro --verify` without -o needs it (start-up)

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
def verify(script: Annotated[Path, typer.Argument(
               metavar="SCRIPT", help="A repro script written by minrepro.")],
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
def report(log: LogArg = None,
           output: Annotated[Path | None, typer.Option(
               "-o", "--output", help="Write the Markdown here (default: stdout).")] = None,
           force: ForceOpt = False,
           verify: Annotated[bool, typer.Option(
               help="Run the repro and include the result.")] = False,
           redact: Annotated[bool, typer.Option(
               help="Mask home paths, user and host names, IPs.")] = True,
           rules: RulesOpt = None) -> None:
    """A Markdown bug report: diagnosis, evidence, repro script, environment, traceback."""
    log = log_source(log)
    from minrepro.report.bugreport import build_report_for_log

    output = None if output == Path("-") else output
    diagnosis = diagnose_with_progress(log, rules, progress=True)  # stderr, at a terminal
    echo_warnings(diagnosis)
    text = build_report_for_log(log, diagnosis, verify=verify, redact=redact,
                                packs=tuple(rules or ()))
    if output is not None:
        from minrepro.report.bugreport import write_text

        write_text(text, output, force=force, protect=(log,))
        say(f"wrote {output}")
    else:
        typer.echo(text, nl=False)
    raise typer.Exit(ExitCode.DIAGNOSED if diagnosis.answered else ExitCode.NO_KNOWN_CAUSE)

