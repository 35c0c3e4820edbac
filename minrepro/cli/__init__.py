"""The `minrepro` command line. Commands parse arguments, call the library, format the result.

One module a family of commands (logs: diagnose, repro, verify, report; info: env, rules;
prevent: preflight, snapshot, diff; fleet: triage), all on the one app of `app.py`. Library
errors (MinreproError) and usage errors are caught once, in `main`, and become one line on
stderr.
"""

from __future__ import annotations

import copy
import os
import sys

import typer
import typer.main

from minrepro.cli import fleet, info, logs, prevent  # noqa: F401 - they register the commands
from minrepro.cli.app import ExitCode, app, say
from minrepro.errors import MinreproError

try:  # typer >= 0.2x carries its own copy of click
    from typer._click import exceptions as click_errors
except ImportError:  # pragma: no cover - older typer, on click itself
    from click import exceptions as click_errors  # type: ignore[no-redef]

__all__ = ["ExitCode", "app", "main"]


def _name_of(command: typer.models.CommandInfo) -> str:
    return command.name or str(getattr(command.callback, "__name__", ""))


def app_for(args: list[str]) -> typer.Typer:
    """The app holding only the command that `args` name, when they name one: typer builds
    every registered command's click parameters on each run (~12 ms for all eleven, a tenth of
    `diagnose`'s start-up). The whole app for help, options before a command, or a name it
    does not know (so its "No such command" and listing stay typer's)."""
    name = args[0] if args else ""
    chosen = [c for c in app.registered_commands
              if typer.main.get_command_name(_name_of(c)) == name]
    if not chosen or name.startswith("-"):
        return app
    slim = copy.copy(app)
    slim.registered_commands = chosen
    return slim


def _run_app() -> int:
    """The app without click's standalone handling (so usage errors come to `main`)."""
    try:
        result = app_for(sys.argv[1:])(standalone_mode=False)
    except click_errors.NoArgsIsHelpError as help_:  # bare `minrepro`: the help, exit 2
        typer.echo(help_.ctx.get_help() if help_.ctx else "")
        return int(ExitCode.USAGE)
    return result if isinstance(result, int) else 0


def _command_name(err: click_errors.UsageError) -> str:
    name = err.ctx.info_name if err.ctx is not None and err.ctx.parent is not None else None
    return f"{name} " if name else ""


def main() -> None:
    """Console entry point: one line on stderr for any error, never a traceback."""
    code: int = 0
    try:
        code = _run_app()
    except click_errors.UsageError as err:  # typer's 5-7-line box, as one line
        say(f"error: {err.format_message()} (see `minrepro {_command_name(err)}--help`)")
        code = ExitCode.USAGE
    except typer.Abort:  # click turns Ctrl-C into Abort
        say("interrupted")
        code = 130
    except MinreproError as err:
        say(f"error: {err}")
        code = ExitCode.USAGE
    except KeyboardInterrupt:
        say("interrupted")
        code = 130
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except Exception as err:  # noqa: BLE001 - the contract is one line, never a traceback
        if os.environ.get("MINREPRO_DEBUG"):
            raise
        say(f"internal error: {type(err).__name__}: {err}"
            " (MINREPRO_DEBUG=1 shows the traceback)")
        code = ExitCode.USAGE
    sys.exit(int(code))
