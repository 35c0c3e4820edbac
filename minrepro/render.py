"""Render a Diagnosis into a standalone repro script (Jinja2 template + YAML spec per cause).

Engine contract (templates are written against exactly this):

* Files: ``templates/<cause>.py.j2`` (the script) and ``templates/<cause>.yaml`` (its spec).
  Shared includes are named ``templates/_*.j2``: ``_header.py.j2`` (shebang + 5-6 comment
  lines: what, from which log lines, values and their origin, fix, how to run) and
  ``_cli.py.j2`` (imports argparse/os/sys/warnings/torch, filters the NumPy warning, parses
  ``--fixed`` and ``--device``, exits 125 when CUDA is asked for but missing, or always
  without CUDA when the spec says ``gpu_only``; seeds torch). A script starts with
  ``{% include "_header.py.j2" %}`` and then ``{% include "_cli.py.j2" %}``; code that must
  run before torch is imported (``os.environ["CUDA_LAUNCH_BLOCKING"] = "1"``) goes between.
  After it the script has ``args.fixed`` (bool), ``args.device`` (str) and ``device`` (a
  torch.device). Its last stdout line is ``REPRODUCED: <cause>: <detail>`` (exit 1, after
  the real error or symptom) or ``NOT REPRODUCED: <cause>: <detail>`` (exit 0); exit 125
  after ``CANNOT TEST: <cause>: <reason>``.
* Spec keys (unknown keys are errors naming the file and key):
  ``params: {name: {type: int|float|str|choice, default, min, max, max_len, choices}}``
  (int/float take min/max, str takes max_len, choice needs choices; PyYAML reads ``1e-8``
  as a string, so numeric strings are accepted for float bounds), ``variants: [..]``
  (first is the default; omitted -> ``["default"]``), ``gpu_only: bool``,
  ``relations: [[left, ">"|">="|"<"|"<=", right], ..]`` (kept after clamping by raising
  the larger side or lowering the smaller one within bounds).
* Values: taken from ``Diagnosis.params`` when of the declared type (int: not bool; float:
  finite int/float; choice: one of choices; str: cut to max_len), else the default.
  Out-of-range numbers are clamped. Unknown variants fall back to the first variant.
* Context: ``cause``, ``category``, ``title``, ``rule_id``, ``variant``, ``gpu_only``,
  ``v`` (name -> value), ``origin`` (name -> "log" | "default" | "clamped"),
  ``clamped_from`` (name -> value in the log, for clamped names), ``values_summary``
  (one line "seq_len=4096 (clamped from 100000), max_positions=512 (log)"),
  ``source`` (log basename), ``evidence`` (list of "line 12 [rank 3]: text"), ``fix``.
  All text is one sanitised line, but it is still untrusted: it reaches code only through
  ``| py`` and comments only through ``| comment``.
* Filters: ``py`` (repr of a checked None/bool/int/finite float/str, else RenderError) and
  ``comment(limit=100)`` (one safe line for a ``#`` comment).
* Environment: StrictUndefined, keep_trailing_newline, autoescape off, trim_blocks and
  lstrip_blocks (a ``{% tag %}`` alone on its line leaves no blank line).
* Every rendered script is checked: ``ast.parse``, imports only stdlib + torch, at most
  40 non-blank lines. Rendering is deterministic (no times, no absolute paths).
"""

from __future__ import annotations

import ast
import functools
import math
import os
import re
import sys
import tempfile
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jinja2
import yaml

import minrepro
from minrepro.errors import OutputError, RenderError
from minrepro.model import Diagnosis, Evidence
from minrepro.redact import redact
from minrepro.taxonomy import CATEGORY_OF

MAX_SCRIPT_LINES = 40
_MAX_EVIDENCE = 20  # the header shows one or two; the rest only costs time
_CAUSE_NAME = re.compile(r"[a-z][a-z0-9_]{0,63}")
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")
# Characters that end a line for Python or for str.splitlines, or hide text (bidi, NUL ...).
_UNSAFE_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})
# A "coding[:=]" comment in the first two lines changes how Python decodes the file.
_CODING_COOKIE = re.compile(r"coding([:=])", re.IGNORECASE)
_OPS = {">": lambda a, b: a > b, ">=": lambda a, b: a >= b,
        "<": lambda a, b: a < b, "<=": lambda a, b: a <= b}
_PARAM_KEYS = {"int": {"type", "default", "min", "max"}, "float": {"type", "default", "min", "max"},
               "str": {"type", "default", "max_len"}, "choice": {"type", "default", "choices"}}
_SPEC_KEYS = {"params", "variants", "gpu_only", "relations"}
_FLOAT_TEXT = re.compile(r"[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?")


# --- filters -------------------------------------------------------------------------------


def py_literal(value: object) -> str:
    """The `py` filter: a Python literal for a value of a checked type, nothing else."""
    if isinstance(value, jinja2.Undefined):
        str(value)  # StrictUndefined raises the UndefinedError that names the missing value
    kind = type(value)  # exact types: a subclass could override __repr__
    if kind is float and not math.isfinite(value):
        raise RenderError(f"cannot render non-finite float {value!r} as a literal")
    if value is None or kind in (bool, int, float, str):
        try:
            return repr(value)
        except ValueError as err:  # an int too long to print
            raise RenderError(f"cannot render value as a literal: {err}") from None
    raise RenderError(f"cannot render a value of type {kind.__name__} as a literal")


def one_line(text: object, limit: int = 100) -> str:
    """Collapse `text` to one printable line of at most `limit` characters."""
    raw = str(text)[: limit * 4]
    chars = (" " if unicodedata.category(c) in _UNSAFE_CATEGORIES else c for c in raw)
    line = " ".join("".join(chars).split())
    return line if len(line) <= limit else line[: max(limit - 3, 0)].rstrip() + "..."


def comment_text(text: object, limit: int = 100) -> str:
    """The `comment` filter: text that is safe after a `#` (one line, no coding cookie).

    Home paths, IPs and e-mail addresses are masked (machine-independent masks only, so the
    same log still renders the same script anywhere): scripts get attached to public issues.
    """
    # Substituted before one_line: it only replaces and collapses, never joins letters.
    masked = redact(str(text)[: limit * 4])
    return one_line(_CODING_COOKIE.sub(r"coding \1", masked), limit)


# --- environment and template files -------------------------------------------------------


def template_dir() -> Path:
    """Templates inside the installed package, else the repository's top-level templates/."""
    packaged = Path(minrepro.__file__).parent / "templates"
    return packaged if packaged.is_dir() else Path(__file__).resolve().parent.parent / "templates"


@functools.lru_cache(maxsize=1)
def environment() -> jinja2.Environment:
    """The one Jinja2 environment every repro script is rendered with."""
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(template_dir())),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        autoescape=False,  # the output is Python source, not HTML
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["py"] = py_literal
    env.filters["comment"] = comment_text
    return env


def has_template(cause: str) -> bool:
    """True when both the script template and the spec of `cause` exist."""
    if not isinstance(cause, str) or not _CAUSE_NAME.fullmatch(cause):
        return False
    folder = template_dir()
    return (folder / f"{cause}.py.j2").is_file() and (folder / f"{cause}.yaml").is_file()


# --- the spec ------------------------------------------------------------------------------


@dataclass(frozen=True)
class ParamSpec:
    name: str
    type: str
    default: Any
    min: float | None = None
    max: float | None = None
    max_len: int | None = None
    choices: tuple[str, ...] = ()

    def resolve(self, raw: object) -> tuple[Any, str, Any]:
        """(value, origin, value in the log when clamped) for one raw value from the log."""
        if self.type == "choice":
            return (raw, "log", None) if raw in self.choices and type(raw) is str \
                else (self.default, "default", None)
        if self.type == "str":
            if type(raw) is not str:
                return self.default, "default", None
            cut = raw[: self.max_len] if self.max_len is not None else raw
            return (cut, "log", None) if cut == raw else (cut, "clamped", None)
        if not _is_number(raw, self.type):
            return self.default, "default", None
        value = float(raw) if self.type == "float" else raw
        bounded = self.clamp(value)
        return (bounded, "log", None) if bounded == value else (bounded, "clamped", raw)

    def clamp(self, value: Any) -> Any:
        if self.min is not None and value < self.min:
            value = self.min
        if self.max is not None and value > self.max:
            value = self.max
        return value


@dataclass(frozen=True)
class TemplateSpec:
    cause: str
    params: tuple[ParamSpec, ...]
    variants: tuple[str, ...]
    gpu_only: bool
    relations: tuple[tuple[str, str, str], ...]

    def param(self, name: str) -> ParamSpec:
        return next(p for p in self.params if p.name == name)


def _check(ok: object, message: str) -> None:
    if not ok:
        raise RenderError(message)


def _is_number(value: object, kind: str) -> bool:
    if kind == "int":
        return type(value) is int
    try:
        return type(value) in (int, float) and math.isfinite(value)
    except OverflowError:  # an int beyond the float range
        return False


def _number(value: object, kind: str, where: str) -> int | float:
    """A spec number; PyYAML reads `1e-8` as a str, so numeric strings count for floats."""
    if kind == "float" and type(value) is str and _FLOAT_TEXT.fullmatch(value.strip()):
        value = float(value)
    _check(_is_number(value, kind), f"{where} should be {kind}")
    return float(value) if kind == "float" else value


def _parse_param(name: object, body: object, where: str) -> ParamSpec:
    where = f"{where}: params.{name}"
    _check(isinstance(name, str) and _IDENTIFIER.fullmatch(name),
           f"{where}: name should be a Python identifier")
    _check(isinstance(body, dict) and body.get("type") in _PARAM_KEYS,
           f"{where}: should be a mapping with type one of {sorted(_PARAM_KEYS)}")
    kind = body["type"]
    unknown = sorted(map(str, set(body) - _PARAM_KEYS[kind]))
    _check(not unknown, f"{where}: unknown key {unknown[0]!r}" if unknown else "")
    _check("default" in body, f"{where}: missing key 'default'")
    if kind == "choice":
        choices = body.get("choices")
        _check(isinstance(choices, list) and choices and all(type(c) is str for c in choices),
               f"{where}: option 'choices' should be a non-empty list of str")
        spec = ParamSpec(str(name), kind, body["default"], choices=tuple(choices))
    elif kind == "str":
        max_len = body.get("max_len")
        _check(max_len is None or (type(max_len) is int and max_len > 0),
               f"{where}: option 'max_len' should be a positive int")
        spec = ParamSpec(str(name), kind, body["default"], max_len=max_len)
    else:
        bounds = {k: _number(body[k], kind, f"{where}: option {k!r}")
                  for k in ("default", "min", "max") if k in body}
        spec = ParamSpec(str(name), kind, bounds["default"], bounds.get("min"), bounds.get("max"))
        _check(spec.min is None or spec.max is None or spec.min <= spec.max,
               f"{where}: option 'min' is above 'max'")
    _check(spec.resolve(spec.default)[1] == "log",
           f"{where}: option 'default' is not a valid {kind} value in bounds")
    return spec


def _parse_relation(rel: object, params: dict[str, ParamSpec], where: str) -> tuple:
    _check(isinstance(rel, list) and len(rel) == 3 and rel[1] in _OPS,
           f"{where} should be [left, op, right] with op one of {list(_OPS)}")
    left, op, right = rel
    for side in (left, right):
        _check(side in params and params[side].type in ("int", "float"),
               f"{where}: {side!r} is not an int or float param")
    _check(params[left].type == params[right].type, f"{where}: both sides need one type")
    _check(_OPS[op](params[left].default, params[right].default),
           f"{where}: the defaults do not satisfy the relation")
    return left, op, right


def _parse_spec(cause: str, data: object, where: str) -> TemplateSpec:
    _check(isinstance(data, dict), f"{where}: the spec should be a mapping")
    unknown = sorted(map(str, set(data) - _SPEC_KEYS))
    _check(not unknown, f"{where}: unknown key {unknown[0]!r}" if unknown else "")
    raw_params = data.get("params") or {}
    _check(isinstance(raw_params, dict), f"{where}: params should be a mapping")
    params = {str(n): _parse_param(n, body, where) for n, body in raw_params.items()}
    variants = data.get("variants", ["default"])
    _check(isinstance(variants, list) and variants
           and all(isinstance(x, str) and _IDENTIFIER.fullmatch(x) for x in variants),
           f"{where}: variants should be a non-empty list of identifiers")
    gpu_only = data.get("gpu_only", False)
    _check(type(gpu_only) is bool, f"{where}: gpu_only should be bool")
    relations = data.get("relations", [])
    _check(isinstance(relations, list), f"{where}: relations should be a list")
    return TemplateSpec(cause, tuple(params.values()), tuple(variants), gpu_only, tuple(
        _parse_relation(rel, params, f"{where}: relations[{i}]") for i, rel in enumerate(relations)))


@functools.lru_cache(maxsize=64)
def load_spec(cause: str) -> TemplateSpec:
    """Load and validate templates/<cause>.yaml; RenderError names the file and key."""
    if not has_template(cause):
        raise RenderError(f"no repro template for cause {cause!r}")
    where = f"templates/{cause}.yaml"
    try:
        data = yaml.safe_load((template_dir() / f"{cause}.yaml").read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as err:
        raise RenderError(f"{where}: cannot load: {one_line(err)}") from None
    return _parse_spec(cause, data, where)


# --- values and context --------------------------------------------------------------------


def resolve_values(spec: TemplateSpec, params: dict[str, Any]) -> tuple[dict, dict, dict]:
    """(values, origins, clamped_from) for a spec and the params found in the log."""
    values, origin, clamped_from = {}, {}, {}
    for p in spec.params:
        raw = params.get(p.name) if p.name in params else p.default
        value, how, logged = p.resolve(raw)
        values[p.name], origin[p.name] = value, how if p.name in params else "default"
        if how == "clamped" and logged is not None:
            clamped_from[p.name] = logged
    for relation in spec.relations:
        _keep_relation(spec, relation, values, origin, clamped_from)
    return values, origin, clamped_from


def _keep_relation(spec: TemplateSpec, relation: tuple[str, str, str],
                   values: dict, origin: dict, clamped_from: dict) -> None:
    """Raise the larger side, or else lower the smaller one, until the relation holds."""
    left, op, right = relation
    if _OPS[op](values[left], values[right]):
        return
    big, small = (left, right) if op.startswith(">") else (right, left)
    gap = 0 if op.endswith("=") else 1  # both sides have one type (checked at load)
    if spec.param(big).type == "float" and gap:
        raised, lowered = (math.nextafter(values[small], math.inf),
                           math.nextafter(values[big], -math.inf))
    else:
        raised, lowered = values[small] + gap, values[big] - gap
    if spec.param(big).clamp(raised) == raised:
        _adjust(big, raised, values, origin, clamped_from)
    elif spec.param(small).clamp(lowered) == lowered:
        _adjust(small, lowered, values, origin, clamped_from)
    else:
        raise RenderError(f"templates/{spec.cause}.yaml: cannot keep {left} {op} {right}")


def _adjust(name: str, value: Any, values: dict, origin: dict, clamped_from: dict) -> None:
    if origin[name] != "default":  # a default moved by a relation is still not from the log
        clamped_from.setdefault(name, values[name])
        origin[name] = "clamped"
    values[name] = value


def _summary(values: dict, origin: dict, clamped_from: dict) -> str:
    parts = []
    for name, value in values.items():
        how = f"clamped from {_short(clamped_from[name])}" if name in clamped_from \
            else origin[name]
        parts.append(f"{name}={value} ({how})")
    return one_line(", ".join(parts), 300)


def _short(value: object) -> str:
    try:
        return one_line(value, 40)
    except ValueError:  # str() of an int with thousands of digits
        return "a huge number"


def _evidence_line(item: Evidence) -> str:
    rank = f" [rank {item.rank}]" if type(item.rank) is int else ""
    return one_line(f"line {item.line}{rank}: {item.text}", 160)


def build_context(diagnosis: Diagnosis, spec: TemplateSpec) -> dict[str, Any]:
    """Everything a template sees; text from the log is cleaned to one line here."""
    values, origin, clamped_from = resolve_values(spec, dict(diagnosis.params or {}))
    variant = diagnosis.variant if diagnosis.variant in spec.variants else spec.variants[0]
    source = one_line(os.path.basename(str(diagnosis.source or "").replace("\\", "/")), 80)
    return {
        "cause": spec.cause,
        "category": one_line(diagnosis.category or CATEGORY_OF.get(spec.cause, ""), 40),
        "title": one_line(diagnosis.title or spec.cause.replace("_", " "), 100),
        "rule_id": one_line(diagnosis.rule_id or "-", 40),
        "variant": variant,
        "gpu_only": spec.gpu_only,
        "v": values,
        "origin": origin,
        "clamped_from": clamped_from,
        "values_summary": _summary(values, origin, clamped_from),
        "source": source or "<log>",
        "evidence": [_evidence_line(e) for e in diagnosis.evidence[:_MAX_EVIDENCE]],
        "fix": one_line(diagnosis.fix or "-", 160),
    }


# --- render, check, write ------------------------------------------------------------------


def render_repro(diagnosis: Diagnosis) -> str:
    """The repro script for `diagnosis`: checked Python source, the same for the same input."""
    if not diagnosis.diagnosed:
        raise RenderError("no known cause: there is nothing to reproduce")
    if not has_template(diagnosis.cause):
        raise RenderError(f"no repro template for cause {diagnosis.cause!r}")
    spec = load_spec(diagnosis.cause)
    try:
        template = environment().get_template(f"{spec.cause}.py.j2")
        text = template.render(build_context(diagnosis, spec))
    except jinja2.TemplateError as err:
        raise RenderError(f"templates/{spec.cause}.py.j2: {one_line(err)}") from None
    check_script(text, spec.cause)
    return text


def check_script(text: str, cause: str = "script") -> None:
    """Raise RenderError unless `text` parses, imports only stdlib + torch, fits 40 lines."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError) as err:
        raise RenderError(f"{cause}: rendered script is not valid Python: {one_line(err)}") \
            from None
    for name in imported_modules(tree):
        if name != "torch" and name not in sys.stdlib_module_names:
            raise RenderError(f"{cause}: rendered script imports {name!r} (stdlib + torch only)")
    lines = sum(1 for line in text.splitlines() if line.strip())
    if lines > MAX_SCRIPT_LINES:
        raise RenderError(f"{cause}: rendered script has {lines} non-blank lines "
                          f"(at most {MAX_SCRIPT_LINES})")


def imported_modules(tree: ast.AST) -> set[str]:
    """Top-level names of every module imported anywhere in `tree`."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            names.add("." if node.level else (node.module or "").split(".")[0])
    return names


def write_script(text: str, path: str | os.PathLike[str], *, force: bool = False) -> Path:
    """Write atomically (temp file + rename), mode 0o755; never clobber unless `force`."""
    target = Path(path)
    if target.is_dir():
        raise OutputError(f"{target}: is a directory")
    if target.exists() and not force:
        raise OutputError(f"{target}: already exists (use --force to overwrite)")
    try:
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    except OSError as err:
        raise OutputError(f"{target}: cannot write: {err.strerror or err}") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(text)
        os.chmod(tmp, 0o755)
        _move_into_place(tmp, target, force)
    except OSError as err:
        raise OutputError(f"{target}: cannot write: {err.strerror or err}") from None
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return target


def _move_into_place(tmp: str, target: Path, force: bool) -> None:
    if force:
        os.replace(tmp, target)
        return
    try:  # a hard link fails if the target appeared meanwhile: no silent clobbering
        os.link(tmp, target)
    except FileExistsError:
        raise OutputError(f"{target}: already exists (use --force to overwrite)") from None
    except OSError:  # filesystems without hard links
        os.replace(tmp, target)
