"""Diagnose: a training log in, a `Diagnosis` out. Never imports torch.

Read the modules in the order the data flows through them:

    reader    stream the log as `Line` records (decode, strip ANSI, split '\\r', rank prefixes)
    scan      pick the lines worth a look in multi-GB logs (trigger words at C speed)
    extract/  lines -> events: tracebacks, CUDA asserts, OOM reports, metrics, env facts ...
    rules/    YAML rule packs (data) and the registry of every check's id, title and fix
    matcher   rules applied to lines -> findings
    analyze/  events -> findings that need state: loss curves, OOM arithmetic, loss scale
    decide    findings -> one Diagnosis (first failure beats its cascade)
    pipeline  the stages wired together: `diagnose_log(path)`

Hands on: `minrepro.model.Diagnosis`, to `repro` (the script), `report` and the CLI.
"""
