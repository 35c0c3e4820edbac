"""Rule files on disk: YAML read safely (size, nesting and duplicate keys checked), and the
frozen copy of the built-in files that start-up reads instead of running the YAML parser.

The frozen copy (frozen.json here, written by `python -m minrepro.tools.freeze`) holds the
parsed files and a fingerprint of their bytes; where the fingerprint no longer matches the
files, it is ignored and the YAML is read.
"""

from __future__ import annotations

import json
import os
import stat
import zlib
from collections.abc import Iterable
from functools import cache
from pathlib import Path
from typing import Any

from minrepro.errors import RulePackError, shown_path
from minrepro.patterns import lazy

BUILTIN_DIR = Path(__file__).parent  # the category folders of YAML beside this code
FROZEN = BUILTIN_DIR / "frozen.json"
MAX_RULE_FILE_BYTES = 1 << 20
MAX_NESTING = 50
_QUOTED = lazy(r"'[^']*'|\"[^\"]*\"")  # a quoted token of the file, in a YAML problem
_DUPLICATE = lazy(r"duplicate key '[a-z_]{1,20}'")


def read_rule_file(path: Path) -> Any:
    """The file's YAML, parsed safely, refusing what could hurt the parser or hide a mistake."""
    import yaml  # here, not at the top: start-up reads the frozen built-in rules instead

    name = shown_path(path.name)
    try:
        text = read_bounded(path).decode("utf-8")
    except UnicodeDecodeError:
        raise RulePackError(f"{name}: cannot read rule file (not UTF-8 text)") from None
    if _nesting(text) > MAX_NESTING:  # libyaml recurses per level and can overflow the stack
        raise RulePackError(f"{name}: nested deeper than {MAX_NESTING} levels")
    try:
        return yaml.load(text, Loader=_unique_key_loader())  # noqa: S506 - a safe loader
    except yaml.YAMLError as err:
        raise RulePackError(f"{name}: invalid YAML ({_yaml_problem(err)})") from None
    except RecursionError:
        raise RulePackError(f"{name}: nested too deeply") from None


def read_bounded(path: Path) -> bytes:
    """The bytes of a regular file of at most MAX_RULE_FILE_BYTES. Opened without blocking
    and checked with fstat before any read: a FIFO would hang, /dev/urandom (or a link to it)
    never ends; what `stat` said of the path may have changed by the time it is opened."""
    name = shown_path(path.name)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0))
    except OSError as err:
        raise RulePackError(f"{name}: cannot read rule file ({err.strerror or err})") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise RulePackError(f"{name}: not a regular file (a FIFO, device or socket)")
        data = os.read(fd, MAX_RULE_FILE_BYTES + 1)
        while len(data) <= MAX_RULE_FILE_BYTES and (more := os.read(fd, 1 << 16)):
            data += more
    except OSError as err:
        raise RulePackError(f"{name}: cannot read rule file ({err.strerror or err})") from None
    finally:
        os.close(fd)
    if len(data) > MAX_RULE_FILE_BYTES:
        raise RulePackError(f"{name}: rule file larger than {MAX_RULE_FILE_BYTES} bytes")
    return data


def _yaml_problem(err: Exception) -> str:
    """What is wrong and where, never the text around it: a pack may hold a link to a file
    that is not a rule at all (a key, a password file), and errors end up in CI logs. Only
    a duplicate key is named (it is a rule key the validator knows, or it is cut)."""
    problem = str(getattr(err, "problem", None) or getattr(err, "context", None) or "unparsable")
    duplicate = _DUPLICATE.fullmatch(problem)
    problem = problem if duplicate else _QUOTED.sub("'...'", problem)
    mark = getattr(err, "problem_mark", None) or getattr(err, "context_mark", None)
    where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
    return shown_path(problem[:120]) + where


def _nesting(text: str) -> int:
    """The deepest bracket nesting in flow style (block style is bounded by indentation)."""
    depth = deepest = 0
    for char in text:
        if char in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif char in "]}":
            depth = max(depth - 1, 0)
    return deepest


@cache
def _unique_key_loader() -> type:
    """The safe loader (libyaml's where available: as safe as yaml.safe_load, 10x faster),
    refusing a key written twice in one mapping (YAML would keep the last)."""
    import yaml

    class UniqueKeyLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
        def construct_mapping(self, node, deep=False):  # noqa: ANN001, ANN201
            keys = set()
            for key_node, _ in node.value:
                key = self.construct_object(key_node, deep=deep)
                if isinstance(key, str) and key in keys:
                    raise yaml.constructor.ConstructorError(
                        None, None, f"duplicate key {key!r}", key_node.start_mark)
                keys.add(key if isinstance(key, str) else id(key_node))
            return super().construct_mapping(node, deep=deep)

    return UniqueKeyLoader


TEMPLATES = "templates"  # a pack's repro templates (and their specs) live here, not rules


def rule_files(directory: Path) -> list[Path]:
    """Every `*.yaml` and `*.yml` file below `directory`, in a stable order (a `templates/`
    folder's specs are not rules)."""
    found = []
    for folder, subfolders, names in os.walk(directory):  # one walk (two rglobs cost 2x)
        subfolders[:] = [name for name in subfolders if name != TEMPLATES]
        found += [Path(folder, name) for name in names if name.endswith((".yaml", ".yml"))]
    return sorted(found)


def _fingerprint(paths: Iterable[Path]) -> str:
    """Names, sizes and CRC-32s of the files: enough to notice an edit (zlib loads faster than
    hashlib, and nothing here needs a cryptographic hash: the files sit beside the code)."""
    return ";".join(f"{path.relative_to(BUILTIN_DIR).as_posix()}:{len(data)}:{zlib.crc32(data):08x}"
                    for path in paths for data in (path.read_bytes(),))


def frozen_builtin() -> list[tuple[Path, Any]] | None:
    """(path, parsed YAML) of each built-in file from FROZEN; None where it is missing,
    unreadable or older than the files."""
    try:
        frozen = json.loads(FROZEN.read_text(encoding="utf-8"))
        if frozen.get("fingerprint") != _fingerprint(rule_files(BUILTIN_DIR)):
            return None
        return [(BUILTIN_DIR / name, data) for name, data in frozen["rules"]]
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return None


def write_frozen(parsed: list[tuple[Path, Any]]) -> str:
    """Write FROZEN from the built-in files' parsed YAML; says what it wrote."""
    frozen = {"fingerprint": _fingerprint(path for path, _ in parsed),
              "rules": [[path.relative_to(BUILTIN_DIR).as_posix(), data] for path, data in parsed]}
    FROZEN.write_text(json.dumps(frozen, ensure_ascii=False, indent=0) + "\n", encoding="utf-8")
    return f"{shown_path(FROZEN)}: {len(parsed)} rule files"

