"""Diagnose: a training log in, a `Diagnosis` out. Never imports torch.

Read the modules in the order the data flows through them:

    reader    stream the log as `Line` records (decode, strip ANSI, split '\\r', rank prefixes)
    textbytes the bytes as UTF-8 text (gzip aside): NULs, UTF-16, binary refused, buffer fills
    scan      pick the lines worth a look in multi-GB logs (trigger words at C speed; engines,
              and hscache keeping hyperscan's compiled databases between runs)
    extract/  lines -> events: tracebacks, CUDA asserts, OOM reports, metrics, env facts ...
    rules/    YAML rule packs (data) and the registry of every check's id, title and fix
    matcher   rules applied to lines -> findings
    analyze/  events -> findings that need state: loss curves, OOM arithmetic, loss scale
    decide    findings -> one Diagnosis (first failure beats its cascade)
    roots     the root class of a failure outside the causes (roots_data: the data tier;
              roots_config: the config tier, roots_launch its launch-command rules;
              roots_place: the last tier, where it was raised)
    pipeline  the stages wired together: `diagnose_log(path)`

Hands on: `minrepro.model.Diagnosis`, to `repro` (the script), `report` and the CLI.
"""
