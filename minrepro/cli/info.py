"""The commands about this machine and the rules: env, rules."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from minrepro.cli.app import RulesOpt, app
from minrepro.errors import MinreproError
from minrepro.sanitize import shown, shown_tree


@app.command()
def env(json_: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False) -> None:
    """Report this machine's environment (OS, Python, torch, CUDA, GPUs, env vars, packages)."""
    from minrepro.report.envreport import collect_env, env_to_json, format_env_text

    report_ = collect_env()
    if json_:
        typer.echo(json.dumps(shown_tree(env_to_json(report_)), indent=2))
    else:  # a variable's value may hold any byte (undecodable: a surrogate): shown safely
        from minrepro.output.terminal import emit

        emit(shown(format_env_text(report_), multiline=True))


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
        emit(shown(list_rules(loaded), multiline=True))
        return
    matches = loaded.lookup(rule_id)
    if not matches:
        raise MinreproError(f"no rule {rule_id!r}; `minrepro rules` lists them")
    emit(shown("\n".join(describe_rule(r) for r in matches), multiline=True))

