"""The commands before and between runs: preflight, snapshot, diff."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from minrepro.cli.app import ExitCode, app
from minrepro.errors import MinreproError


@app.command()
def preflight(config: Annotated[Path, typer.Argument(
                  help="A training config: HF TrainingArguments JSON/YAML, Lightning or flat "
                       "YAML, or a minrepro snapshot.", metavar="CONFIG")],
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
def diff(run_a: Annotated[str, typer.Argument(
             metavar="RUN_A", help="The good run: a log, snapshot or config.")],
         run_b: Annotated[str, typer.Argument(
             metavar="RUN_B", help="The failing run: a log, snapshot or config.")],
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
