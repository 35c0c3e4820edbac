"""`minrepro report`: the Markdown bug report, its redaction, its fences, its CLI.

Golden files: tests/golden/report__<sample>.md, rewritten with `pytest --update-golden`.
They use a fixed EnvReport, a fixed user/host for redaction and no --verify, so they hold
nothing volatile.
"""

from __future__ import annotations

import ast
import math
import re
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import regex
from typer.testing import CliRunner

import minrepro.report.envreport
import minrepro.repro.render
from minrepro.cli import app, main
from minrepro.diagnose.pipeline import diagnose_log
from minrepro.errors import OutputError, RenderError
from minrepro.model import Diagnosis, Evidence, Line
from minrepro.output.redact import Redactor, local_redactor, mask_home_paths, redact
from minrepro.report.bugreport import (
    ExcerptLine,
    build_report,
    build_report_for_log,
    code_span,
    excerpt_for,
    fence,
    read_excerpt,
    sparkline,
    write_text,
)
from minrepro.report.envreport import EnvField, EnvReport, EnvSection

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "samples"
GOLDEN = Path(__file__).parent / "golden"
LOGS = sorted(SAMPLES.glob("*.log"))
GOLDEN_SAMPLES = (
    "position_overflow__cuda_device_assert",  # core cause, env from the log, CUDA traceback
    "loss_stagnation__ln10_plateau",  # sparkline of a flat curve, no traceback
    "single_class_labels__roc_auc_valueerror",  # core cause; /home/... paths masked
    "none__unrelated_config_keyerror",  # no known cause: summary, traceback, no repro
)
FIXED_ENV = EnvReport((
    EnvSection("system", "System", (EnvField("os", "OS", "Linux-test-x86_64"),
                                    EnvField("python", "Python version", "3.11.0"))),
    EnvSection("torch", "PyTorch", (EnvField("version", "PyTorch version", "2.13.0+cpu"),
                                    EnvField("cuda_available", "CUDA available", "False"))),
))
FIXED_USER, FIXED_HOST = "alice", "dgx-07.lab.example.com"
_PYTHON_BLOCK = re.compile(r"^(?P<fence>`{3,})python\n(?P<body>.*?)^(?P=fence)$", re.M | re.S)


@pytest.fixture(autouse=True)
def _fixed_local_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """The CLI probes this machine; tests use a fixed report (fast, nothing volatile)."""
    monkeypatch.setattr(minrepro.report.envreport, "collect_env", lambda **_: FIXED_ENV)


def report_of(log: Path, **options) -> str:
    options = {"local_env": FIXED_ENV, "user": FIXED_USER, "hostname": FIXED_HOST} | options
    return build_report_for_log(log, diagnose_log(log), **options)


def python_blocks(markdown: str) -> list[str]:
    return [m["body"] for m in _PYTHON_BLOCK.finditer(markdown)]


def outside_python(markdown: str) -> str:
    return _PYTHON_BLOCK.sub("", markdown)


# --- every sample --------------------------------------------------------------------------


@pytest.mark.parametrize("log", LOGS, ids=lambda p: p.stem)
def test_report_of_every_sample_embeds_the_repro_exactly(log: Path) -> None:
    diagnosis = diagnose_log(log)
    text = report_of(log)
    blocks = python_blocks(text)
    assert text.startswith("# minrepro: ")
    if not diagnosis.diagnosed:
        what = f"{diagnosis.root.value} failure (no known cause)" if diagnosis.root \
            else "no known cause"
        assert text.startswith(f"# minrepro: {what} in {log.name}\n")
        assert blocks == []
        return
    assert text.startswith(f"# minrepro: {diagnosis.category}/{diagnosis.cause} in {log.name}\n")
    if not minrepro.repro.render.has_template(diagnosis.cause):
        assert f"no repro template for {diagnosis.cause} yet" in text
        assert blocks == []
        return
    repro = CliRunner().invoke(app, ["repro", str(log)])
    assert repro.exit_code == 0, repro.output
    assert len(blocks) == 1
    ast.parse(blocks[0])
    assert blocks[0] == repro.stdout


def test_a_cause_without_template_still_renders(monkeypatch: pytest.MonkeyPatch) -> None:
    log = SAMPLES / "position_overflow__cpu_traceback.log"
    monkeypatch.setattr(minrepro.repro.render, "has_template", lambda cause, packs=(): False)
    text = report_of(log)
    assert "no repro template for position_overflow yet" in text
    assert python_blocks(text) == []
    assert "## Evidence" in text and "<summary>Traceback</summary>" in text


def test_a_render_error_is_reported_not_raised(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(diagnosis: Diagnosis, packs: tuple = ()) -> str:
        raise RenderError("templates/position_overflow.yaml: option 'max' should be int")

    monkeypatch.setattr(minrepro.repro.render, "render_repro", broken)
    text = report_of(SAMPLES / "position_overflow__cpu_traceback.log")
    assert "the repro script could not be rendered" in text
    assert python_blocks(text) == []


# --- golden --------------------------------------------------------------------------------


@pytest.mark.parametrize("name", GOLDEN_SAMPLES)
def test_golden_report(name: str, update_golden: bool) -> None:
    actual = report_of(SAMPLES / f"{name}.log")
    golden = GOLDEN / f"report__{name}.md"
    if update_golden:
        golden.write_text(actual, encoding="utf-8")
    assert golden.exists(), f"missing {golden.name}: run pytest --update-golden"
    assert actual == golden.read_text(encoding="utf-8")


def test_golden_reports_hold_nothing_volatile() -> None:
    for name in GOLDEN_SAMPLES:
        text = (GOLDEN / f"report__{name}.md").read_text(encoding="utf-8")
        assert str(ROOT) not in text and "/tmp/" not in text
        assert "Verify result" not in text
        assert not re.search(r"/home/(?!<user>/)", text)


# --- the pieces of the document ------------------------------------------------------------


def test_report_sections_of_a_diagnosed_log() -> None:
    text = report_of(SAMPLES / "position_overflow__cuda_device_assert.log")
    for heading in ("## Diagnosis", "## Evidence", "## Loss curve", "## Repro",
                    "## Environment", "### From the log"):
        assert f"\n{heading}\n" in text
    assert "- **Confidence:** 0.95" in text
    assert "`MR-CONV-001`" in text
    assert "Machine that ran minrepro (not necessarily the failing machine)" in text
    assert "- GPU: `NVIDIA A10G`" in text and "- PyTorch: `2.2.1+cu121`" in text
    assert "python repro.py --fixed" in text and "exit 125" in text
    assert "<details><summary>Traceback</summary>" in text
    assert "RuntimeError: CUDA error: device-side assert triggered" in text


def test_evidence_has_two_lines_of_context_and_marks() -> None:
    text = report_of(SAMPLES / "position_overflow__cuda_device_assert.log")
    # (numbers as wide as the last evidence line's: line 116, the assert's last copy)
    assert ">   3 | [2024-03-02 22:41:12]" in text
    assert "    1 | [2024-03-02 22:41:07]" in text  # context before line 3
    assert "   20 | ../aten/src/ATen" in text  # context after line 18
    assert "   21 | " not in text  # nothing beyond two lines of context
    assert "> 116 | RuntimeError: CUDA error: device-side assert triggered" in text
    assert "    ...\n" in text  # a gap between two windows


def test_no_cause_report_has_summary_candidates_traceback_and_no_repro() -> None:
    text = report_of(SAMPLES / "none__batch_size_finder_oom_ok.log")
    assert "### Weak candidates" in text
    assert regex.search(r"- `cuda_oom` \(memory\), confidence 0\.\d\d", text)
    assert "## Repro" not in text and "## Evidence" not in text
    keyerror = report_of(SAMPLES / "none__unrelated_config_keyerror.log")
    assert "KeyError: 'warmup_epochs'" in keyerror
    assert "<summary>Traceback</summary>" in keyerror


def test_stdin_log_shows_evidence_lines_only() -> None:
    log = SAMPLES / "position_overflow__cuda_device_assert.log"
    result = CliRunner().invoke(app, ["report", "-"], input=log.read_bytes())
    assert result.exit_code == 0, result.output
    assert "# minrepro: convergence/position_overflow in \\<stdin\\>" in result.stdout
    assert ">   3 | " in result.stdout
    assert "    1 | " not in result.stdout  # no context: stdin cannot be read twice
    assert "could not be read a second time" in result.stdout


def test_excerpt_pass_stops_after_the_last_wanted_line() -> None:
    def records() -> Iterator[Line]:
        for number in range(1, 11):
            yield Line(number, f"line {number}")
        raise AssertionError("read past the excerpt: the pass must be bounded")

    excerpt = read_excerpt(records(), [Evidence(5, "line 5")], context=2)
    assert [(e.line, e.evidence) for e in excerpt] == [
        (3, False), (4, False), (5, True), (6, False), (7, False)]


def test_excerpt_shows_last_carriage_return_update_and_blank_lines() -> None:
    lines = [Line(1, "epoch 1"), Line(2, "10%"), Line(2, "100%"), Line(4, "Error: boom", 2)]
    excerpt = read_excerpt(iter(lines), [Evidence(4, "Error: boom", 2)], context=2)
    assert [(e.line, e.text, e.rank) for e in excerpt] == [
        (2, "100%", None), (3, "", None), (4, "Error: boom", 2)]


def test_excerpt_of_unreadable_log_falls_back_to_evidence(tmp_path: Path) -> None:
    evidence = [Evidence(7, "boom", 1)]
    assert excerpt_for(tmp_path / "gone.log", evidence) == (ExcerptLine(7, "boom", 1, True),)
    assert excerpt_for("-", evidence) == (ExcerptLine(7, "boom", 1, True),)


# --- sparkline -----------------------------------------------------------------------------


def test_sparkline_scales_min_to_max_and_marks_nan() -> None:
    assert sparkline([1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]) == "▁▂▃▄▅▆▇█"
    assert sparkline([1.0, math.nan, 8.0, math.inf]) == "▁!█!"
    assert sparkline([math.nan, math.nan]) == "!!"
    assert sparkline([]) == ""


def test_sparkline_draws_noise_on_a_plateau_flat() -> None:
    assert sparkline([2.3026, 2.3025, 2.3028, 2.3026]) == "▄▄▄▄"
    assert sparkline([0.0, 0.0, 0.0]) == "▄▄▄"


def test_sparkline_downsamples_and_keeps_a_nan() -> None:
    values = [float(i) for i in range(600)]
    values[301] = math.nan
    line = sparkline(values, width=60)
    assert len(line) == 60 and line.count("!") == 1


def test_loss_curve_only_for_convergence_causes(make_diagnosis) -> None:
    curve = (3.0, 2.0, math.nan)
    conv = build_report(make_diagnosis("loss_stagnation", loss_curve=curve))
    memory = build_report(make_diagnosis("cuda_oom", loss_curve=curve))
    assert "## Loss curve" in conv and "1 NaN/Inf shown as !" in conv
    assert "## Loss curve" not in memory


# --- Markdown safety -----------------------------------------------------------------------


def test_fence_outruns_backticks_in_the_text() -> None:
    assert fence("plain") == "```\nplain\n```"
    assert fence("a ``` b\n`````").startswith("``````\n")
    assert code_span("x `y` z") == "``x `y` z``"
    assert code_span("`") == "`` ` ``"


def test_log_text_cannot_close_fences_or_open_html(make_diagnosis) -> None:
    hostile = "```\n</details><script>alert(1)</script> [x](http://evil) ````"
    diagnosis = make_diagnosis(
        "position_overflow", evidence=(Evidence(3, hostile.replace("\n", " ")),),
        traceback=f"Traceback (most recent call last):\n{hostile}\nRuntimeError: x",
        source="run`.log", summary="x")
    text = build_report(diagnosis, local_env=FIXED_ENV)
    inside = lines_inside_fences(text)
    hostile_lines = [line for line in text.splitlines() if "<script>" in line]
    assert len(hostile_lines) == 2 and all(line in inside for line in hostile_lines)
    assert "<summary>Traceback</summary>\n\n`````\n" in text  # fence longer than ````
    assert "# minrepro: convergence/position_overflow in run\\`.log\n" in text


def lines_inside_fences(markdown: str) -> set[str]:
    """Lines a CommonMark reader sees inside a backtick fence."""
    inside: set[str] = set()
    opened = 0
    for line in markdown.splitlines():
        ticks = len(line) - len(line.lstrip("`"))
        if not opened and ticks >= 3:
            opened = ticks
        elif opened and ticks >= opened and not line.strip("`").strip():
            opened = 0
        elif opened:
            inside.add(line)
    return inside


def test_control_and_bidi_characters_are_neutralised(make_diagnosis) -> None:
    diagnosis = make_diagnosis("position_overflow",
                               evidence=(Evidence(3, "ok\u202eevil\x07bell\u2028x"),))
    text = build_report(diagnosis)
    assert "\u202e" not in text and "\x07" not in text and "\u2028" not in text
    assert "ok evil bell x" in text


# --- redaction -----------------------------------------------------------------------------

SECRET_LOG = """\
starting on dgx-07 as alice
  File "/home/alice/proj/train.py", line 12, in <module>
MASTER_ADDR=10.20.30.40 init tcp://node-17.cluster:29500 peer fe80::1%eth0
RuntimeError: index out of range in self (mail bob@corp.example.com, ssh carol@gpu-03)
macOS /Users/dave/x and C:\\Users\\erin\\proj and /root/ok.py and 127.0.0.1
"""
SECRETS = ("/home/alice", "alice", "dgx-07", "10.20.30.40", "node-17.cluster", "fe80::1",
           "bob@corp.example.com", "carol@gpu-03", "/Users/dave", "Users\\erin")


def _secret_report(tmp_path: Path, make_diagnosis, *, redact_: bool) -> str:
    log = tmp_path / "secret.log"
    log.write_text(SECRET_LOG, encoding="utf-8")
    diagnosis = make_diagnosis(
        "position_overflow", evidence=(Evidence(3, SECRET_LOG.splitlines()[2]),),
        traceback="\n".join(SECRET_LOG.splitlines()[1:4]), source="secret.log",
        params={"seq_len": 600, "max_positions": 512, "path": "/home/alice/data"})
    return build_report_for_log(log, diagnosis, redact=redact_, local_env=FIXED_ENV,
                                user="alice", hostname="dgx-07.lab.example.com")


def test_redaction_masks_paths_names_hosts_ips_emails(tmp_path: Path, make_diagnosis) -> None:
    text = outside_python(_secret_report(tmp_path, make_diagnosis, redact_=True))
    for secret in SECRETS:
        assert secret not in text, secret
    for mask in ("/home/<user>/proj/train.py", "<user>", "<host>", "MASTER_ADDR=<ip>",
                 "tcp://<host>:29500", "<email>", "<user>@<host>", "/Users/<user>/x",
                 "C:\\Users\\<user>\\proj"):
        assert mask in text, mask
    assert "/root/ok.py" in text and "127.0.0.1" in text  # identify no one


def test_no_redact_keeps_everything(tmp_path: Path, make_diagnosis) -> None:
    text = _secret_report(tmp_path, make_diagnosis, redact_=False)
    for secret in SECRETS:
        assert secret in text, secret
    # The repro's header comments are masked either way (render.comment_text), so that the
    # report's python block stays byte-identical to what `minrepro repro` writes.
    outside = re.sub(r"```python\n.*?\n```", "", text, flags=re.S)
    assert "<user>" not in outside and "<ip>" not in outside


@pytest.mark.parametrize(("text", "expected"), [
    ('File "/home/alice/a.py"', 'File "/home/<user>/a.py"'),
    ("/mnt/home/zed/x", "/mnt/home/<user>/x"),
    ("/root/x", "/root/x"),
    ("C:\\\\Users\\\\erin\\\\x", "C:\\\\Users\\\\<user>\\\\x"),
    ("[2024-03-02 22:41:07] train.py:88 INFO", "[2024-03-02 22:41:07] train.py:88 INFO"),
    ("Indexing.cu:1290: indexSelectLargeIndex", "Indexing.cu:1290: indexSelectLargeIndex"),
    ("to cuda:1 and cuda:10", "to cuda:1 and cuda:10"),
    ("Acc@1   0.27", "Acc@1   0.27"),
    ("y = q@k.transpose(-2, -1)", "y = q@k.transpose(-2, -1)"),
    ("c10::Error at 12:30:45", "c10::Error at 12:30:45"),
    ("  host      : a100-node-3", "  host      : <host>"),
    ("connect 192.168.1.5:29500", "connect <ip>:29500"),
    ("addr 2001:db8::8a2e:370:7334 ::1", "addr <ip> ::1"),
    ("torch 2.5.1+cu124 sm_120", "torch 2.5.1+cu124 sm_120"),
    ("from localhost:8080", "from localhost:8080"),
])
def test_redact_patterns(text: str, expected: str) -> None:
    assert redact(text) == expected


def test_names_are_masked_as_whole_words_any_case() -> None:
    redactor = Redactor(users=("alice",), hosts=("dgx-07.lab", "dgx-07"))
    assert redactor("Alice on DGX-07.lab and dgx-07; malice alicea") == \
        "<user> on <host> and <host>; malice alicea"


def test_generic_and_short_names_are_not_masked() -> None:
    redactor = local_redactor(user="root", hostname="vm")
    assert redactor("root cause on vm") == "root cause on vm"


def test_mask_home_paths_is_idempotent() -> None:
    once = mask_home_paths("/home/alice/x /Users/bob/y")
    assert mask_home_paths(once) == once == "/home/<user>/x /Users/<user>/y"


# --- verify --------------------------------------------------------------------------------


def test_verify_result_is_labelled_volatile() -> None:
    text = report_of(SAMPLES / "position_overflow__cpu_traceback.log", verify=True)
    assert "**Verify result** (volatile:" in text
    assert "`reproduced`, exit 1, last line `REPRODUCED: position_overflow" in text


# --- writing and the CLI -------------------------------------------------------------------


def test_write_text_refuses_to_overwrite_without_force(tmp_path: Path) -> None:
    target = tmp_path / "report.md"
    write_text("one\n", target)
    with pytest.raises(OutputError, match="already exists"):
        write_text("two\n", target)
    assert target.read_text() == "one\n"
    write_text("two\n", target, force=True)
    assert target.read_text() == "two\n"
    assert [p.name for p in tmp_path.iterdir()] == ["report.md"]  # no temp file left


def run_cli(args: list[str], monkeypatch: pytest.MonkeyPatch,
            capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """Run the real entry point (`minrepro ...`): its exit code, stdout and stderr."""
    monkeypatch.setattr(sys, "argv", ["minrepro", *args])
    with pytest.raises(SystemExit) as done:
        main()
    out, err = capsys.readouterr()
    return int(done.value.code or 0), out, err


def test_cli_report_exit_codes(monkeypatch, capsys) -> None:
    code, out, _ = run_cli(["report", str(SAMPLES / "position_overflow__cpu_traceback.log")],
                           monkeypatch, capsys)
    assert code == 0 and out.startswith("# minrepro: convergence/position_overflow in ")
    code, out, _ = run_cli(["report", str(SAMPLES / "none__unrelated_filenotfound.log")],
                           monkeypatch, capsys)  # no cause, but a root class: an answer
    assert code == 0 and out.startswith("# minrepro: config failure (no known cause) in ")
    code, out, _ = run_cli(["report", str(SAMPLES / "none__healthy_hf_trainer.log")],
                           monkeypatch, capsys)
    assert code == 1 and out.startswith("# minrepro: no known cause in ")


def test_cli_report_output_file_needs_force(tmp_path: Path, monkeypatch, capsys) -> None:
    log, target = str(SAMPLES / "position_overflow__cpu_traceback.log"), tmp_path / "issue.md"
    code, _, _ = run_cli(["report", log, "-o", str(target)], monkeypatch, capsys)
    assert code == 0 and target.read_text(encoding="utf-8").startswith("# minrepro: ")
    target.write_text("mine\n")
    code, _, err = run_cli(["report", log, "-o", str(target)], monkeypatch, capsys)
    assert code == 2 and "already exists" in err and len(err.strip().splitlines()) == 1
    assert target.read_text() == "mine\n"
    code, _, _ = run_cli(["report", log, "-o", str(target), "--force"], monkeypatch, capsys)
    assert code == 0 and target.read_text(encoding="utf-8").startswith("# minrepro: ")


def test_cli_no_redact_keeps_home_paths(monkeypatch, capsys) -> None:
    log = str(SAMPLES / "cuda_env_mismatch__sm120_no_kernel_image.log")
    _, masked, _ = run_cli(["report", log], monkeypatch, capsys)
    _, kept, _ = run_cli(["report", log, "--no-redact"], monkeypatch, capsys)
    assert "/home/u/diffusion" not in masked and "/home/<user>/diffusion" in masked
    assert "/home/u/diffusion" in kept
