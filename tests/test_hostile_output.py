"""Outputs: `repro LOG -o FILE` writes FILE atomically and nothing else, never clobbers without
--force, never touches the input log, and refuses bad targets with one line.

Every run gets its own HOME and TMPDIR so that "writes nowhere but FILE" can be checked by
listing every folder the command could write to, before and after.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest
from test_hostile_input import ROOT, assert_no_traceback, assert_one_line_error, run_cli  # noqa: E402 - the shared runner

SAMPLE = ROOT / "samples" / "position_overflow__cpu_traceback.log"


class Sandbox:
    """A log, a cwd, HOME and TMPDIR under tmp_path; snapshots of all of them."""

    def __init__(self, tmp_path: Path) -> None:
        self.root = tmp_path
        for name in ("logs", "cwd", "out", "home", "tmp"):
            (tmp_path / name).mkdir()
        self.log = tmp_path / "logs" / "run.log"
        self.log.write_bytes(SAMPLE.read_bytes())
        os.utime(self.log, (1_600_000_000, 1_600_000_000))
        self.env = {**os.environ, "HOME": str(tmp_path / "home"), "TMPDIR": str(tmp_path / "tmp")}

    def repro(self, *args: str):
        return run_cli("repro", str(self.log), *args, cwd=self.root / "cwd", env=self.env)

    def snapshot(self) -> dict[str, tuple[str, int]]:
        """relative path -> (sha256 or 'dir', mtime_ns) for everything under the sandbox."""
        found = {}
        for path in sorted(self.root.rglob("*")):
            if path.is_symlink():
                found[str(path.relative_to(self.root))] = (f"link:{os.readlink(path)}", 0)
            elif path.is_dir():
                found[str(path.relative_to(self.root))] = ("dir", 0)
            else:
                digest = hashlib.sha256(path.read_bytes()).hexdigest()
                found[str(path.relative_to(self.root))] = (digest, path.stat().st_mtime_ns)
        return found

    def log_state(self) -> tuple[str, int, int]:
        stat = self.log.stat()
        return hashlib.sha256(self.log.read_bytes()).hexdigest(), stat.st_mtime_ns, stat.st_size


@pytest.fixture
def box(tmp_path: Path) -> Sandbox:
    return Sandbox(tmp_path)


def _changed(before: dict, after: dict) -> set[str]:
    return {k for k in before.keys() | after.keys() if before.get(k) != after.get(k)}


def test_writes_only_the_output_file_atomically(box: Sandbox) -> None:
    target = box.root / "out" / "repro.py"
    before, log_before = box.snapshot(), box.log_state()
    result = box.repro("-o", str(target))
    assert_no_traceback(result)
    assert result.code == 0, result.err
    assert _changed(before, box.snapshot()) == {"out/repro.py"}, "wrote somewhere else"
    assert box.log_state() == log_before, "the input log changed"
    assert sorted(p.name for p in target.parent.iterdir()) == ["repro.py"], "stray temp files"
    text = target.read_text(encoding="utf-8")
    assert text.startswith("#!/usr/bin/env python3\n") and "position_overflow" in text
    assert result.out == "", "the script goes to the file, not also to stdout"


def test_relative_output_lands_in_the_cwd(box: Sandbox) -> None:
    before = box.snapshot()
    result = box.repro("-o", "r.py")
    assert result.code == 0, result.err
    assert _changed(before, box.snapshot()) == {"cwd/r.py"}


def test_same_log_same_bytes(box: Sandbox) -> None:
    first, second = box.root / "out" / "a.py", box.root / "out" / "b.py"
    assert box.repro("-o", str(first)).code == 0
    assert box.repro("-o", str(second)).code == 0
    assert first.read_bytes() == second.read_bytes()


def test_refuses_to_overwrite_without_force(box: Sandbox) -> None:
    target = box.root / "out" / "repro.py"
    target.write_text("# my own notes\n", encoding="utf-8")
    os.utime(target, (1_600_000_000, 1_600_000_000))
    before = box.snapshot()
    result = box.repro("-o", str(target))
    assert_one_line_error(result, "repro.py", "--force")
    assert box.snapshot() == before, "something changed although the write was refused"
    assert sorted(p.name for p in target.parent.iterdir()) == ["repro.py"]


def test_force_overwrites_in_place_and_leaves_no_temp(box: Sandbox) -> None:
    target = box.root / "out" / "repro.py"
    target.write_text("# old\n", encoding="utf-8")
    result = box.repro("-o", str(target), "--force")
    assert result.code == 0, result.err
    assert "position_overflow" in target.read_text(encoding="utf-8")
    assert sorted(p.name for p in target.parent.iterdir()) == ["repro.py"]


def test_force_never_overwrites_the_input_log(box: Sandbox) -> None:
    """`-o` naming the log itself (directly or through a link) must not destroy the evidence."""
    state = box.log_state()
    link = box.root / "out" / "link.log"
    link.symlink_to(box.log)
    hard = box.root / "out" / "hard.log"
    os.link(box.log, hard)
    for target in (box.log, link, hard):
        result = box.repro("-o", str(target), "--force")
        assert_no_traceback(result)
        assert result.code == 2, f"-o {target.name} --force: exit {result.code}"
        assert box.log_state() == state, f"-o {target.name} --force rewrote the input log"


def test_symlink_target_is_not_followed(box: Sandbox) -> None:
    """A link at FILE (perhaps planted) must not redirect the write to where it points."""
    elsewhere = box.root / "home" / ".bashrc"
    elsewhere.write_text("# precious\n", encoding="utf-8")
    target = box.root / "out" / "repro.py"
    target.symlink_to(elsewhere)
    result = box.repro("-o", str(target))
    assert_one_line_error(result, "repro.py")
    assert elsewhere.read_text(encoding="utf-8") == "# precious\n"
    dangling = box.root / "out" / "dangling.py"
    dangling.symlink_to(box.root / "home" / "created_through_link.py")
    result = box.repro("-o", str(dangling))
    assert result.code == 2, "wrote through a dangling symlink"
    assert not (box.root / "home" / "created_through_link.py").exists()


@pytest.mark.parametrize("make, needle", [
    (lambda root: root / "out" / "missing" / "r.py", "missing"),
    (lambda root: root / "out", "directory"),
    (lambda root: Path(str(root / "out") + "/"), "directory"),
    (lambda root: root / "logs" / "run.log" / "r.py", "r.py"),
], ids=["missing-dir", "is-a-dir", "dir-with-slash", "parent-is-a-file"])
def test_bad_output_targets_are_one_line(box: Sandbox, make, needle: str) -> None:
    target = make(box.root)
    before, log_before = box.snapshot(), box.log_state()
    result = box.repro("-o", str(target))
    assert_one_line_error(result, needle)
    assert box.snapshot() == before and box.log_state() == log_before


def test_output_name_with_newline_is_one_line(box: Sandbox) -> None:
    target = box.root / "out" / "missing" / "a\nminrepro: wrote b.py"
    result = box.repro("-o", str(target))
    assert_one_line_error(result)


def test_diagnose_never_writes(box: Sandbox) -> None:
    before = box.snapshot()
    for args in (("diagnose", str(box.log)), ("diagnose", "--json", str(box.log))):
        result = run_cli(*args, cwd=box.root / "cwd", env=box.env)
        assert result.code == 0, result.err
    assert box.snapshot() == before


def test_repro_to_stdout_writes_no_file(box: Sandbox) -> None:
    before = box.snapshot()
    result = box.repro()
    assert result.code == 0 and result.out.startswith("#!/usr/bin/env python3\n")
    assert box.snapshot() == before


def test_gzip_log_is_not_modified(box: Sandbox) -> None:
    import gzip

    gz = box.root / "logs" / "run.log.gz"
    gz.write_bytes(gzip.compress(SAMPLE.read_bytes(), mtime=0))
    digest = hashlib.sha256(gz.read_bytes()).hexdigest()
    mtime = gz.stat().st_mtime_ns
    result = run_cli("repro", str(gz), "-o", str(box.root / "out" / "r.py"),
                     cwd=box.root / "cwd", env=box.env)
    assert result.code == 0, result.err
    assert hashlib.sha256(gz.read_bytes()).hexdigest() == digest
    assert gz.stat().st_mtime_ns == mtime
