"""Run a command as the root of its whole process tree; nothing it starts outlives it.

    python supervise.py COMMAND ARGS...

Standalone on purpose (standard library only, run by path): `verify` starts it, and it starts
the repro script. On Linux it becomes a child subreaper, so that a grandchild which detached
(`setsid`, a double fork) is re-parented to it rather than to init; when the script ends, or
on SIGTERM, it kills every process left below it, so no worker keeps the output pipes open.
Its exit status is the script's (128 + N when a signal N killed it).
"""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys
from pathlib import Path

_PR_SET_CHILD_SUBREAPER = 36


def become_subreaper() -> None:
    if sys.platform.startswith("linux"):
        try:
            ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
        except (OSError, AttributeError):  # no libc symbol: the process group still helps
            pass


def descendants(root: int) -> list[int]:
    """Every process below `root`, read from /proc (empty where there is no /proc)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").glob("[0-9]*"):
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2:].split()  # after "pid (comm) "
        if len(fields) > 1:
            children.setdefault(int(fields[1]), []).append(int(entry.name))
    found, todo = [], [root]
    while todo:
        for pid in children.get(todo.pop(), ()):
            found.append(pid)
            todo.append(pid)
    return found


def kill_tree() -> None:
    """SIGKILL everything below this process, then reap what became our children."""
    for _ in range(3):  # a process may fork while we kill its parent
        pids = descendants(os.getpid())
        if not pids:
            break
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        _reap()


def _reap() -> None:
    while True:
        try:
            pid, _ = os.waitpid(-1, 0)
        except ChildProcessError:
            return
        if pid == 0:
            return


def main(argv: list[str]) -> int:
    if not argv:
        print("usage: supervise.py COMMAND ARGS...", file=sys.stderr)
        return 2
    become_subreaper()
    child = subprocess.Popen(argv)

    def stop(signum: int, _frame: object) -> None:
        kill_tree()
        os._exit(128 + signum)

    signal.signal(signal.SIGTERM, stop)
    code = child.wait()
    kill_tree()
    return 128 - code if code < 0 else code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
