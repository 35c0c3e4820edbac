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
  (first is the default; omitted -> ``["default"]``), ``gpu_only: bool``, ``cpu_variants:
  [..]`` (variants of a gpu_only template that run without CUDA: a check of this machine),
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
import unicodedata
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import jinja2
import yaml

from minrepro.diagnose.rules.files import TEMPLATES as PACK_TEMPLATES
from minrepro.errors import RenderError, shown_path
from minrepro.files import write_atomic
from minrepro.model import Diagnosis, Evidence
from minrepro.output.redact import redact
from minrepro.repro.spec import Resolved, TemplateSpec, parse_spec, resolve_values
from minrepro.taxonomy import CATEGORY_OF

MAX_SCRIPT_LINES = 40
_MAX_EVIDENCE = 20  # the header shows one or two; the rest only costs time
_CAUSE_NAME = re.compile(r"[a-z][a-z0-9_]{0,63}")
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")
# Characters that end a line for Python or for str.splitlines, or hide text (bidi, NUL ...).
_UNSAFE_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})
# A "coding[:=]" comment in the first two lines changes how Python decodes the file.
_CODING_COOKIE = re.compile(r"coding([:=])", re.IGNORECASE)


# --- filters -------------------------------------------------------------------------------


def py_literal(value: object) -> str:
    """The `py` filter: a Python literal for a value of a checked type, nothing else."""
    if isinstance(value, jinja2.Undefined):
        str(value)  # StrictUndefined raises the UndefinedError that names the missing value
    kind = type(value)  # exact types: a subclass could override __repr__
    if kind is float and not math.isfinite(value):  # type: ignore[arg-type]
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
    packaged = Path(__file__).resolve().parents[1] / "templates"
    return packaged if packaged.is_dir() else Path(__file__).resolve().parents[2] / "templates"


def pack_template_dirs(packs: Iterable[str | os.PathLike[str]]) -> tuple[Path, ...]:
    """The `templates/` folders of a user's rule packs: in a pack directory, or beside a pack
    file. They hold `<cause>.py.j2` + `<cause>.yaml` for the pack's own causes."""
    found = []
    for pack in packs:
        path = Path(pack)
        folder = (path if path.is_dir() else path.parent) / PACK_TEMPLATES
        if folder.is_dir() and folder not in found:
            found.append(folder)
    return tuple(found)


def _folder_of(cause: str, packs: tuple[Path, ...]) -> Path | None:
    """Where `cause`'s template and spec are: the built-in folder first (a pack adds causes,
    it never replaces a verified template), then the packs' in the order given."""
    if not isinstance(cause, str) or not _CAUSE_NAME.fullmatch(cause):
        return None
    for folder in (template_dir(), *packs):
        if (folder / f"{cause}.py.j2").is_file() and (folder / f"{cause}.yaml").is_file():
            return folder
    return None


def _where(folder: Path, name: str) -> str:
    """How an error names a template file: templates/x for a built-in one, else its path."""
    return f"templates/{name}" if folder == template_dir() else shown_path(folder / name)


@functools.lru_cache(maxsize=8)
def environment(folder: Path | None = None) -> jinja2.Environment:
    """The Jinja2 environment repro scripts are rendered with; a pack's folder first, then the
    built-in one (a pack's template can include `_header.py.j2` and `_cli.py.j2`)."""
    folders = [str(template_dir())] if folder in (None, template_dir()) else \
        [str(folder), str(template_dir())]
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(folders),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        autoescape=False,  # the output is Python source, not HTML
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["py"] = py_literal
    env.filters["comment"] = comment_text
    return env


def has_template(cause: str, packs: tuple[Path, ...] = ()) -> bool:
    """True when both the script template and the spec of `cause` exist (built in, or in
    one of the packs' template folders)."""
    return _folder_of(cause, packs) is not None


@functools.lru_cache(maxsize=64)
def load_spec(cause: str, packs: tuple[Path, ...] = ()) -> TemplateSpec:
    """Load and validate <templates>/<cause>.yaml; RenderError names the file and key."""
    folder = _folder_of(cause, packs)
    if folder is None:
        raise RenderError(f"no repro template for cause {cause!r}")
    where = _where(folder, f"{cause}.yaml")
    try:
        data = yaml.safe_load((folder / f"{cause}.yaml").read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as err:
        raise RenderError(f"{where}: cannot load: {one_line(err)}") from None
    return parse_spec(cause, data, where)


# --- context --------------------------------------------------------------------------


def _summary(resolved: dict[str, Resolved]) -> str:
    parts = []
    for name, item in resolved.items():
        how = f"clamped from {_short(item.logged)}" if item.logged is not None \
            else item.origin.value
        parts.append(f"{name}={item.value} ({how})")
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
    resolved = resolve_values(spec, dict(diagnosis.params or {}))
    variant = diagnosis.variant if diagnosis.variant in spec.variants else spec.variants[0]
    source = one_line(os.path.basename(str(diagnosis.source or "").replace("\\", "/")), 80)
    return {
        "cause": spec.cause,
        "category": one_line(diagnosis.category or CATEGORY_OF.get(spec.cause, ""), 40),
        "title": one_line(diagnosis.title or spec.cause.replace("_", " "), 100),
        "rule_id": one_line(diagnosis.rule_id or "-", 40),
        "variant": variant,
        "gpu_only": spec.needs_gpu(variant),
        "v": {name: item.value for name, item in resolved.items()},
        "origin": {name: item.origin.value for name, item in resolved.items()},
        "clamped_from": {name: item.logged for name, item in resolved.items()
                         if item.logged is not None},
        "values_summary": _summary(resolved),
        "expect": spec.expect,
        "source": source or "<log>",
        "evidence": [_evidence_line(e) for e in diagnosis.evidence[:_MAX_EVIDENCE]],
        "fix": one_line(diagnosis.fix or "-", 160),
    }


# --- render, check, write ------------------------------------------------------------------


def render_repro(diagnosis: Diagnosis, packs: tuple[Path, ...] = ()) -> str:
    """The repro script for `diagnosis`: checked Python source, the same for the same input.
    `packs`: template folders of the user's rule packs (pack_template_dirs), for their causes."""
    cause = diagnosis.cause
    if cause is None:
        raise RenderError("no known cause: there is nothing to reproduce")
    folder = _folder_of(cause, packs)
    if folder is None:
        raise RenderError(f"no repro template for cause {cause!r}")
    spec = load_spec(cause, packs)
    try:
        template = environment(folder).get_template(f"{spec.cause}.py.j2")
        text = template.render(build_context(diagnosis, spec))
    except jinja2.TemplateError as err:
        raise RenderError(f"{_where(folder, spec.cause + '.py.j2')}: {one_line(err)}") from None
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


def write_script(text: str, path: str | os.PathLike[str], *, force: bool = False,
                 protect: tuple[str | os.PathLike[str], ...] = ()) -> Path:
    """Write a script atomically, executable (0o777 less the umask); never clobber unless
    `force`."""
    return write_atomic(text, path, force=force, mode=0o777, protect=protect)
