"""A process that died without a Python exception: killed by a signal, by the OOM killer, by
the scheduler -> ProcessKilled (a failure candidate; the rules say which cause it is).

Real texts:
  torchrun:  torch.distributed.elastic.multiprocessing.api: [ERROR] failed (exitcode: -9)
             local_rank: 1 (pid: 14447) of binary: /usr/bin/python3
             torch.distributed.elastic.multiprocessing.api:[WARNING] Sending process 3
             closing signal SIGTERM       (the launcher stopping the others: a cascade)
             Signal 9 (SIGKILL) received by PID 1234
  shell:     Killed          /  bash: line 1: 123 Killed  python train.py
             12%|###  | 208/1767 [02:38<15:00,  1.73it/s, loss=3.71]Killed   (after a bar)
             Segmentation fault (core dumped)   /  Aborted (core dumped)
  SLURM:     slurmstepd: error: Detected 1 oom-kill event(s) in StepId=123.batch.
             slurmstepd: error: *** JOB 123 ON node1 CANCELLED AT 2024-01-01T00:00:00 DUE TO
             TIME LIMIT ***
             slurmstepd: error: *** JOB 124 ON node1 CANCELLED AT 2024-01-02T00:00:00 ***
             (the user's scancel: how "cancelled", the end of a job, no failure)
  LSF, PBS:  TERM_RUNLIMIT: job killed after reaching LSF run time limit.
             TERM_MEMLIMIT: job killed after reaching LSF memory usage limit.
             =>> PBS: job killed: walltime 86412 exceeded limit 86400
  kernel:    Out of memory: Killed process 4242 (python)
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from minrepro.diagnose.extract.units import parse_int
from minrepro.diagnose.literals import any_of
from minrepro.model import Line, ProcessKilled
from minrepro.patterns import lazy

#: The words of LSF's and PBS's job reports for a job they stopped (the report is written
#: above the job's output, not where the job stopped).
BATCH_REPORT = r"TERM_RUNLIMIT|TERM_MEMLIMIT|PBS: job killed"
#: SLURM's line for a job that ended (the user's scancel, or `DUE TO TIME LIMIT` after it):
#: the job's id, which tells apart several jobs appended to one output file
JOB_END = r"\*\*\* JOB (\d+) ON \S+ CANCELLED AT"
_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
    # torchrun: `failed (exitcode: -9) local_rank: 0 (pid: ...)`, and since torch 2.2 `failed
    # (exitcode: -9) for binary located at /.../python with local_rank: 0 (process ID: ...)`
    (lazy(r"failed \(exitcode: (-?\d+)\)(?: |[^\n]{0,400}? with )local_rank: (\d+)"), "exitcode"),
    # DeepSpeed's launcher: `[launch.py:434:sigkill_handler] [...] exits with return code = -9`
    (lazy(r"exits with return code = (-\d+)()"), "exitcode"),
    (lazy(r"Signal (\d+) \((SIG\w+)\) received by PID"), "signal"),
    (lazy(r"(?i)oom[-_]kill event|Out of memory: Killed process|OOM Killed"), "oom"),
    (lazy(r"DUE TO TIME LIMIT|DUE TO PREEMPTION|DUE TO NODE FAILURE"), "scheduler"),
    # LSF's and PBS's own words for a job stopped at its run time or memory limit
    (lazy(r"TERM_RUNLIMIT: job killed|PBS: job killed: walltime \d+ exceeded"), "scheduler"),
    (lazy(r"TERM_MEMLIMIT: job killed|PBS: job killed: mem \d+\w* exceeded"), "oom"),
    # the user's scancel: the job's end, not a failure (several jobs may append to one file)
    (lazy(JOB_END + r" \S+ \*\*\*"), "cancelled"),
    (lazy(r"^(?:.*\d+ )?Killed(?:\s+\S.*)?$"), "killed"),
    # ... printed by the shell right where a progress bar's last update stopped (no newline
    # after the bar): `3/15 [1:27:15<5:56:40, 1783.41s/it, loss=3.71, lr=0.01]Killed`
    (lazy(r"(?<=\])Killed\s*$"), "killed"),
    (lazy(r"(?i)Segmentation fault|SIGSEGV|Bus error \(core dumped\)"), "segfault"),
    (lazy(r"^Aborted \(core dumped\)|^Aborted$"), "aborted"),
)
_CLOSING = lazy(r"Sending process \d+ closing signal SIG(?:TERM|INT)")
_SEEN_MAX = 256


class KillExtractor:
    """Processes killed by a signal, the OOM killer or the scheduler -> ProcessKilled."""

    TRIGGERS = ("exitcode", "Signal ", "oom", "OOM", "Out of memory", "DUE TO", "Killed",
                "Segmentation fault", "segmentation fault", "SIGSEGV", "Bus error", "Aborted",
                "exits with return code = -", "TERM_RUNLIMIT", "TERM_MEMLIMIT", "PBS: job killed",
                "CANCELLED AT")
    SELECT = ("killed", "exitcode", "segmentation fault", "oom-kill", "oom_kill", "due to time",
              "cancelled at",
              "term_runlimit", "term_memlimit")

    def __init__(self) -> None:
        self._seen: set[tuple[str, int | None]] = set()

    def feed(self, line: Line) -> Sequence[ProcessKilled]:
        text = line.text
        if not _may_kill(text) or _CLOSING.search(text):
            return ()
        for pattern, how in _PATTERNS:
            match = pattern.search(text)
            if match is None:
                continue
            rank = parse_int(match[2]) if how == "exitcode" and match[2] else line.rank
            key = (f"{how}:{match[1] if how in ('exitcode', 'signal', 'cancelled') else ''}",
                   rank)
            if key in self._seen:
                return ()
            if len(self._seen) < _SEEN_MAX:
                self._seen.add(key)
            return (ProcessKilled(line=line.line, how=how, detail=match.group(0)[:120],
                                  rank=rank),)
        return ()

    def close(self) -> Sequence[ProcessKilled]:
        return ()


_may_kill = any_of(KillExtractor.TRIGGERS)
