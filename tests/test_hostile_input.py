"""Hostile logs: unreadable, corrupt, binary, huge, noisy. Clear errors, bounded time and memory.

Every CLI run here goes through `run_cli`, which runs `python -m minrepro` under a wall-clock
limit, an address-space safety net, and reads the child's own peak RSS (VmHWM, written at exit: one
run's peak does not leak into the next, nor the parent's pages at fork into the child's).
All inputs are generated under tmp_path; nothing large is committed.

Bounds (measured on a loaded 2-core box, then given roughly 10x margin, except where a bound
states what the design asks for):
* 200 MiB of one repeated message + an OOM at the end: ~1.2 s, ~75 MB RSS -> 12 s, 300 MB.
* a 50 MiB line with no newline: ~1.5 s, ~62 MB RSS -> 10 s, 300 MB.
* 2,000,000 tqdm '\\r' updates then an OOM: the design's bound is 15 s / 300 MB.
* a gzip bomb (1.6 MB -> 256 MiB): the design's bound is 15 s / 300 MB.
"""

from __future__ import annotations

import gzip
import io
import json
import os
import re
import resource
import stat
import struct
import subprocess
import sys
import tempfile
import threading
import time
import zipfile
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minrepro.diagnose.pipeline import diagnose_log
from minrepro.output.contract import diagnosis_to_json

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "samples"
OOM_SAMPLE = SAMPLES / "cuda_oom__hf_trainer_new_format.log"
OOM_LINE = next(line for line in OOM_SAMPLE.read_bytes().splitlines()
                if line.startswith(b"torch.OutOfMemoryError"))
MAX_RSS_MB = 300
_SAFETY_NET_BYTES = 4 << 30  # address-space cap: a runaway child fails instead of the CI box


# --- running the CLI ------------------------------------------------------------------------


@dataclass(frozen=True)
class CliResult:
    code: int | None  # None when killed at the time limit
    out: str
    err: str
    seconds: float
    rss_mb: float  # the child's own peak resident set

    @property
    def timed_out(self) -> bool:
        return self.code is None


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (_SAFETY_NET_BYTES, _SAFETY_NET_BYTES))


#: Runs minrepro as `python -m minrepro` does, and at exit writes its own peak RSS (VmHWM)
#: to the file $MINREPRO_TEST_HWM. A child's ru_maxrss also counts its parent's pages at
#: fork (a pytest worker that imported transformers is 400 MB), so it cannot tell.
_HWM_RUNNER = """
import atexit, os, runpy, sys
def _peak():
    with open("/proc/self/status") as status, open(os.environ["MINREPRO_TEST_HWM"], "w") as out:
        out.write(next(line.split()[1] for line in status if line.startswith("VmHWM:")))
atexit.register(_peak)
sys.argv[0] = "minrepro"
runpy.run_module("minrepro", run_name="__main__", alter_sys=True)
"""


def run_cli(*args: str, stdin: bytes | None = None, timeout: float = 30,
            cwd: Path | None = None, env: dict[str, str] | None = None,
            python: tuple[str, ...] = ("-m", "minrepro")) -> CliResult:
    """Run `python -m minrepro ARGS`; kill it at `timeout` seconds (code None)."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err, \
            tempfile.TemporaryFile() as feed, tempfile.TemporaryDirectory() as box:
        feed.write(stdin or b"")
        feed.seek(0)
        hwm = Path(box) / "hwm"
        child_env = dict(os.environ if env is None else env, MINREPRO_TEST_HWM=str(hwm))
        argv = ("-c", _HWM_RUNNER) if python == ("-m", "minrepro") else python
        start = time.monotonic()
        proc = subprocess.Popen([sys.executable, *argv, *args], stdin=feed, stdout=out,
                                stderr=err, cwd=cwd or ROOT, env=child_env,
                                preexec_fn=_limit_memory)
        code, usage = _wait(proc, start + timeout)
        seconds = time.monotonic() - start
        out.seek(0)
        err.seek(0)
        peak_kib = int(hwm.read_text()) if hwm.exists() and hwm.read_text() else usage.ru_maxrss
        return CliResult(code, out.read().decode("utf-8", "replace"),
                         err.read().decode("utf-8", "replace"), seconds,
                         peak_kib / 1024)  # Linux: KiB


def _wait(proc: subprocess.Popen, deadline: float) -> tuple[int | None, resource.struct_rusage]:
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            proc.returncode = os.waitstatus_to_exitcode(status)
            return proc.returncode, usage
        if time.monotonic() > deadline:
            proc.kill()
            _, status, usage = os.wait4(proc.pid, 0)
            proc.returncode = os.waitstatus_to_exitcode(status)
            return None, usage
        time.sleep(0.01)


def assert_no_traceback(result: CliResult) -> None:
    assert "Traceback" not in result.err, result.err[-2000:]
    assert "Traceback (most recent call last)" not in result.out[:200], result.out[:2000]


def assert_one_line_error(result: CliResult, *needles: str) -> None:
    """Exit 2, exactly one line on stderr that starts with 'minrepro:' and names `needles`."""
    assert not result.timed_out, f"hung: killed after {result.seconds:.1f}s"
    assert_no_traceback(result)
    assert result.code == 2, (result.code, result.err[-2000:])
    lines = result.err.strip("\n").split("\n")
    assert len(lines) == 1, f"expected one stderr line, got {len(lines)}: {result.err[:2000]!r}"
    assert lines[0].startswith("minrepro:"), lines[0]
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])


def diagnosis_json(result: CliResult) -> dict:
    assert not result.timed_out, f"hung: killed after {result.seconds:.1f}s"
    assert_no_traceback(result)
    return json.loads(result.out)


# --- clear errors ---------------------------------------------------------------------------


def _png(d: Path) -> Path:
    path = d / "loss_curve.png"
    path.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + os.urandom(4000))
    return path


def _zip(d: Path) -> Path:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("run.log", OOM_SAMPLE.read_bytes() + os.urandom(4000))
    path = d / "logs.zip"
    path.write_bytes(buffer.getvalue())
    return path


def _random(d: Path) -> Path:
    path = d / "random.log"
    path.write_bytes(os.urandom(64 * 1024))
    return path


def _checkpoint(d: Path) -> Path:
    """A torch checkpoint is a zip; a pickle-only one starts with the pickle protocol byte."""
    path = d / "model.pt"
    path.write_bytes(b"\x80\x02\x8a\x0al\xfc\x9cF\xf9 j\xa8P\x19." + os.urandom(8000))
    return path


def _gzip_of_binary(d: Path) -> Path:
    path = d / "weights.bin.gz"
    path.write_bytes(gzip.compress(os.urandom(64 * 1024)))
    return path


def _corrupt_gzip(d: Path) -> Path:
    data = bytearray(gzip.compress(OOM_SAMPLE.read_bytes()))
    for index in range(12, len(data) - 8, 5):  # the deflate stream, not the header
        data[index] ^= 0x5A
    path = d / "corrupt.log.gz"
    path.write_bytes(bytes(data))
    return path


def _gzip_header_only(d: Path) -> Path:
    path = d / "cut_header.log.gz"
    path.write_bytes(gzip.compress(OOM_SAMPLE.read_bytes())[:5])
    return path


def _gzip_cut_before_data(d: Path) -> Path:
    path = d / "cut_early.log.gz"
    path.write_bytes(gzip.compress(OOM_SAMPLE.read_bytes())[:12])
    return path


@pytest.mark.parametrize("make, needle", [
    (lambda d: d / "missing.log", "no such file"),
    (lambda d: d / "no" / "such" / "dir" / "run.log", "no such file"),
    (lambda d: d, "directory"),
    (_random, "not a text log"),
    (_png, "not a text log"),
    (_zip, "not a text log"),
    (_checkpoint, "not a text log"),
    (_gzip_of_binary, "not a text log"),
    (_corrupt_gzip, "gzip"),
    (_gzip_header_only, "gzip"),
    (_gzip_cut_before_data, "gzip"),
], ids=["missing", "missing-dir", "directory", "random-bytes", "png", "zip", "checkpoint",
        "gzip-of-binary", "corrupt-gzip", "gzip-cut-in-header", "gzip-cut-before-data"])
def test_bad_input_is_one_line_exit_2(tmp_path: Path, make: Callable[[Path], Path],
                                      needle: str) -> None:
    path = make(tmp_path)
    json_flag = ("--json",) if len(path.name) % 2 else ()  # both output modes, half each
    result = run_cli("diagnose", *json_flag, str(path), timeout=20)
    assert_one_line_error(result, needle)
    assert path.name in result.err or str(path) in result.err, "the error says where"
    assert result.out == "", "nothing on stdout for bad input"


def test_repro_of_bad_input_is_one_line_exit_2(tmp_path: Path) -> None:
    out = tmp_path / "r.py"
    assert_one_line_error(run_cli("repro", str(_png(tmp_path)), "-o", str(out)), "not a text log")
    assert not out.exists()


def test_binary_stdin_is_one_line_exit_2() -> None:
    assert_one_line_error(run_cli("diagnose", "-", stdin=os.urandom(32 * 1024)), "not a text log")


class _PermissionDenied:
    """Make opening one path fail with EACCES, as `chmod 000` does for a non-root user.

    Root reads a mode-000 file anyway (CAP_DAC_OVERRIDE), and the tests run as root here and in
    CI, so there the child interpreter is started with open() patched for that one path.
    """

    PATCH = (
        "import builtins, io, os, sys\n"
        "target = os.path.realpath(sys.argv.pop(1))\n"
        "def denied(path):\n"
        "    try:\n"
        "        return os.path.realpath(os.fspath(path)) == target\n"
        "    except (TypeError, ValueError):\n"
        "        return False\n"
        "def guard(real):\n"
        "    def opener(file, *args, **kwargs):\n"
        "        if not isinstance(file, int) and denied(file):\n"
        "            raise PermissionError(13, 'Permission denied', os.fspath(file))\n"
        "        return real(file, *args, **kwargs)\n"
        "    return opener\n"
        "builtins.open = io.open = guard(io.open)\n"
        "os.open = guard(os.open)\n"
        "sys.argv[0] = 'minrepro'\n"
        "from minrepro.cli import main\n"
        "main()\n"
    )

    @classmethod
    def run(cls, path: Path, *args: str) -> CliResult:
        if os.geteuid() != 0:
            path.chmod(0)
            try:
                return run_cli(*args)
            finally:
                path.chmod(stat.S_IRUSR | stat.S_IWUSR)
        return run_cli(str(path), *args, python=("-c", cls.PATCH))


def test_unreadable_file_is_one_line_exit_2(tmp_path: Path) -> None:
    log = tmp_path / "secret.log"
    log.write_bytes(OOM_SAMPLE.read_bytes())
    result = _PermissionDenied.run(log, "diagnose", str(log))
    assert_one_line_error(result, "secret.log", "permission denied")


def test_fifo_without_writer_does_not_hang(tmp_path: Path) -> None:
    """A named pipe nobody writes to: an error or an empty read, never a hang."""
    fifo = tmp_path / "pipe.log"
    os.mkfifo(fifo)
    result = run_cli("diagnose", str(fifo), timeout=5)
    assert not result.timed_out, "diagnose blocked forever on a FIFO with no writer"
    assert_no_traceback(result)
    if result.code == 2:
        assert_one_line_error(result, "pipe.log")
    else:
        assert result.code == 1 and "no known" in (result.out + result.err)


def test_fifo_with_a_writer_is_read_to_eof_or_refused(tmp_path: Path) -> None:
    """`minrepro diagnose <(zcat run.log.gz)` hands over a pipe: read it to EOF, or refuse it."""
    fifo = tmp_path / "pipe.log"
    os.mkfifo(fifo)

    def writer() -> None:
        fd = os.open(fifo, os.O_WRONLY)  # blocks until the reader opens, if it ever does
        try:
            os.write(fd, OOM_SAMPLE.read_bytes())
        except BrokenPipeError:
            pass
        finally:
            os.close(fd)

    thread = threading.Thread(target=writer, daemon=True)
    thread.start()
    result = run_cli("diagnose", "--json", str(fifo), timeout=15)
    if thread.is_alive():  # the CLI never opened the pipe: unblock the writer
        os.close(os.open(fifo, os.O_RDONLY | os.O_NONBLOCK))
    assert not result.timed_out
    if result.code == 2:
        assert_one_line_error(result, "pipe.log")
    else:
        assert diagnosis_json(result)["cause"] == "cuda_oom"


def test_file_name_with_newline_and_escapes_stays_one_line(tmp_path: Path) -> None:
    """File names of a platform's jobs are untrusted too: the error is still one clean line."""
    name = "job\nminrepro: error: forged line\x1b[2J.log"
    result = run_cli("diagnose", str(tmp_path / name))
    assert_one_line_error(result, "no such file")
    assert "\x1b" not in result.err, "raw terminal escapes from a file name reach the terminal"


@pytest.mark.parametrize("content", [
    b"",
    b"   \n\t\n\n  \r\n \x0c\n",
    b"\x1b[31m\x1b[0m\n\x1b[2K\x1b[1A\r\x1b[?25l\n\x1b]0;title\x07\n" * 40,
    b"\xef\xbb\xbf",
    b"\xff\xfe",  # a UTF-16 BOM and nothing else
    b"\n" * 100_000,
    b"\r" * 100_000,
], ids=["empty", "whitespace", "only-ansi", "utf8-bom-only", "utf16-bom-only", "newlines",
        "carriage-returns"])
def test_readable_log_without_failure_is_no_known_cause(tmp_path: Path, content: bytes) -> None:
    log = tmp_path / "quiet.log"
    log.write_bytes(content)
    if len(content) % 2:  # both output modes, half the cases each
        result = run_cli("diagnose", "--json", str(log), timeout=20)
        assert result.code == 1 and diagnosis_json(result)["cause"] is None
    else:
        result = run_cli("diagnose", str(log), timeout=20)
        assert_no_traceback(result)
        assert result.code == 1 and "no known" in result.out


def _oom_then_filler_gzip(filler_lines: int) -> bytes:
    """A CUDA OOM traceback, then hard-to-compress filler, gzipped."""
    filler = b"".join(b"step %d ok checksum %s\n" % (i, os.urandom(12).hex().encode())
                      for i in range(filler_lines))
    return gzip.compress(OOM_SAMPLE.read_bytes() + filler)


def test_truncated_gzip_with_readable_traceback_is_diagnosed(tmp_path: Path) -> None:
    data = _oom_then_filler_gzip(20_000)
    log = tmp_path / "crashed.log.gz"
    log.write_bytes(data[: len(data) // 2])  # cut in the filler
    result = run_cli("diagnose", "--json", str(log))
    diagnosis = diagnosis_json(result)
    assert result.code == 0 and diagnosis["cause"] == "cuda_oom"
    assert [e["line"] for e in diagnosis["evidence"]] == [24]
    assert any("truncated" in w for w in diagnosis["warnings"])
    assert "truncated" in result.err and "crashed.log.gz" in result.err


def test_truncated_gzip_warning_goes_to_stderr_in_text_mode(tmp_path: Path) -> None:
    """The text report goes to stdout; a warning about the input belongs on stderr."""
    data = _oom_then_filler_gzip(20_000)
    log = tmp_path / "crashed.log.gz"
    log.write_bytes(data[: len(data) // 2])
    result = run_cli("diagnose", str(log))
    assert result.code == 0 and "cuda_oom" in result.out
    assert "truncated" in result.err, f"no warning on stderr: {result.err!r}"


def test_truncated_gzip_without_failure_is_no_known_cause_with_warning(tmp_path: Path) -> None:
    filler = b"".join(b"step %d ok %s\n" % (i, os.urandom(12).hex().encode())
                      for i in range(20_000))
    data = gzip.compress(filler)
    log = tmp_path / "quiet.log.gz"
    log.write_bytes(data[: len(data) // 2])
    result = run_cli("diagnose", "--json", str(log))
    assert result.code == 1 and diagnosis_json(result)["warnings"]
    assert "truncated" in result.err


# --- size and time bounds -------------------------------------------------------------------


@pytest.fixture(scope="module")
def big_inputs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """The large generated logs, written once per session and removed at the end."""
    folder = tmp_path_factory.mktemp("big")
    oom_log = OOM_SAMPLE.read_bytes()
    message = b"2024-06-11 09:14:02,118 - INFO - trainer - step done, throughput nominal\n"
    block = message * ((1 << 20) // len(message))
    repeated = folder / "repeated.log"
    with repeated.open("wb") as handle:
        for _ in range(200):
            handle.write(block)
        handle.write(oom_log)
    long_line = folder / "long_line.log"
    long_line.write_bytes(b"x" * (50 << 20))
    long_then_oom = folder / "long_then_oom.log"
    with long_then_oom.open("wb") as handle:
        handle.write(b"y" * (50 << 20) + b"\n" + oom_log)
    updates = b"".join(b"\r%3d%%|%-10s| %d/2000000 [00:01<00:10, 9e5it/s]"
                       % (i // 10, b"#" * (i // 100), i * 2000) for i in range(1000))
    progress = folder / "progress.log"
    with progress.open("wb") as handle:
        handle.write(b"training start\n")
        for _ in range(2000):
            handle.write(updates)
        handle.write(b"\n" + OOM_LINE + b"\n")
    yield {"repeated": repeated, "long_line": long_line, "long_then_oom": long_then_oom,
           "progress": progress, "repeated_lines": 200 * block.count(b"\n")}
    for path in folder.iterdir():
        path.unlink()


def _assert_bounded(result: CliResult, seconds: float) -> None:
    assert not result.timed_out, f"still running after {seconds}s (the bound)"
    assert result.seconds < seconds, f"took {result.seconds:.1f}s (bound {seconds}s)"
    assert result.rss_mb < MAX_RSS_MB, f"peak RSS {result.rss_mb:.0f} MB (bound {MAX_RSS_MB})"


@pytest.mark.slow
def test_200_mib_of_one_repeated_message_then_oom(big_inputs: dict) -> None:
    result = run_cli("diagnose", "--json", str(big_inputs["repeated"]), timeout=12)
    _assert_bounded(result, 12)
    data = diagnosis_json(result)
    assert result.code == 0 and data["cause"] == "cuda_oom"
    assert [e["line"] for e in data["evidence"]] == [big_inputs["repeated_lines"] + 24]


@pytest.mark.slow
def test_50_mib_line_without_newline(big_inputs: dict) -> None:
    result = run_cli("diagnose", "--json", str(big_inputs["long_line"]), timeout=10)
    _assert_bounded(result, 10)
    assert result.code == 1 and diagnosis_json(result)["cause"] is None


@pytest.mark.slow
def test_50_mib_line_then_oom_keeps_line_numbers(big_inputs: dict) -> None:
    result = run_cli("diagnose", "--json", str(big_inputs["long_then_oom"]), timeout=10)
    _assert_bounded(result, 10)
    data = diagnosis_json(result)
    assert result.code == 0 and data["cause"] == "cuda_oom"
    assert [e["line"] for e in data["evidence"]] == [25]


@pytest.mark.slow
def test_two_million_carriage_return_updates_then_oom(big_inputs: dict) -> None:
    result = run_cli("diagnose", "--json", str(big_inputs["progress"]), timeout=15)
    _assert_bounded(result, 15)
    data = diagnosis_json(result)
    assert result.code == 0 and data["cause"] == "cuda_oom"
    assert [e["line"] for e in data["evidence"]] == [3]


def _gzip_bomb(expanded_mib: int, tail: bytes) -> bytes:
    """A single gzip member that inflates ~1000x: one flushed block repeated, then `tail`."""
    block = b"step ok\n" * (1 << 17)  # 1 MiB
    deflate = zlib.compressobj(9, zlib.DEFLATED, -15)
    first = deflate.compress(block) + deflate.flush(zlib.Z_FULL_FLUSH)
    again = deflate.compress(block) + deflate.flush(zlib.Z_FULL_FLUSH)
    assert first == again  # a full flush forgets the history: every block compresses alike
    end = deflate.compress(tail) + deflate.flush()
    crc = 0
    for _ in range(expanded_mib):
        crc = zlib.crc32(block, crc)
    crc = zlib.crc32(tail, crc)
    size = (expanded_mib * len(block) + len(tail)) & 0xFFFFFFFF
    header = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"
    return header + first * expanded_mib + end + struct.pack("<II", crc, size)


@pytest.mark.slow
def test_gzip_bomb_is_read_in_bounded_memory(tmp_path: Path) -> None:
    log = tmp_path / "bomb.log.gz"
    log.write_bytes(_gzip_bomb(256, OOM_SAMPLE.read_bytes()))
    assert log.stat().st_size < 1 << 20
    result = run_cli("diagnose", "--json", str(log), timeout=15)
    _assert_bounded(result, 15)
    data = diagnosis_json(result)
    assert result.code == 0 and data["cause"] == "cuda_oom"
    assert [e["line"] for e in data["evidence"]] == [256 * (1 << 17) + 24]


# --- encoding noise -------------------------------------------------------------------------

NOISY_SAMPLES = [
    "position_overflow__cpu_traceback",
    "cuda_oom__hf_trainer_new_format",
    "single_class_labels__hf_trainer_dicts",
    "fp16_overflow__apex_scale_below_one",
    "cuda_oom__torchrun_rank3_watchdog_cascade",
    "softmax_overflow__fp16_attention_anomaly",
]
# Lines holding any of these words may carry evidence; bad bytes go only into the others.
_SIGNAL = re.compile(rb"[{}]|\b(?:loss|error|traceback|file|scale|overflow|nan|inf|memory|epoch"
                     rb"|step|rank|nccl|cuda|warning|labels?|class|tokens?|sequence|index)\b",
                     re.IGNORECASE)


def _key(path: Path) -> dict:
    """What must not change under encoding noise: cause, category, params, evidence lines."""
    data = diagnosis_to_json(diagnose_log(str(path)))
    return {"cause": data["cause"], "category": data["category"], "params": data["params"],
            "evidence": [(e["line"], e["rank"]) for e in data["evidence"]]}


def _bad_utf8(data: bytes) -> bytes:
    out, touched = [], 0
    for line in data.split(b"\n"):
        if line and not line[:1].isspace() and not _SIGNAL.search(line):
            space = line.find(b" ")
            line = (line[:space] + b" \xff\xfe\xc3" + line[space:] if space > 0 else line)
            line += b" \x80\xbf\xed\xa0\x80"  # a lone continuation byte, an encoded surrogate
            touched += 1
        out.append(line)
    assert touched, "the sample has no noise line to spoil"
    return b"\n".join(out)


def _nul_bytes(data: bytes) -> bytes:
    out = bytearray()
    for index, byte in enumerate(data):
        out.append(byte)
        following = data[index + 1] if index + 1 < len(data) else 0
        if index % 61 == 0 and byte < 0x80 and following < 0x80:  # never inside a UTF-8 char
            out.append(0)
    return bytes(out)


def _tabs(data: bytes) -> bytes:
    return b"\n".join(re.sub(rb"^(?:  )+", lambda m: b"\t" * (len(m.group(0)) // 2), line)
                      for line in data.split(b"\n"))


def _windows_paths(data: bytes) -> bytes:
    return re.sub(rb'File "(/[^"]+)"',
                  lambda m: b'File "C:' + m.group(1).replace(b"/", b"\\") + b'"', data)


def _ansi(data: bytes) -> bytes:
    return b"\n".join(b"\x1b[1;31m\x1b]8;;http://x\x1b\\" + line + b"\x1b[0m\x1b[K"
                      for line in data.split(b"\n"))


def _everything(data: bytes) -> bytes:
    return _nul_bytes(_ansi(_tabs(_windows_paths(_bad_utf8(data)))).replace(b"\n", b"\r\n"))


VARIANTS: dict[str, Callable[[bytes], bytes]] = {
    "bad-utf8": _bad_utf8,
    "utf16-bom": lambda d: d.decode("utf-8").encode("utf-16"),
    "utf16le-no-bom": lambda d: d.decode("utf-8").encode("utf-16-le"),
    "utf16be-bom": lambda d: b"\xfe\xff" + d.decode("utf-8").encode("utf-16-be"),
    "utf8-bom": lambda d: b"\xef\xbb\xbf" + d,
    "nul-bytes": _nul_bytes,
    "crlf": lambda d: d.replace(b"\n", b"\r\n"),
    "ansi-every-line": _ansi,
    "tab-indent": _tabs,
    "windows-paths": _windows_paths,
    "all-at-once": _everything,
    "all-at-once-utf16le": lambda d: _everything(d).decode("utf-8", "replace").encode("utf-16-le"),
    "gzip-utf16": lambda d: gzip.compress(d.decode("utf-8").encode("utf-16")),
}


@pytest.fixture(scope="module")
def clean_keys() -> dict[str, dict]:
    return {name: _key(SAMPLES / f"{name}.log") for name in NOISY_SAMPLES}


@pytest.mark.parametrize("variant", list(VARIANTS))
@pytest.mark.parametrize("sample", NOISY_SAMPLES)
def test_encoding_noise_leaves_the_diagnosis_unchanged(tmp_path: Path, clean_keys: dict,
                                                       sample: str, variant: str) -> None:
    clean = clean_keys[sample]
    assert clean["cause"] is not None
    data = (SAMPLES / f"{sample}.log").read_bytes()
    noisy = VARIANTS[variant](data)
    path = tmp_path / f"{sample}.{variant}.log"
    path.write_bytes(noisy)
    assert _key(path) == clean


def test_encoding_noise_through_the_cli(tmp_path: Path, clean_keys: dict) -> None:
    """One pass of the noisiest variant through the real command (stdin and file)."""
    sample = "position_overflow__cpu_traceback"
    noisy = VARIANTS["all-at-once-utf16le"]((SAMPLES / f"{sample}.log").read_bytes())
    path = tmp_path / "noisy.log"
    path.write_bytes(noisy)
    for result in (run_cli("diagnose", "--json", str(path)),
                   run_cli("diagnose", "--json", "-", stdin=noisy)):
        data = diagnosis_json(result)
        assert result.code == 0
        assert (data["cause"], data["params"]) == (clean_keys[sample]["cause"],
                                                   clean_keys[sample]["params"])
        assert [(e["line"], e["rank"]) for e in data["evidence"]] == \
            clean_keys[sample]["evidence"]


def test_large_utf16_log_keeps_line_numbers(tmp_path: Path, clean_keys: dict) -> None:
    """Past the small-file size, UTF-16 and CRLF still count lines as the clean log does."""
    sample = "cuda_oom__hf_trainer_new_format"
    filler = b"2024-06-11 09:14:02,118 - INFO - step ok nothing here\n" * 40_000
    data = filler + (SAMPLES / f"{sample}.log").read_bytes()
    expected = dict(clean_keys[sample],
                    evidence=[(line + 40_000, rank) for line, rank in
                              clean_keys[sample]["evidence"]])
    for name, noisy in [("u16", data.decode().encode("utf-16")),
                        ("u16le-crlf", data.replace(b"\n", b"\r\n").decode().encode("utf-16-le"))]:
        path = tmp_path / f"{name}.log"
        path.write_bytes(noisy)
        assert _key(path) == expected, name


@pytest.mark.parametrize("encoding", ["gbk", "shift_jis", "latin-1"])
def test_a_log_in_another_encoding_is_read_not_refused(tmp_path: Path, encoding: str) -> None:
    """A Windows machine set to Chinese writes its log in GBK: text, whatever UTF-8 says."""
    words = {"gbk": "训练开始，批次大小", "shift_jis": "学習を開始します",
             "latin-1": "entraînement"}
    lines = [f"2024-05-01 10:00:{i % 60:02d} {words[encoding]} epoch {i} loss {2 - i / 500:.3f}"
             for i in range(400)]
    text = "\n".join(lines) + "\n" + OOM_SAMPLE.read_text(encoding="utf-8")
    path = tmp_path / "run.log"
    path.write_bytes(text.encode(encoding, errors="replace"))
    assert diagnose_log(path).cause == "cuda_oom"


# --- never "internal error" (issue 14, item 8) ----------------------------------------------

_HOSTILE_NUMBERS = st.one_of(
    st.sampled_from(["inf", "-inf", "nan", "NaN", "1e999", "-1e999", "9" * 400, "9" * 5000,
                     "1" + "0" * 4400 + ".5", "0.0", "-0"]),
    st.integers().map(str), st.floats().map(str))
_NUMBER_TEMPLATES = [
    "Step\tTraining Loss\tValidation Loss\n1\t2.3\t2.4\n{n}\t2.2\t2.3\n",
    "| Step | Training Loss | Validation Loss |\n|---|---|---|\n| {n} | 2.2 | 2.3 |\n",
    "Traceback (most recent call last):\n  File \"t.py\", line {n}, in f\nRuntimeError: x\n",
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate {n} GiB. GPU 0 has a total"
    " capacity of {n} GiB of which {n} GiB is free.\n",
    "Watchdog caught collective operation timeout: WorkNCCL(SeqNum={n}, OpType=ALLREDUCE,"
    " NumelIn=1, NumelOut=1, Timeout(ms)={n}) ran for {n} milliseconds before timing out.\n",
    "torch.distributed.elastic.multiprocessing.api:failed (exitcode: 1) local_rank: {n}"
    " (pid: 7) of binary\n",
    "{{'loss': {n}, 'grad_norm': {n}, 'learning_rate': {n}, 'epoch': {n}}}\n",
]


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(_NUMBER_TEMPLATES), _HOSTILE_NUMBERS)
def test_hostile_numbers_never_crash_the_pipeline(template: str, number: str) -> None:
    """A 400-digit size, inf/nan in an HF table's Step column, 5,000-digit line numbers."""
    from minrepro.diagnose.pipeline import diagnose_lines
    from minrepro.model import Line
    from minrepro.output.text import diagnosis_to_text
    from minrepro.report.bugreport import build_report

    text = template.format(n=number)
    lines = [Line(i, t) for i, t in enumerate(text.splitlines() * 2, 1)]
    diagnosis = diagnose_lines(lines)
    diagnosis_to_text(diagnosis)
    json.dumps(diagnosis_to_json(diagnosis))
    build_report(diagnosis)


def test_hf_table_with_inf_and_nan_steps_through_the_cli(tmp_path: Path) -> None:
    log = tmp_path / "hf.log"
    log.write_text("Step\tTraining Loss\tValidation Loss\n1\t2.3\t2.4\ninf\t2.2\t2.3\n"
                   "nan\t2.1\t2.2\n", encoding="utf-8")
    for args in (("diagnose",), ("diagnose", "--json"), ("report",)):
        result = run_cli(*args, str(log))
        assert result.code in (0, 1), result.err
        assert "internal error" not in result.err


def test_closed_stdin_is_one_line(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-c", "import os, runpy, sys; os.close(0);"
                           " sys.argv = ['minrepro', 'diagnose', '-'];"
                           " sys.stdin = None; runpy.run_module('minrepro', run_name='__main__')"],
                          capture_output=True, text=True, cwd=ROOT, timeout=60)
    result = CliResult(proc.returncode, proc.stdout, proc.stderr, 0.0, 0.0)
    assert_one_line_error(result, "stdin")
    assert "internal error" not in result.err


def test_non_utf8_file_name_with_a_utf8_terminal(tmp_path: Path) -> None:
    name = os.fsencode(tmp_path) + b"/run-\xff\xfe.log"
    with open(name, "wb") as handle:
        handle.write(OOM_SAMPLE.read_bytes())
    env = {**os.environ, "PYTHONIOENCODING": "utf-8"}
    for args in ((os.fsdecode(name),), (os.fsdecode(name) + ".missing",)):
        result = run_cli("diagnose", *args, env=env)
        assert "internal error" not in result.err and "Traceback" not in result.err, result.err
        assert result.code in (0, 2)


def test_env_with_a_non_utf8_nccl_variable() -> None:
    env = {**os.environ, "NCCL_DEBUG_FILE": "/tmp/nccl-\udcff\udcfe.log",
           "PYTHONIOENCODING": "utf-8"}
    env_bytes = {os.fsencode(k): os.fsencode(v) for k, v in env.items()}
    for args in (("env",), ("env", "--json")):
        proc = subprocess.run([sys.executable, "-m", "minrepro", *args], capture_output=True,
                              cwd=ROOT, env=env_bytes, timeout=120)
        assert proc.returncode == 0, proc.stderr[-2000:]
        assert b"internal error" not in proc.stderr
        if "--json" in args:
            json.loads(proc.stdout)


@pytest.mark.parametrize("args", [
    ("diagnose", "--bogus"), ("bogus",), ("verify", "x.py", "--timeout", "abc"),
    ("repro", "a.log", "b.log"), ("triage-nope", "a"), ("diagnose", "a.log", "b.log"),
])
def test_usage_errors_are_one_line(args: tuple[str, ...]) -> None:
    result = run_cli(*args)
    assert_one_line_error(result)
    assert "╭" not in result.err and "Usage:" not in result.err


# --- inputs (issue 14, item 9) --------------------------------------------------------------


def test_log_starting_with_a_block_of_nuls_is_read(tmp_path: Path) -> None:
    """logrotate `copytruncate`: the writer keeps its offset, the file starts with NULs."""
    log = tmp_path / "rotated.log"
    log.write_bytes(b"\x00" * (1 << 20) + OOM_SAMPLE.read_bytes())
    plain = diagnosis_json(run_cli("diagnose", "--json", str(OOM_SAMPLE)))
    data = diagnosis_json(run_cli("diagnose", "--json", str(log)))
    assert data["cause"] == "cuda_oom"
    assert [e["line"] for e in data["evidence"]] == [e["line"] for e in plain["evidence"]]
    stdin = run_cli("diagnose", "--json", "-", stdin=log.read_bytes())
    assert diagnosis_json(stdin)["cause"] == "cuda_oom"


def test_holes_of_nuls_inside_a_log_are_no_binary_data(tmp_path: Path) -> None:
    """nohup.out truncated under a writer that kept its offset: runs of NULs between updates."""
    lines = [f"\rEpoch num {i}| train loss {1.0 / (i + 1):.4f} \n:  {i}/200 [05:53<1:36:20]"
             .encode() + b"\x00" * (40 + 20 * i) for i in range(30)]
    log = tmp_path / "nohup.out"
    log.write_bytes(b"".join(lines) + b"\n" + OOM_SAMPLE.read_bytes())
    assert diagnosis_json(run_cli("diagnose", "--json", str(log)))["cause"] == "cuda_oom"
    # random bytes stay binary
    junk = tmp_path / "junk.log"
    junk.write_bytes(bytes(range(256)) * 64)
    assert run_cli("diagnose", str(junk)).code == 2


def test_a_growing_log_is_read_up_to_its_size_at_open(tmp_path: Path) -> None:
    from minrepro.diagnose.reader import LogReader

    log = tmp_path / "live.log"
    log.write_bytes(b"step 1 loss 2.3\n" * 2000)
    records = iter(LogReader(log, chunk_bytes=4096))
    next(records)
    with log.open("ab") as handle:  # a fast writer appends while the reader is at work
        handle.write(b"APPENDED after open\n" * 5000)
    assert not [r for r in records if "APPENDED" in r.text]


def test_one_ctrl_d_ends_stdin_from_a_terminal() -> None:
    import pty

    leader, follower = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "minrepro", "diagnose", "-"], stdin=follower,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT)
    os.close(follower)
    try:
        os.write(leader, OOM_LINE + b"\n")
        time.sleep(1.0)  # the line is read before the EOF arrives, as when a person types
        os.write(leader, b"\x04")  # one Ctrl-D at the start of a line
        try:
            out, _ = proc.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            pytest.fail("one Ctrl-D did not end the input")
    finally:
        os.close(leader)
    assert proc.returncode == 0 and b"cuda_oom" in out
