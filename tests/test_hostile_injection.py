"""No injection: values from a log reach a repro script only as checked literals or comments.

Property (hypothesis, every cause with a template, every param of its spec plus all the text
fields): the script renders, parses, and its AST equals the benign render's AST once every
constant is blanked; it has the benign render's lines, comments on the same lines, and no
character that ends a line for Python or for str.splitlines. Then a handful of hostile
diagnoses are rendered and RUN, and a hostile LOG is fed end to end, checking that nothing
writes a file.
"""

from __future__ import annotations

import ast
import io
import json
import math
import os
import re
import subprocess
import sys
import tokenize
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_hostile_input import assert_one_line_error, run_cli  # noqa: E402 - shared runner

from minrepro.model import Diagnosis, Evidence
from minrepro.repro.render import has_template, render_repro
from minrepro.taxonomy import ALL_CAUSES, CATEGORY_OF

ROOT = Path(__file__).resolve().parents[1]
TEMPLATES = ROOT / "templates"
CAUSES = sorted(c for c in ALL_CAUSES if has_template(c))

# Characters that end a line for Python's tokenizer or for str.splitlines, or hide text.
LINE_BREAKERS = "\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029\x00\u202e"
PAYLOAD = "__import__('os').system('touch pwned')"
HOSTILE_TEXT = [
    "'", '"', "'''", '"""', "\\", "\\'", '\\"', "'\\", "\\\n", "#", "# x\nimport os",
    f'"""; {PAYLOAD}; """', f"'''; {PAYLOAD}; '''", f"'); {PAYLOAD}; ('", f'"); {PAYLOAD}; ("',
    f"\n{PAYLOAD}\n", f"\r{PAYLOAD}", f"\r\n{PAYLOAD}", f"\x0c{PAYLOAD}", f"\x0b{PAYLOAD}",
    f"\u2028{PAYLOAD}", f"\u2029{PAYLOAD}", f"\x85{PAYLOAD}", f"\x00{PAYLOAD}",
    f"\x1c{PAYLOAD}", f"\u202e{PAYLOAD}", "{{ 7*7 }}", "{% raw %}", "{% endraw %}",
    "{% include '_cli.py.j2' %}", "{# comment", "#}", "{{", "}}", "{%", "%}",
    "# -*- coding: utf-7 -*-", "coding=latin-1", "+AGkAbQBwAG8AcgB0-", "%(prog)s %s %d",
    "{0}{1}", "\ud800", "\udfff", "\N{ZERO WIDTH SPACE}", "\t", " ", "",
    f"{'x' * 5000}\n{PAYLOAD}", "\\N{", "\\x", "\\u12", "f'{__import__(\"os\")}'",
    "$(touch pwned)", "`touch pwned`", "; touch pwned", "-- --fixed",
]
HOSTILE_NUMBERS: list[Any] = [
    math.nan, math.inf, -math.inf, -0.0, 0, -1, -(10 ** 9), 2 ** 63, 2 ** 64 + 1,
    10 ** 400, -(10 ** 400), 10 ** 5000, 1e308, -1e308, 5e-324, True, False, None,
    "600", "1e9", "nan", "inf", "0x10", "600; import os", "-1", b"600", [600], {"a": 1},
    (600,), 1j, 600.0000001,
]


def _spec(cause: str) -> dict[str, Any]:
    """templates/<cause>.yaml, read the way the renderer reads it."""
    return yaml.safe_load((TEMPLATES / f"{cause}.yaml").read_text(encoding="utf-8")) or {}


SPECS = {cause: _spec(cause) for cause in CAUSES}


def _variants(cause: str) -> list[str]:
    return list(SPECS[cause].get("variants") or ["default"])


# --- comparing scripts ----------------------------------------------------------------------


class _BlankConstants(ast.NodeTransformer):
    """Blank every literal; `-5` (a UnaryOp on a Constant) is a literal too."""

    def visit_Constant(self, node: ast.Constant) -> ast.AST:
        return ast.Constant(value=None)

    def visit_UnaryOp(self, node: ast.UnaryOp) -> ast.AST:
        if isinstance(node.op, (ast.USub, ast.UAdd)) and isinstance(node.operand, ast.Constant):
            return ast.Constant(value=None)
        return self.generic_visit(node)


def structure(text: str) -> str:
    return ast.dump(_BlankConstants().visit(ast.parse(text)))


def comment_lines(text: str) -> list[tuple[int, bool]]:
    """(line, whole-line comment?) of every comment token."""
    tokens = tokenize.generate_tokens(io.StringIO(text).readline)
    return [(t.start[0], t.line[: t.start[1]].strip() == "") for t in tokens
            if t.type == tokenize.COMMENT]


def code_names(text: str) -> set[str]:
    """Every NAME token: what the script can call, as opposed to what it only prints."""
    tokens = tokenize.generate_tokens(io.StringIO(text).readline)
    return {t.string for t in tokens if t.type == tokenize.NAME}


_BENIGN: dict[tuple[str, str | None], str] = {}


def benign(cause: str, variant: str | None) -> str:
    key = (cause, variant)
    if key not in _BENIGN:
        _BENIGN[key] = render_repro(Diagnosis(
            cause, CATEGORY_OF[cause], 0.9, evidence=(Evidence(12, "RuntimeError: x"),),
            fix="fix it", title="a title", source="run.log", variant=variant, rule_id="MR-X-001"))
    return _BENIGN[key]


def assert_only_constants_differ(text: str, cause: str, variant: object) -> None:
    reference = benign(cause, variant if variant in _variants(cause) else None)
    found = [c for c in LINE_BREAKERS if c in text]
    assert not found, f"line-breaking characters in the script: {found!r}"
    assert structure(text) == structure(reference), "hostile text changed the code"
    assert len(text.splitlines()) == len(reference.splitlines())
    assert comment_lines(text) == comment_lines(reference), "text escaped a comment"
    assert not {"__import__", "system", "pwned", "eval", "exec"} & (
        code_names(text) - code_names(reference))
    head = "".join(text.splitlines(keepends=True)[:2]).lower()
    assert not re.search(r"coding[:=]", head), "a coding cookie in the first two lines"


# --- the property ---------------------------------------------------------------------------

hostile_text = (st.sampled_from(HOSTILE_TEXT)
                | st.text(max_size=80)
                | st.lists(st.sampled_from(HOSTILE_TEXT), min_size=2, max_size=5).map("".join)
                | st.text(alphabet=st.sampled_from(list(LINE_BREAKERS + "'\"\\#{}%\n ")),
                          max_size=40))
hostile_number = (st.sampled_from(HOSTILE_NUMBERS)
                  | st.integers()
                  | st.floats(allow_nan=True, allow_infinity=True)
                  | st.booleans()
                  | hostile_text)


def _param_values(cause: str) -> st.SearchStrategy[dict[str, Any]]:
    """Hostile values for every declared param, any declared choices, and extra junk keys."""
    strategies: dict[str, st.SearchStrategy[Any]] = {}
    for name, body in (SPECS[cause].get("params") or {}).items():
        choices = [c for c in (body or {}).get("choices") or [] if isinstance(c, str)]
        base = hostile_number | (st.sampled_from(choices) if choices else hostile_text)
        strategies[name] = base
    fixed = st.fixed_dictionaries({}, optional=strategies)
    junk = st.dictionaries(hostile_text, hostile_number, max_size=2)
    return st.tuples(fixed, junk).map(lambda pair: {**pair[1], **pair[0]})


@st.composite
def hostile_diagnoses(draw: st.DrawFn, cause: str) -> Diagnosis:
    evidence = draw(st.lists(st.builds(
        Evidence, line=st.integers(-5, 10 ** 7), text=hostile_text,
        rank=st.none() | st.integers(-3, 10 ** 6) | hostile_text), max_size=4))
    return Diagnosis(
        cause=cause,
        category=draw(st.sampled_from([CATEGORY_OF[cause]]) | hostile_text),
        confidence=draw(st.floats(allow_nan=True, allow_infinity=True)),
        params=draw(_param_values(cause)),
        evidence=tuple(evidence),
        fix=draw(hostile_text),
        rule_id=draw(st.none() | hostile_text),
        title=draw(hostile_text),
        variant=draw(st.none() | st.sampled_from(_variants(cause)) | hostile_text),
        source=draw(hostile_text | hostile_text.map(lambda t: f"/var/log/{t}/{t}.log")
                    | hostile_text.map(lambda t: f"C:\\jobs\\{t}.log")),
        summary=draw(hostile_text),
    )


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_hostile_diagnoses_change_only_constants(data: st.DataObject) -> None:
    cause = data.draw(st.sampled_from(CAUSES), label="cause")
    diagnosis = data.draw(hostile_diagnoses(cause), label="diagnosis")
    assert_only_constants_differ(render_repro(diagnosis), cause, diagnosis.variant)


@pytest.mark.parametrize("cause", CAUSES)
@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_every_cause_changes_only_constants(cause: str, data: st.DataObject) -> None:
    diagnosis = data.draw(hostile_diagnoses(cause), label="diagnosis")
    assert_only_constants_differ(render_repro(diagnosis), cause, diagnosis.variant)


def test_every_cause_with_a_template_is_covered() -> None:
    assert len(CAUSES) >= 4 and {"position_overflow", "undetached_loss_list",
                                 "single_class_labels", "softmax_overflow"} <= set(CAUSES)
    for cause in CAUSES:
        assert isinstance(SPECS[cause].get("params") or {}, dict), cause


@pytest.mark.parametrize("cause", CAUSES)
def test_each_hand_picked_payload_in_every_field(cause: str) -> None:
    for text in HOSTILE_TEXT:
        params = {name: text for name in SPECS[cause].get("params") or {}}
        diagnosis = Diagnosis(cause, text, 0.9, params=params, evidence=(Evidence(3, text, 1),),
                              fix=text, rule_id=text, title=text, variant=text, source=text)
        try:
            assert_only_constants_differ(render_repro(diagnosis), cause, text)
        except AssertionError as err:
            raise AssertionError(f"payload {text[:80]!r}: {err}") from None


# --- running hostile scripts ----------------------------------------------------------------


def _kitchen_sink(cause: str, tmp: Path, index: int) -> Diagnosis:
    """One diagnosis with a different payload in every field; numbers out of range."""
    absolute = f"__import__('os').system('touch {tmp}/pwned_abs')"
    texts = [f'"""; {PAYLOAD}; """', f"'''\n{PAYLOAD}\n'''", f"\r\n{absolute}",
             "\u2028open('pwned_open', 'w')", f"{{{{ {PAYLOAD} }}}}", "# -*- coding: utf-7 -*-"]
    numbers = [10 ** 400, -(10 ** 9), 2 ** 63, -1, 1e308, 0]
    params: dict[str, Any] = {}
    for offset, (name, body) in enumerate((SPECS[cause].get("params") or {}).items()):
        kind = (body or {}).get("type")
        pick = numbers[(index + offset) % len(numbers)]
        params[name] = float(pick) if kind == "float" and abs(pick) < 1e300 else (
            texts[(index + offset) % len(texts)] if kind in ("str", "choice") else pick)
    rot = [texts[(index + i) % len(texts)] for i in range(len(texts))]
    return Diagnosis(cause, rot[0], 0.9, params=params,
                     evidence=(Evidence(3, rot[1], 2), Evidence(9, rot[2])), fix=rot[3],
                     rule_id=rot[4], title=rot[5], variant=rot[0],
                     source=f"{rot[1]}.log")


LAST_LINE = re.compile(r"^(REPRODUCED|NOT REPRODUCED|CANNOT TEST): (\w+):")


def pwned_files(folder: Path) -> list[str]:
    """Files a payload would create: `touch pwned`, `pwned_abs`, `open('pwned_open')`."""
    return [str(p) for p in folder.rglob("pwned*")]


def _listing(folder: Path) -> set[str]:
    return {str(p.relative_to(folder)) for p in folder.rglob("*")}


# Runs scripts the way `python repro.py` does, but imports torch once: each script runs in a
# child forked from a warm interpreter (runpy, as __main__), in its own cwd with its own HOME and
# TMPDIR, output to a file, killed after a timeout. Saves ~1 s of torch import per script.
_FORK_RUNNER = r"""
import json, os, runpy, signal, sys, tempfile, time, traceback
import torch  # noqa: F401 - the point: imported once, before the forks
jobs, results, running = json.load(open(sys.argv[1])), {}, {}
def start(job):
    pid = os.fork()
    if pid:
        return pid
    try:
        os.chdir(job["cwd"])
        os.environ.update(HOME=job["home"], TMPDIR=job["tmp"])
        tempfile.tempdir = None
        fd = os.open(job["out"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        sys.argv = [job["script"]]
        code = 0
        try:
            runpy.run_path(job["script"], run_name="__main__")
        except SystemExit as done:
            code = done.code if isinstance(done.code, int) else (0 if done.code is None else 1)
        except BaseException:
            traceback.print_exc()
            code = 1
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        os._exit(locals().get("code", 70))
pending = list(jobs)
while pending or running:
    while pending and len(running) < int(sys.argv[2]):
        job = pending.pop(0)
        running[start(job)] = (job, time.monotonic() + job["timeout"])
    time.sleep(0.02)
    for pid, (job, deadline) in list(running.items()):
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            results[job["script"]] = os.waitstatus_to_exitcode(status)
        elif time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            results[job["script"]] = None
        else:
            continue
        del running[pid]
json.dump(results, open(sys.argv[3], "w"))
"""


@pytest.fixture(scope="module")
def script_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    """Render one kitchen-sink diagnosis per cause and run every script, four at a time.

    Each script gets its own cwd, HOME and TMPDIR under one folder; the folder's listing is
    taken before and after, outside those three.
    """
    root = tmp_path_factory.mktemp("hostile_runs")
    results: dict[str, dict[str, Any]] = {}
    jobs = []
    for index, cause in enumerate(CAUSES):
        box = root / cause
        for sub in ("cwd", "home", "tmp"):
            (box / sub).mkdir(parents=True)
        script = box / "cwd" / "repro.py"
        text = render_repro(_kitchen_sink(cause, box, index))
        script.write_text(text, encoding="utf-8")
        results[cause] = {"box": box, "script": script, "text": text}
        jobs.append({"script": str(script), "cwd": str(box / "cwd"), "home": str(box / "home"),
                     "tmp": str(box / "tmp"), "out": str(root / f"{cause}.out"),
                     "timeout": 120})
    control = tmp_path_factory.mktemp("hostile_runner")
    (control / "jobs.json").write_text(json.dumps(jobs), encoding="utf-8")
    before = _listing(root)
    subprocess.run([sys.executable, "-c", _FORK_RUNNER, str(control / "jobs.json"),
                    "4", str(control / "codes.json")],  # 4: some scripts mostly sleep
                   cwd=control, check=True, timeout=600,
                   env={**os.environ, "CUDA_VISIBLE_DEVICES": ""})
    codes = json.loads((control / "codes.json").read_text(encoding="utf-8"))
    after = _listing(root)
    # Inside a box's cwd/home/tmp a script may write (torch caches, mp error files); not elsewhere.
    outside = sorted(p for p in after - before
                     if not p.endswith(".out") and (
                         len(Path(p).parts) < 3 or Path(p).parts[1] not in ("cwd", "home", "tmp")))
    for cause, result in results.items():
        result["code"] = codes[str(result["script"])]
        result["out"] = (root / f"{cause}.out").read_text(encoding="utf-8", errors="replace")
        result["new_outside"] = outside
    return results


@pytest.mark.slow
@pytest.mark.parametrize("cause", CAUSES)
def test_hostile_script_runs_without_side_effects(script_runs: dict, cause: str) -> None:
    result = script_runs[cause]
    box: Path = result["box"]
    assert result["code"] is not None, "the script hung"
    pwned = pwned_files(box.parent)
    assert not pwned, f"payload executed: {pwned}"
    assert not result["new_outside"], f"files written outside the script's dirs: " \
                                      f"{result['new_outside']}"
    assert result["script"].read_text(encoding="utf-8") == result["text"]
    assert result["code"] in (0, 1, 125), result["out"][-3000:]
    last = result["out"].strip().splitlines()[-1] if result["out"].strip() else ""
    stdout_last = [line for line in result["out"].splitlines() if LAST_LINE.match(line)]
    assert stdout_last and LAST_LINE.match(stdout_last[-1]).group(2) == cause, last


# --- a hostile log, end to end --------------------------------------------------------------

HOSTILE_LINE = f'"""; {PAYLOAD}; """'
HOSTILE_POSITION_LOG = f"""{HOSTILE_LINE}
Token indices sequence length is longer than the specified maximum sequence length \
for this model (600 > 512). {HOSTILE_LINE}
Traceback (most recent call last):
  File "/work/{HOSTILE_LINE}.py", line 3, in <module>
    {HOSTILE_LINE}
RuntimeError: The size of tensor a (600) must match the size of tensor b (512) at \
non-singleton dimension 1 {HOSTILE_LINE}\r{PAYLOAD}\x0c{PAYLOAD}\u2028{PAYLOAD}
"""
HOSTILE_OOM_LOG = f"""{HOSTILE_LINE}
torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.00 GiB. GPU 0 has a total \
capacity of 23.55 GiB of which 2.11 GiB is free. {HOSTILE_LINE}
"""


@pytest.mark.slow
@pytest.mark.parametrize("log_text, cause", [
    (HOSTILE_POSITION_LOG, "position_overflow"),
    (HOSTILE_OOM_LOG, "cuda_oom"),
], ids=["position_overflow", "cuda_oom"])
@pytest.mark.parametrize("name", ["run.log", f"x{HOSTILE_LINE}\n.log"], ids=["plain", "hostile"])
def test_hostile_log_end_to_end(tmp_path: Path, log_text: str, cause: str, name: str) -> None:
    logs, cwd = tmp_path / "logs", tmp_path / "cwd"
    logs.mkdir()
    cwd.mkdir()
    log = logs / name
    log.write_text(log_text, encoding="utf-8")
    script = cwd / "r.py"
    result = run_cli("repro", str(log), "-o", str(script), cwd=cwd)
    assert result.code == 0, result.err
    assert "Traceback" not in result.err
    text = script.read_text(encoding="utf-8")
    assert f"REPRODUCED: {cause}" in text
    found = [c for c in LINE_BREAKERS if c in text]
    assert not found, f"line-breaking characters in the script: {found!r}"
    assert not {"__import__", "system", "pwned"} & code_names(text), "the payload became code"
    called = {node.id for node in ast.walk(ast.parse(text)) if isinstance(node, ast.Name)}
    assert "__import__" not in called and "eval" not in called
    before = _listing(tmp_path)
    done = subprocess.run([sys.executable, str(script)], cwd=cwd, capture_output=True,
                          text=True, timeout=120, env={**os.environ, "TMPDIR": str(cwd)})
    assert done.returncode in (0, 1, 125), done.stderr[-2000:]
    assert not pwned_files(tmp_path), "the payload ran"
    assert {p for p in _listing(tmp_path) - before if not p.startswith("cwd/")} == set()


def test_hostile_log_through_diagnose_json_stays_data(tmp_path: Path) -> None:
    log = tmp_path / "run.log"
    log.write_text(HOSTILE_POSITION_LOG, encoding="utf-8")
    result = run_cli("diagnose", "--json", str(log), cwd=tmp_path)
    assert result.code == 0 and "Traceback" not in result.err
    assert not pwned_files(tmp_path)


def test_repro_of_a_log_with_no_cause_writes_nothing(tmp_path: Path) -> None:
    log = tmp_path / "run.log"
    log.write_text(f"{HOSTILE_LINE}\nall fine\n", encoding="utf-8")
    result = run_cli("repro", str(log), "-o", str(tmp_path / "r.py"), cwd=tmp_path)
    assert result.code == 1 and not (tmp_path / "r.py").exists()
    assert "Traceback" not in result.err and len(result.err.strip().splitlines()) == 1


def test_unknown_cause_in_a_diagnosis_is_a_render_error() -> None:
    from minrepro.errors import RenderError

    for cause in ("../../etc/passwd", "position_overflow.py.j2", "_cli", "os.system", "x" * 500):
        with pytest.raises(RenderError):
            render_repro(Diagnosis(cause, "memory", 0.9))


def test_bad_input_to_repro_is_still_one_line(tmp_path: Path) -> None:
    assert_one_line_error(run_cli("repro", str(tmp_path / "missing.log")), "no such file")


# --- reports: no secrets, no live mentions/links (issue 14, items 4 and 5) -------------------

_CREDENTIALS = {
    "hf": "hf_AbCdEfGhIjKlMnOpQrStUvWxYz012345",
    "openai": "sk-proj-AbCdEfGhIjKlMnOpQrStUvWx",
    "github": "ghp_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789",
    "github-pat": "github_pat_11ABCDEFG0123456789_abcdefghijklmnop",
    "aws": "AKIAIOSFODNN7EXAMPLE",
    "jwt": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N",
    "url-password": "hunter2pass",
    "assigned": "s3cr3t-Value",
}
_SECRET_LINE = (
    f"RuntimeError: index out of range in self; HF_TOKEN {_CREDENTIALS['hf']} OPENAI "
    f"{_CREDENTIALS['openai']} gh {_CREDENTIALS['github']} pat {_CREDENTIALS['github-pat']} "
    f"key {_CREDENTIALS['aws']} Authorization: Bearer {_CREDENTIALS['jwt']} remote "
    f"https://zoe:{_CREDENTIALS['url-password']}@git.example.com/r.git "
    f"--password={_CREDENTIALS['assigned']} /users/quentin/x /u/rosalind/y "
    "host ip-10-20-30-40.ec2.internal")


def _report(tmp_path: Path, text: str, user: str = "torvaldsish") -> str:
    from minrepro.diagnose.pipeline import diagnose_log
    from minrepro.report.bugreport import build_report_for_log
    from minrepro.report.envreport import EnvReport

    log = tmp_path / "run.log"
    log.write_text(text, encoding="utf-8")
    diagnosis = diagnose_log(log)
    return build_report_for_log(log, diagnosis, local_env=EnvReport(()), user=user,
                                hostname="box-17.example.org")


def test_report_masks_credentials_cloud_hosts_and_homes(tmp_path: Path) -> None:
    log = ("Traceback (most recent call last):\n  File \"/u/rosalind/train.py\", line 3, in f\n"
           f"{_SECRET_LINE}\n")
    text = _report(tmp_path, log)
    for kind, secret in _CREDENTIALS.items():
        assert secret not in text, kind
    for name in ("quentin", "rosalind", "ip-10-20-30-40", "zoe:"):
        assert name not in text, name
    assert "<secret>" in text


def test_local_user_is_masked_in_the_reports_repro_header(tmp_path: Path) -> None:
    """The repro's header quotes the evidence line: in the report the local user is masked."""
    log = ("Traceback (most recent call last):\n  File \"train.py\", line 3, in f\n"
           "IndexError: index out of range in self (user torvaldsish, seq 600 > 512)\n")
    text = _report(tmp_path, log)
    assert "torvaldsish" not in text
    for match in re.finditer(r"```python\n(?P<body>.*?)\n```", text, flags=re.S):
        ast.parse(match["body"])


_MENTION_NAME = st.from_regex(r"[A-Za-z][A-Za-z0-9-]{0,12}", fullmatch=True)


def _live_prose(markdown: str) -> list[str]:
    """What GitHub would turn live outside fences and code spans."""
    prose = re.sub(r"^(`{3,}).*?^\1$", "", markdown, flags=re.M | re.S)
    prose = re.sub(r"(`+)(?!`).*?(?<!`)\1(?!`)", "", prose)
    return re.findall(r"(?<![\w`])@\w|#\d|https?://|\bwww\.", prose)


@settings(max_examples=60, deadline=None)
@given(_MENTION_NAME, _MENTION_NAME, st.integers(1, 99999),
       st.sampled_from(["", "(", "x ", "owner/repo"]))
def test_md_escape_makes_mentions_refs_and_urls_inert(user: str, team: str, number: int,
                                                     before: str) -> None:
    from minrepro.report.markdown import md_escape

    text = (f"{before}@{user} cc @{user}/{team} {before}#{number} see "
            f"https://{user}.example/{team}?a=1&b=2 and www.{team}.example")
    assert not _live_prose(md_escape(text)), md_escape(text)


def test_report_prose_has_no_live_mentions(tmp_path: Path) -> None:
    """The no-cause summary, the first failure and the file name are prose in the report."""
    log = ("Traceback (most recent call last):\n  File \"t.py\", line 3, in <module>\n"
           "RuntimeError: ping @octocat and @acme/admins re #1234, see https://evil.example/p\n")
    text = _report(tmp_path, log)
    assert "octocat" in text
    assert not _live_prose(text), _live_prose(text)
