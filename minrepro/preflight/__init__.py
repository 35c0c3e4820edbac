"""Before and between runs: `preflight` checks a training config (and a data sample, a model
config, this machine) for the preventable causes of the taxonomy; `snapshot` stores a run's
config and environment as content-hashed JSON; `diff` compares two runs (logs, snapshots or
configs) and ranks their differences by how likely each explains the second run's failure.

Hands on plain dataclasses (`RunConfig`, `CheckResult`, `MemoryEstimate`, `Snapshot`,
`Difference`); the CLI formats them. May import torch (to read the GPU); `diagnose` never
imports this package.
"""
