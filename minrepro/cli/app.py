"""The command line's shared parts: the typer app, exit codes, argument types, and the
helpers every command uses (where the log comes from, a diagnosis with a progress bar, one
`minrepro: ...` line on stderr)."""

from __future__ import annotations

import sys
from enum import IntEnum
from pathlib import Path
from typing import Annotated, Any

import typer
import typer.core

from minrepro.errors import MinreproError
from minrepro.model import Diagnosis
from minrepro.sanitize import shown


class ExitCode(IntEnum):
    DIAGNOSED = 0  # diagnose/repro: a cause was found (and, for repro, written)
    NO_KNOWN_CAUSE = 1
    USAGE = 2  # bad input or usage: one line on stderr
    CANNOT_TEST = 125  # verify: the script cannot be tested on this machine


class PlainUsageCommand(typer.core.TyperCommand):
    """typer's command with click's usage line: `verify [OPTIONS] SCRIPT`, where typer writes
    a required argument as `{SCRIPT}`."""

    def collect_usage_pieces(self, ctx: Any) -> list[str]:
        return [piece[1:-1] if piece.startswith("{") and piece.endswith("}") else piece
                for piece in super().collect_usage_pieces(ctx)]


class _App(typer.Typer):
    def command(self, *args: Any, **kwargs: Any) -> Any:  # every command: the plain usage
        kwargs.setdefault("cls", PlainUsageCommand)
        return super().command(*args, **kwargs)


app = _App(
    add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
    help="Diagnose a failed PyTorch training log and write a minimal repro script.",
)

LogArg = Annotated[str | None, typer.Argument(
    metavar="LOG", show_default=False,
    help="The training log: a file, a .gz file, or - for stdin (the default when stdin is a"
         " pipe or a file).")]
ForceOpt = Annotated[bool, typer.Option(help="Overwrite an existing output file.")]
RulesOpt = Annotated[list[Path] | None, typer.Option(
    "--rules", help="A rule pack: a directory of YAML rules (its templates/ folder holds "
                    "repro templates for the pack's own causes) or one .yaml (repeatable).")]



def say(message: str) -> None:
    """One `minrepro: ...` line on stderr; a name or log text in it cannot forge another."""
    typer.echo(f"minrepro: {shown(message)}", err=True)


def log_source(log: str | None) -> str:
    """LOG as given; `-` when it is left out and stdin is not a terminal."""
    stdin_is_tty = sys.stdin is not None and sys.stdin.isatty()
    if log is None:
        if sys.stdin is None or stdin_is_tty:
            raise MinreproError("no LOG given: name a log file, or pipe one in (`- < run.log`)")
        return "-"
    if log == "-" and stdin_is_tty:
        say("reading the log from stdin (Ctrl-D ends it)")
    return log


def diagnose_with_progress(log: str, rules: list[Path] | None = None, *,
                           progress: bool = False) -> Diagnosis:
    from minrepro.diagnose.pipeline import diagnose_log
    from minrepro.diagnose.reader import LogReader
    from minrepro.output.progress import progress_for

    reader = LogReader(log)
    with progress_for(reader, enabled=progress):
        return diagnose_log(log, rule_dirs=[str(r) for r in rules or ()], reader=reader)



def echo_warnings(diagnosis: Diagnosis) -> None:
    for warning in diagnosis.warnings:
        say(f"warning: {warning}")


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
