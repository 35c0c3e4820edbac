"""Checking loaded data files (rule packs, template specs) in one style, with precise errors.

A `Checker` walks one parsed YAML document. Each method reads one key of a mapping, checks it
and returns the value, or raises the checker's error class with one line that names the file,
the path to the key and the problem (yamllint's style):

    cuda_oom.yaml: MR-MEM-002: signals[1].weight: should be a number in (0, 1]
    templates/position_overflow.yaml: params.seq_len.min: should be int

`path` arguments are the key's place in the document (`signals[1].`, `params.seq_len.`): the
prefix that goes before the key's own name.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping
from enum import Enum
from typing import Any, NoReturn, TypeVar

from minrepro.errors import MinreproError
from minrepro.patterns import lazy

E = TypeVar("E", bound=Enum)

_FLOAT_TEXT = lazy(r"[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?")
IDENTIFIER = lazy(r"[A-Za-z_][A-Za-z0-9_]{0,63}")


class Checker:
    """Checks the keys of one document; `where` names it ("file.yaml: MR-MEM-002")."""

    def __init__(self, where: str, error: type[MinreproError]) -> None:
        self.where = where
        self.error = error

    def fail(self, key: str, problem: str) -> NoReturn:
        raise self.error(": ".join(part for part in (self.where, key, problem) if part))

    def mapping(self, value: Any, key: str, allowed: Collection[str] | None = None
                ) -> dict[Any, Any]:
        """`value` as a mapping whose keys are all in `allowed` (any keys when None)."""
        if not isinstance(value, dict):
            self.fail(key, "should be a mapping")
        if allowed is not None:
            for name in value:
                if name not in allowed:
                    self.fail(f"{key}.{name}" if key else str(name),
                              f"unknown key (allowed: {', '.join(sorted(allowed))})")
        return value

    def require(self, mapping: Mapping[str, Any], keys: Collection[str], path: str = "") -> None:
        for key in keys:
            if key not in mapping:
                self.fail(path + key, "is required")

    def text(self, mapping: Mapping[str, Any], key: str, path: str = "",
             required: bool = True) -> str:
        """A non-empty string, stripped; "" for an absent optional key."""
        value = mapping.get(key)
        if value is None and not required:
            return ""
        if not isinstance(value, str) or not value.strip():
            self.fail(path + key, "should be a non-empty string")
        return value.strip()

    def strings(self, mapping: Mapping[str, Any], key: str, path: str = "") -> tuple[str, ...]:
        """A list of strings (absent: empty)."""
        value = mapping.get(key) or []
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            self.fail(path + key, "should be a list of strings")
        return tuple(value)

    def words(self, mapping: Mapping[str, Any], key: str, path: str = "") -> tuple[str, ...]:
        """One non-empty string or a list of them (absent: empty)."""
        value = mapping.get(key, [])
        value = [value] if isinstance(value, str) else value
        if not isinstance(value, list) or not all(isinstance(w, str) and w for w in value):
            self.fail(path + key, "should be a string or a list of non-empty strings")
        return tuple(value)

    def flag(self, mapping: Mapping[str, Any], key: str, path: str = "",
             default: bool = False) -> bool:
        value = mapping.get(key, default)
        if type(value) is not bool:
            self.fail(path + key, "should be true or false")
        return value

    def choice(self, mapping: Mapping[str, Any], key: str, kind: type[E], default: E,
               path: str = "") -> E:
        """One of an enum's values, spelled as its value."""
        value = mapping.get(key, default.value)
        try:
            return kind(value)
        except ValueError:
            self.fail(path + key, f"should be one of {', '.join(m.value for m in kind)}")

    def number(self, value: Any, kind: str, key: str) -> int | float:
        """An int (not a bool) or a finite float; for floats a numeric string too, as PyYAML
        reads `1e-8` as a str."""
        if kind == "float" and type(value) is str and _FLOAT_TEXT.fullmatch(value.strip()):
            value = float(value)
        if not is_number(value, kind):
            self.fail(key, f"should be {kind}")
        return float(value) if kind == "float" else value

    def identifier(self, value: Any, key: str) -> str:
        if not isinstance(value, str) or not IDENTIFIER.fullmatch(value):
            self.fail(key, "should be a Python identifier")
        return value


def is_number(value: object, kind: str) -> bool:
    """An int (not a bool) for "int"; a finite int or float for "float"."""
    if kind == "int":
        return type(value) is int
    try:
        return type(value) in (int, float) and math.isfinite(value)  # type: ignore[arg-type]
    except OverflowError:  # an int beyond the float range
        return False
