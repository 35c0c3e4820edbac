"""Progress on stderr: only on a terminal, only for big inputs."""

from __future__ import annotations

import io
import time
from pathlib import Path

from minrepro.diagnose.reader import LogReader
from minrepro.output import progress


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_shown_on_a_terminal_for_big_inputs(tmp_path: Path, monkeypatch) -> None:
    log = tmp_path / "big.log"
    log.write_text("x\n" * 1000)
    fake = _Tty()
    monkeypatch.setattr(progress.sys, "stderr", fake)
    monkeypatch.setattr(progress, "MIN_BYTES", 10)
    monkeypatch.setattr(progress, "INTERVAL_S", 0.01)
    reader = LogReader(log)
    with progress.progress_for(reader):
        list(reader)
        time.sleep(0.1)
    assert "MiB" in fake.getvalue() and "MiB/s" in fake.getvalue()


def test_no_progress_when_piped_or_disabled(tmp_path: Path, monkeypatch) -> None:
    log = tmp_path / "big.log"
    log.write_text("x\n" * 1000)
    piped = io.StringIO()
    monkeypatch.setattr(progress.sys, "stderr", piped)
    monkeypatch.setattr(progress, "MIN_BYTES", 10)
    reader = LogReader(log)
    with progress.progress_for(reader):
        list(reader)
    with progress.progress_for(reader, enabled=False):
        pass
    assert piped.getvalue() == ""
