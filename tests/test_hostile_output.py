"""Outputs: `repro LOG -o FILE` writes FILE atomically and nothing else, never clobbers without
--force, never touches the input log, and refuses bad targets with one line.

Every run gets its own HOME and TMPDIR so that "writes nowhere but FILE" can be checked by
listing every folder the command could write to, before and after.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import secrets
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from test_hostile_input import ROOT, assert_no_traceback, assert_one_line_error, run_cli  # noqa: E402 - the shared runner

from minrepro.sanitize import log_text, shown

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
        # PYTHONPATH: the cwd is not the checkout, and the code under test is the checkout's.
        self.env = {**os.environ, "HOME": str(tmp_path / "home"), "TMPDIR": str(tmp_path / "tmp"),
                    "PYTHONPATH": str(ROOT)}

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


# --- what reaches the terminal: one sanitiser, to a fixed point (issue 14, item 1) -----------

_DANGEROUS = set("\x1b\x08\x7f") | {chr(c) for c in range(0x80, 0xA0)} | set(
    "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
_NESTED_PAYLOADS = [
    "\x1b\x1b[0m]52;c;ZXZpbA==\x07",  # OSC 52 clipboard write once the inner CSI is gone
    "\x1b\x1b[0m]0;pwned title\x07",  # OSC 0: window title
    "\x1b\x1b[1m]8;;https://evil.example\x1b\\\\click\x1b\x1b[0m]8;;\x1b\\\\",  # OSC 8 link
    "\x1bc", "\x1b(0lqqk", "ok\x08\x08\x08bad", "\xc2\x9b31mred", "\x9d0;t\x9c",
    "\u202eevil\u202c", "\u2066iso\u2069", "\x1b\x1b\x1b[m[m]2;x\x07",
]


def _dangerous_left(text: str) -> set[str]:
    return {c for c in text if c in _DANGEROUS or (ord(c) < 32 and c not in "\t\n")}


_ESCAPE_ALPHABET = st.sampled_from(["\x1b", "[", "]", "(", "0", "1", ";", "m", "c", "\x07", "\\",
                                    "P", "_", "\x08", "\x9b", "\x9d", "\x9c", "\u202e", "\u2066",
                                    "\x00", "\x7f", "a", " ", "\n", "52", "8;;"])


@settings(max_examples=300, deadline=None)
@given(st.lists(_ESCAPE_ALPHABET, max_size=40).map("".join))
def test_sanitiser_leaves_no_control_and_is_a_fixed_point(text: str) -> None:
    """Whatever mix of escape fragments: nothing that drives a terminal is left, and sanitising
    again changes nothing (a sequence assembled by one removal is removed too)."""
    for clean in (log_text, shown, lambda t: shown(t, multiline=True)):
        once = clean(text)
        assert not _dangerous_left(once), (text, once)
        assert clean(once) == once
    assert "\n" not in shown(text)  # one line: a name cannot forge a `minrepro: error:` line


@pytest.mark.parametrize("payload", _NESTED_PAYLOADS)
def test_nested_escapes_never_reach_text_json_or_stderr(tmp_path: Path, payload: str) -> None:
    """Log text through `diagnose`, `diagnose --json` and `repro` (its stderr message)."""
    log = tmp_path / "esc.log"
    log.write_text("Traceback (most recent call last):\n  File \"t.py\", line 3, in <module>\n"
                   f"RuntimeError: boom {payload} end\n", encoding="utf-8")
    for args in (("diagnose", str(log)), ("diagnose", "--json", str(log)),
                 ("repro", str(log)), ("report", str(log))):
        result = run_cli(*args)
        assert_no_traceback(result)
        for stream in (result.out, result.err, json.dumps(json.loads(result.out))
                       if "--json" in args else ""):
            assert not _dangerous_left(stream), (args, stream[-500:])


def test_file_name_with_escapes_in_a_warning_is_one_clean_line(tmp_path: Path) -> None:
    name = "bad\nminrepro: error: forged\x1b]52;c;eA==\x07\u202e.log.gz"
    log = tmp_path / name
    log.write_bytes(gzip.compress(SAMPLE.read_bytes())[:-20])  # truncated: a warning names it
    result = run_cli("diagnose", str(log))
    assert_no_traceback(result)
    lines = result.err.splitlines()
    assert lines and all(line.startswith("minrepro: ") for line in lines), lines
    assert not any(line.startswith("minrepro: error: forged") for line in lines), lines
    assert not _dangerous_left(result.err + result.out)


# --- what gets written (issue 14, item 6) ---------------------------------------------------


def test_stdin_redirected_from_the_target_is_never_overwritten(box: Sandbox) -> None:
    """`repro - -o run.log --force < run.log` destroyed the input: the guard knew only LOG."""
    state = box.log_state()
    for args in (("repro", "-", "-o", str(box.log), "--force"),
                 ("report", "-", "-o", str(box.log), "--force")):
        with box.log.open("rb") as stdin:
            proc = subprocess.run([sys.executable, "-m", "minrepro", *args], stdin=stdin,
                                  capture_output=True, cwd=ROOT, env=box.env, timeout=60)
        assert proc.returncode == 2, proc.stderr
        assert b"input log" in proc.stderr
        assert box.log_state() == state, f"{args[0]} rewrote the log it read from stdin"


@pytest.mark.parametrize("umask, script_mode, report_mode", [
    (0o077, 0o700, 0o600), (0o022, 0o755, 0o644), (0o027, 0o750, 0o640)])
def test_outputs_honour_the_umask(box: Sandbox, umask: int, script_mode: int,
                                  report_mode: int) -> None:
    for command, name, expected in (("repro", "r.py", script_mode),
                                    ("report", "r.md", report_mode)):
        target = box.root / "out" / name
        proc = subprocess.run(
            [sys.executable, "-c", f"import os, sys; os.umask({umask}); sys.argv[0] = 'minrepro';"
             " from minrepro.cli import main; main()", command, str(box.log), "-o", str(target)],
            capture_output=True, cwd=ROOT, env=box.env, timeout=60)
        assert proc.returncode == 0, proc.stderr
        assert stat.S_IMODE(target.stat().st_mode) == expected, (command, oct(umask))
        target.unlink()


def test_dash_output_means_stdout(box: Sandbox) -> None:
    result = box.repro("-o", "-")
    assert result.code == 0, result.err
    assert result.out.startswith("#!/usr/bin/env python3")
    assert not (box.root / "cwd" / "-").exists()


_NAME_CHARS = st.characters(blacklist_characters="/\x00", blacklist_categories=("Cs",))


@settings(max_examples=80, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.text(_NAME_CHARS, min_size=1, max_size=255))
@example("r" * 240 + ".py")
@example("é" * 127)
@example("a\nminrepro: error: forged\x1b[2J")
def test_any_valid_name_is_written_with_no_temp_left(tmp_path: Path, name: str) -> None:
    """Up to 255 bytes: a 243-byte name used to fail because the temp name was longer."""
    from minrepro.errors import OutputError
    from minrepro.files import write_atomic

    if len(name.encode()) > 255 or name in (".", ".."):
        return
    folder = tmp_path / secrets.token_hex(4)
    folder.mkdir()
    write_atomic("x\n", folder / name)
    assert [p.name for p in folder.iterdir()] == [name]
    with pytest.raises(OutputError) as refused:  # exists: the one-line error shows it safely
        write_atomic("y\n", folder / name)
    assert "\n" not in str(refused.value) and not _dangerous_left(str(refused.value))


def test_a_243_byte_name_is_written(box: Sandbox) -> None:
    target = box.root / "out" / ("r" * 240 + ".py")
    result = box.repro("-o", str(target))
    assert result.code == 0, result.err
    assert target.is_file() and len(list(target.parent.iterdir())) == 1
