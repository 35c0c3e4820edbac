"""Triage: a fleet of failed jobs' logs -> groups, a root-cause distribution, one repro a group.

    inputs       files, folders (recursively), globs, .gz; per-rank logs of one job
    fingerprint  the versioned grouping signature of a failure (kind, user frame, masked message)
    record       the per-log work: diagnose in-process, keep the grouping view (LogRecord)
    engine       where that work runs: local processes, or an existing Dask cluster
    store        SQLite in --out: content hash -> result; re-runs read only new logs
    run          one run: inputs -> store -> engine -> jobs cut to their first failure
    groups       groups and distributions read from the store; a script for each group
    render       JSON, CSV, Markdown (+ SVG chart), streamed; terminal: rich tables, progress

Hands on: a `Summary` over the store, and text in the chosen format.
"""
