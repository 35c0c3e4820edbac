"""The render engine: filters, spec validation, value resolution, hostile input, writing."""

from __future__ import annotations

import ast
import enum
import math
import os
import shutil
import stat
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minrepro.errors import OutputError, RenderError
from minrepro.model import Diagnosis, Evidence
from minrepro.repro import render
from minrepro.repro.render import (
    check_script,
    comment_text,
    environment,
    has_template,
    load_spec,
    py_literal,
    render_repro,
    resolve_values,
    write_script,
)
from minrepro.repro.spec import Origin, Resolved

FORBIDDEN = "\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029\x00\u202e"
HOSTILE = [
    "'", '"', "'''", '"""', "\\", "\\'", "a\nimport os\nos.system('x')", "x\r\nimport os",
    "\x0cimport os", "\u2028import os", "\x00", "__import__('os').system('x')",
    "{{ 7 * 7 }}", "{% include '_cli.py.j2' %}", "{# x", "\u202eevil", "# -*- coding: utf-7 -*-",
    "\ud800", "%(prog)s %d", "x" * 5000,
]

HOSTILE_IDS = [f"hostile{index}" for index in range(len(HOSTILE))]


class Level(enum.IntEnum):
    HIGH = 600


class Sneaky(str):
    def __repr__(self) -> str:
        return "__import__('os')"


# --- filters -------------------------------------------------------------------------------


@pytest.mark.parametrize("value", [0, 600, -3, 1.5, 1e-8, True, False, None, "", "abc", *HOSTILE],
                         ids=repr)
def test_py_round_trips_plain_values(value: object) -> None:
    text = py_literal(value)
    assert ast.literal_eval(text) == value
    assert "\n" not in text and not any(c in text for c in FORBIDDEN)


@pytest.mark.parametrize("value", [
    object(), [1, 2], [object()], {"a": 1}, (1,), math.nan, math.inf, -math.inf, b"x",
    Level.HIGH, Sneaky("x"), 2.5j, pytest.param(10 ** 5000, id="huge-int"),
])
def test_py_rejects_anything_else(value: object) -> None:
    with pytest.raises(RenderError):
        py_literal(value)


@pytest.mark.parametrize("text", HOSTILE, ids=HOSTILE_IDS)
def test_comment_is_one_safe_line(text: str) -> None:
    line = comment_text(text)
    assert len(line) <= 100 and "\n" not in line
    assert not any(c in line for c in FORBIDDEN) and "\ud800" not in line
    assert "coding:" not in line.lower() and "coding=" not in line.lower()
    assert ast.parse("# " + line + "\nx = 1\n")


def test_comment_limit_and_whitespace() -> None:
    assert comment_text("a \t b\n\nc") == "a b c"
    assert comment_text("x" * 300, 50) == "x" * 47 + "..."


# --- values --------------------------------------------------------------------------------


def test_values_from_the_log_defaults_and_clamping() -> None:
    spec = load_spec("position_overflow")
    resolved = resolve_values(spec, {"seq_len": 100_000, "max_positions": 512})
    assert resolved == {"seq_len": Resolved(4096, Origin.CLAMPED, 100_000),
                        "max_positions": Resolved(512, Origin.LOG)}
    resolved = resolve_values(spec, {})
    assert {name: item.value for name, item in resolved.items()} == {"seq_len": 600,
                                                                      "max_positions": 512}
    assert {item.origin for item in resolved.values()} == {Origin.DEFAULT}


@pytest.mark.parametrize("bad", ["937", True, 937.0, None, [937], math.nan, object()])
def test_wrong_types_fall_back_to_the_default(bad: object) -> None:
    resolved = resolve_values(load_spec("position_overflow"), {"seq_len": bad})
    assert resolved["seq_len"] == Resolved(600, Origin.DEFAULT)


def test_huge_numbers_are_clamped(make_diagnosis) -> None:
    resolved = resolve_values(load_spec("position_overflow"), {"seq_len": 10 ** 5000})
    assert resolved["seq_len"].value == 4096 and resolved["seq_len"].origin is Origin.CLAMPED
    text = render_repro(make_diagnosis("position_overflow", params={"seq_len": 10 ** 5000}))
    assert "seq_len=4096 (clamped from a huge number)" in text


def test_choice_values() -> None:
    spec = load_spec("softmax_overflow")
    assert resolve_values(spec, {"dtype": "bfloat16"})["dtype"].value == "bfloat16"
    resolved = resolve_values(spec, {"dtype": "torch.bfloat16'); import os"})
    assert resolved["dtype"] == Resolved("float16", Origin.DEFAULT)


@pytest.mark.parametrize(("params", "expected"), [
    ({"seq_len": 300, "max_positions": 512}, (513, 512)),  # raise the left side
    ({"seq_len": 2, "max_positions": 100_000}, (2049, 2048)),
    ({"seq_len": 100_000, "max_positions": 100_000}, (4096, 2048)),
    ({"seq_len": 512, "max_positions": 512}, (513, 512)),
    ({"seq_len": 600}, (600, 512)),
    ({"max_positions": 2000}, (2001, 2000)),  # a default moved by the relation stays default
])
def test_relation_survives_clamping(params: dict, expected: tuple) -> None:
    resolved = resolve_values(load_spec("position_overflow"), params)
    seq_len, max_positions = resolved["seq_len"], resolved["max_positions"]
    assert (seq_len.value, max_positions.value) == expected
    assert seq_len.value > max_positions.value
    if "seq_len" not in params:
        assert seq_len.origin is Origin.DEFAULT


# --- rendering -----------------------------------------------------------------------------


def structure(text: str) -> str:
    """The AST with every constant blanked: what is code, as opposed to data."""
    tree = ast.parse(text)
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant):
            node.value = None
    return ast.dump(tree)


@pytest.mark.parametrize("cause", ["position_overflow", "undetached_loss_list",
                                   "single_class_labels", "softmax_overflow"])
@pytest.mark.parametrize("hostile", HOSTILE, ids=HOSTILE_IDS)
def test_hostile_text_changes_only_constants(make_diagnosis, cause: str, hostile: str) -> None:
    benign = render_repro(make_diagnosis(cause))
    bad = render_repro(make_diagnosis(
        cause, params={"seq_len": hostile, "max_positions": hostile, "dtype": hostile,
                       "num_classes": hostile, hostile[:20]: hostile},
        evidence=(Evidence(3, hostile, 2), Evidence(4, hostile)), fix=hostile, title=hostile,
        rule_id=hostile, source=hostile, category=hostile, variant=hostile))
    assert structure(bad) == structure(benign)
    assert len(bad.splitlines()) == len(benign.splitlines())
    assert not any(c in bad for c in FORBIDDEN)
    assert "coding:" not in "".join(bad.splitlines(keepends=True)[:2])


@settings(max_examples=60, deadline=None)
@given(text=st.text(max_size=300), number=st.integers() | st.floats() | st.text(max_size=20))
def test_any_log_text_renders_to_the_same_code(text: str, number: object) -> None:
    def build(t: str, n: object) -> Diagnosis:
        return Diagnosis("position_overflow", "convergence", 0.9, params={"seq_len": n},
                         evidence=(Evidence(1, t),), fix=t, title=t, source=t)
    assert structure(render_repro(build(text, number))) == structure(render_repro(build("", 600)))


def test_header_names_what_where_values_and_how(make_diagnosis) -> None:
    text = render_repro(make_diagnosis(
        "position_overflow", params={"seq_len": 100_000, "max_positions": 512},
        source="/abs/path/run.log"))
    header = [line for line in text.splitlines() if line.startswith("#")][:6]
    assert "position_overflow" in header[1] and "MR-TEST-001" in header[1]
    assert header[2].startswith("# from run.log: line 12 [rank 3]: RuntimeError")
    assert "seq_len=4096 (clamped from 100000)" in header[3]
    assert "max_positions=512 (log)" in header[3]
    assert "--fixed" in header[4] and "125" in header[4]
    assert "/abs/path" not in text


def test_render_is_deterministic(make_diagnosis) -> None:
    assert render_repro(make_diagnosis("softmax_overflow")) == \
        render_repro(make_diagnosis("softmax_overflow"))


def test_unknown_variant_falls_back_to_the_first(make_diagnosis) -> None:
    assert render_repro(make_diagnosis("position_overflow", variant="nope")) == \
        render_repro(make_diagnosis("position_overflow", variant="index"))


def test_render_refuses_undiagnosed_and_unknown_causes(make_diagnosis) -> None:
    with pytest.raises(RenderError, match="no known cause"):
        render_repro(Diagnosis(None, None, 0.0))
    with pytest.raises(RenderError, match="no repro template"):
        render_repro(make_diagnosis("no_such_cause"))
    with pytest.raises(RenderError):
        render_repro(make_diagnosis("../templates/_header"))
    assert has_template("position_overflow") and not has_template("_header")
    assert not has_template("../minrepro/render")


def test_environment_settings() -> None:
    env = environment()
    assert env is environment()
    assert env.keep_trailing_newline and env.trim_blocks and not env.autoescape
    assert env.undefined.__name__ == "StrictUndefined"


# --- checks of the rendered text -----------------------------------------------------------


@pytest.mark.parametrize(("text", "message"), [
    ("import numpy\n", "imports 'numpy'"),
    ("from transformers import x\n", "imports 'transformers'"),
    ("x = (\n", "not valid Python"),
    ("x = 1\n" * 41, "41 non-blank lines"),
])
def test_check_script_rejects(text: str, message: str) -> None:
    with pytest.raises(RenderError, match=message):
        check_script(text)


def test_check_script_accepts_stdlib_and_torch() -> None:
    check_script("import os, sys\nimport torch.nn.functional as F\nfrom collections import deque\n")


# --- spec validation (templates in a temporary folder) ---------------------------------------


@pytest.fixture
def template_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    real = render.template_dir()
    for include in real.glob("_*.j2"):
        shutil.copy(include, tmp_path / include.name)
    monkeypatch.setattr(render, "template_dir", lambda: tmp_path)
    render.environment.cache_clear()
    render.load_spec.cache_clear()
    yield tmp_path
    render.environment.cache_clear()
    render.load_spec.cache_clear()


BODY = ('{% include "_header.py.j2" %}\n{% include "_cli.py.j2" %}\n'
        'NAME = {{ v.name | py }}  # {{ v.name | comment }}\nprint("REPRODUCED: demo: " + NAME)\n')


def test_a_str_param_reaches_code_only_as_a_literal(template_root: Path, make_diagnosis) -> None:
    (template_root / "demo.py.j2").write_text(BODY)
    (template_root / "demo.yaml").write_text(
        "params:\n  name: {type: str, default: x, max_len: 40}\n")
    for hostile in HOSTILE:
        text = render_repro(make_diagnosis("demo", params={"name": hostile}))
        namespace: dict = {}
        name_line = next(line for line in text.splitlines() if line.startswith("NAME = "))
        exec(name_line.split("  #")[0], namespace)  # noqa: S102 - a literal assignment
        assert namespace["NAME"] == hostile[:40]
        assert structure(text) == structure(render_repro(make_diagnosis("demo")))


@pytest.mark.parametrize(("spec", "message"), [
    ("params: {}\nextra: 1\n", "demo.yaml: extra: unknown key"),
    ("params:\n  n: {type: int, default: 1, maxx: 3}\n", "params.n.maxx: unknown key"),
    ("params:\n  n: {type: int, default: 1, max: high}\n", "params.n.max: should be int"),
    ("params:\n  n: {type: int, default: true}\n", "params.n.default: should be int"),
    ("params:\n  n: {type: int, default: 9, max: 3}\n", "params.n.default: is not"),
    ("params:\n  n: {type: int, min: 1}\n", "params.n.default: is required"),
    ("params:\n  n: {type: list, default: 1}\n", "params.n: should be a mapping with type"),
    ("params:\n  n: {type: choice, default: a}\n", "params.n.choices: should be"),
    ("params:\n  n: {type: choice, default: c, choices: [a, b]}\n", "params.n.default: is not"),
    ("params:\n  n: {type: str, default: x, max_len: 0}\n", "params.n.max_len: should be"),
    ("params:\n  1n: {type: int, default: 1}\n", "params.1n: should be a Python identifier"),
    ("variants: []\n", "variants: should be"),
    ("gpu_only: yes please\n", "gpu_only: should be true or false"),
    ("variants: [a, b]\ngpu_only: true\ncpu_variants: [c]\n", "cpu_variants: should name declared"),
    ("expect: [1]\n", "expect: should be a string or a list"),
    ("params:\n  n: {type: int, default: 1}\nrelations: [[n, '>', m]]\n", "relations[0]: 'm'"),
    ("params:\n  n: {type: int, default: 1}\nrelations: [[n, '!=', n]]\n", "relations[0]"),
    ("params:\n  a: {type: int, default: 1}\n  b: {type: int, default: 2}\n"
     "relations: [[a, '>', b]]\n", "defaults do not satisfy"),
    ("params: [\n", "demo.yaml: cannot load"),
    ("- 1\n", "the spec should be a mapping"),
    ("params:\n  n: {type: int, default: 1}\nexample: {m: 3}\n", "example: should map declared"),
    ("example: [1]\n", "example: should map declared"),
])
def test_bad_specs_name_file_and_key(template_root: Path, spec: str, message: str) -> None:
    (template_root / "demo.py.j2").write_text(BODY)
    (template_root / "demo.yaml").write_text(spec)
    with pytest.raises(RenderError) as caught:
        load_spec("demo")
    assert "templates/demo.yaml" in str(caught.value) and message in str(caught.value)


def test_float_bounds_written_the_yaml_way(template_root: Path) -> None:
    (template_root / "demo.py.j2").write_text(BODY)
    (template_root / "demo.yaml").write_text(
        "params:\n  lr: {type: float, default: 1.0, min: 1e-8, max: 1e4}\n")
    spec = load_spec("demo")
    assert resolve_values(spec, {"lr": 1e9}) == {"lr": Resolved(1e4, Origin.CLAMPED, 1e9)}
    assert resolve_values(spec, {"lr": 3})["lr"].value == 3.0
    assert resolve_values(spec, {"lr": math.inf})["lr"].origin is Origin.DEFAULT


def test_broken_templates_raise_render_errors(template_root: Path, make_diagnosis) -> None:
    (template_root / "demo.yaml").write_text("params: {}\n")
    for body, message in [("{{ missing }}\n", "undefined"), ("x = {{ v.nope | py }}\n", "nope"),
                          ("x = {{ v | py }}\n", "type dict"), ("x = (\n", "not valid Python"),
                          ("{% if %}\n", "demo.py.j2")]:
        (template_root / "demo.py.j2").write_text(body)
        render.environment.cache_clear()
        with pytest.raises(RenderError, match=message):
            render_repro(make_diagnosis("demo"))


def test_gpu_only_scripts_exit_125_without_cuda(template_root: Path, make_diagnosis) -> None:
    (template_root / "demo.py.j2").write_text(BODY)
    (template_root / "demo.yaml").write_text(
        "params:\n  name: {type: str, default: x}\ngpu_only: true\n")
    text = render_repro(make_diagnosis("demo"))
    assert 'if device.type != "cuda" or not torch.cuda.is_available():' in text
    assert "sys.exit(125)" in text



def test_a_cpu_variant_of_a_gpu_only_template_runs_without_cuda(template_root: Path,
                                                                 make_diagnosis) -> None:
    """A check of this machine (no GPU visible at all) runs where the GPU ones cannot."""
    (template_root / "demo.py.j2").write_text(BODY)
    (template_root / "demo.yaml").write_text(
        "params:\n  name: {type: str, default: x}\nvariants: [arch, no_gpu]\ngpu_only: true\n"
        "cpu_variants: [no_gpu]\n")
    gpu = render_repro(make_diagnosis("demo"))
    cpu = render_repro(make_diagnosis("demo", variant="no_gpu"))
    assert 'device.type != "cuda" or not' in gpu and 'device.type != "cuda" or not' not in cpu


# --- writing ------------------------------------------------------------------------------


def test_write_script(tmp_path: Path) -> None:
    target = tmp_path / "repro.py"
    assert write_script("print(1)\n", target) == target
    assert target.read_text() == "print(1)\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o755
    with pytest.raises(OutputError, match="already exists"):
        write_script("print(2)\n", target)
    assert target.read_text() == "print(1)\n"
    write_script("print(2)\n", target, force=True)
    assert target.read_text() == "print(2)\n"
    assert sorted(os.listdir(tmp_path)) == ["repro.py"]  # no temp files left behind


def test_write_script_errors(tmp_path: Path) -> None:
    with pytest.raises(OutputError, match="is a directory"):
        write_script("x\n", tmp_path, force=True)
    with pytest.raises(OutputError, match="cannot write"):
        write_script("x\n", tmp_path / "missing" / "repro.py")
