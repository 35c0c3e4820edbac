"""Template specs (templates/<cause>.yaml): parsing with precise errors, and resolving a
diagnosis's params into checked values (types, bounds, relations kept after clamping).

Spec keys: ``params`` ({name: {type: int|float|str|choice, default, min, max, max_len,
choices}}), ``variants``, ``gpu_only`` (and ``cpu_variants``, its variants that run without
CUDA), ``relations`` ([[left, op, right]]), ``example`` (params
as a real log gives them, for the tests and the GPU check) and ``expect``: the text the failure
shows (any one of a list), which the script checks in the error it caught and `verify` checks
in the script's output, as PyTorch's after_aot repro checks its `check_str`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from minrepro.errors import RenderError
from minrepro.model import Name
from minrepro.schema import Checker, is_number

_OPS: dict[str, Callable[[Any, Any], bool]] = {
    ">": lambda a, b: a > b, ">=": lambda a, b: a >= b,
    "<": lambda a, b: a < b, "<=": lambda a, b: a <= b}
_PARAM_KEYS = {"int": {"type", "default", "min", "max"}, "float": {"type", "default", "min", "max"},
               "str": {"type", "default", "max_len"}, "choice": {"type", "default", "choices"}}
_SPEC_KEYS = {"params", "variants", "gpu_only", "cpu_variants", "relations", "example",
              "expect"}
_MAX_EXPECT_CHARS = 200


class Origin(Name):
    """Where a value in a repro script came from."""

    LOG = "log"
    DEFAULT = "default"
    CLAMPED = "clamped"  # from the log, moved into what runs on a small machine


@dataclass(frozen=True, slots=True)
class Resolved:
    """One value of a script: what it is, where it came from, and the log's value if clamped."""

    value: Any
    origin: Origin
    logged: Any = None


@dataclass(frozen=True)
class ParamSpec:
    name: str
    type: str
    default: Any
    min: float | None = None
    max: float | None = None
    max_len: int | None = None
    choices: tuple[str, ...] = ()

    def resolve(self, raw: object) -> Resolved:
        """The value for one raw value from the log (the default where it does not fit)."""
        if self.type == "choice":
            ok = type(raw) is str and raw in self.choices
            return Resolved(raw, Origin.LOG) if ok else Resolved(self.default, Origin.DEFAULT)
        if self.type == "str":
            if type(raw) is not str:
                return Resolved(self.default, Origin.DEFAULT)
            cut = raw[: self.max_len] if self.max_len is not None else raw
            return Resolved(cut, Origin.LOG if cut == raw else Origin.CLAMPED)
        if not is_number(raw, self.type):
            return Resolved(self.default, Origin.DEFAULT)
        value = float(raw) if self.type == "float" else raw  # type: ignore[arg-type]
        bounded = self.clamp(value)
        return Resolved(bounded, Origin.LOG) if bounded == value \
            else Resolved(bounded, Origin.CLAMPED, raw)

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
    #: params as a real log gives them (values of the dev corpus, some out of bounds so that
    #: clamping is exercised): the diagnosis the tests and the GPU check render
    example: tuple[tuple[str, Any], ...] = ()
    #: the failure's text, any one of which must show (in the error caught, in the output)
    expect: tuple[str, ...] = ()
    #: variants of a gpu_only template that run (and check this machine) without CUDA
    cpu_variants: tuple[str, ...] = ()

    def needs_gpu(self, variant: str) -> bool:
        return self.gpu_only and variant not in self.cpu_variants

    def param(self, name: str) -> ParamSpec:
        return next(p for p in self.params if p.name == name)

    def example_params(self) -> dict[str, Any]:
        return dict(self.example)


# --- parsing ---------------------------------------------------------------------------------


class _SpecChecker(Checker):
    def __init__(self, where: str) -> None:
        super().__init__(where, RenderError)

    def param(self, name: object, body: object) -> ParamSpec:
        key = f"params.{name}"
        self.identifier(name, key)
        if not (isinstance(body, dict) and body.get("type") in _PARAM_KEYS):
            self.fail(key, f"should be a mapping with type one of {sorted(_PARAM_KEYS)}")
        kind = body["type"]
        self.mapping(body, key, _PARAM_KEYS[kind])
        self.require(body, ("default",), key + ".")
        if kind == "choice":
            choices = body.get("choices")
            if not (isinstance(choices, list) and choices
                    and all(type(c) is str for c in choices)):
                self.fail(key + ".choices", "should be a non-empty list of str")
            spec = ParamSpec(str(name), kind, body["default"], choices=tuple(choices))
        elif kind == "str":
            max_len = body.get("max_len")
            if not (max_len is None or (type(max_len) is int and max_len > 0)):
                self.fail(key + ".max_len", "should be a positive int")
            spec = ParamSpec(str(name), kind, body["default"], max_len=max_len)
        else:
            bounds = {k: self.number(body[k], kind, f"{key}.{k}")
                      for k in ("default", "min", "max") if k in body}
            spec = ParamSpec(str(name), kind, bounds["default"], bounds.get("min"),
                             bounds.get("max"))
            if spec.min is not None and spec.max is not None and spec.min > spec.max:
                self.fail(key + ".min", "is above max")
        if spec.resolve(spec.default).origin is not Origin.LOG:
            self.fail(key + ".default", f"is not a valid {kind} value in bounds")
        return spec

    def relation(self, rel: object, params: dict[str, ParamSpec], key: str
                 ) -> tuple[str, str, str]:
        if not (isinstance(rel, list) and len(rel) == 3 and rel[1] in _OPS):
            self.fail(key, f"should be [left, op, right] with op one of {list(_OPS)}")
        left, op, right = rel
        for side in (left, right):
            if not (side in params and params[side].type in ("int", "float")):
                self.fail(key, f"{side!r} is not an int or float param")
        if params[left].type != params[right].type:
            self.fail(key, "both sides need one type")
        if not _OPS[op](params[left].default, params[right].default):
            self.fail(key, "the defaults do not satisfy the relation")
        return left, op, right

    def expect(self, data: dict) -> tuple[str, ...]:
        texts = self.words(data, "expect")
        if any(len(t) > _MAX_EXPECT_CHARS or not t.isprintable() for t in texts):
            self.fail("expect", "should be the failure's text: a string or a list of short,"
                      " printable strings")
        return texts


def parse_spec(cause: str, data: object, where: str) -> TemplateSpec:
    check = _SpecChecker(where)
    if not isinstance(data, dict):
        check.fail("", "the spec should be a mapping")
    check.mapping(data, "", _SPEC_KEYS)
    raw_params = check.mapping(data.get("params") or {}, "params")
    params = {str(n): check.param(n, body) for n, body in raw_params.items()}
    variants = data.get("variants", ["default"])
    if not (isinstance(variants, list) and variants
            and all(isinstance(x, str) for x in variants)):
        check.fail("variants", "should be a non-empty list of identifiers")
    for index, variant in enumerate(variants):
        check.identifier(variant, f"variants[{index}]")
    gpu_only = check.flag(data, "gpu_only")
    cpu_variants = check.words(data, "cpu_variants")
    if not set(cpu_variants) <= set(variants):
        check.fail("cpu_variants", "should name declared variants")
    relations = data.get("relations", [])
    if not isinstance(relations, list):
        check.fail("relations", "should be a list")
    relation_specs = tuple(check.relation(rel, params, f"relations[{i}]")
                           for i, rel in enumerate(relations))
    example = data.get("example") or {}
    if not (isinstance(example, dict) and all(name in params for name in example)):
        check.fail("example", "should map declared params to values")
    return TemplateSpec(cause, tuple(params.values()), tuple(variants), gpu_only, relation_specs,
                        tuple(example.items()), check.expect(data), cpu_variants)


# --- values ------------------------------------------------------------------------------


def resolve_values(spec: TemplateSpec, params: dict[str, Any]) -> dict[str, Resolved]:
    """Each param of the spec -> its value, from the log's params where they fit."""
    resolved = {}
    for p in spec.params:
        found = p.resolve(params[p.name] if p.name in params else p.default)
        resolved[p.name] = found if p.name in params else Resolved(found.value, Origin.DEFAULT)
    for relation in spec.relations:
        _keep_relation(spec, relation, resolved)
    return resolved


def _keep_relation(spec: TemplateSpec, relation: tuple[str, str, str],
                   resolved: dict[str, Resolved]) -> None:
    """Raise the larger side, or else lower the smaller one, until the relation holds."""
    left, op, right = relation
    if _OPS[op](resolved[left].value, resolved[right].value):
        return
    big, small = (left, right) if op.startswith(">") else (right, left)
    gap = 0 if op.endswith("=") else 1  # both sides have one type (checked at load)
    low, high = resolved[small].value, resolved[big].value
    if spec.param(big).type == "float" and gap:
        raised, lowered = math.nextafter(low, math.inf), math.nextafter(high, -math.inf)
    else:
        raised, lowered = low + gap, high - gap
    if spec.param(big).clamp(raised) == raised:
        resolved[big] = _moved(resolved[big], raised)
    elif spec.param(small).clamp(lowered) == lowered:
        resolved[small] = _moved(resolved[small], lowered)
    else:
        raise RenderError(f"templates/{spec.cause}.yaml: cannot keep {left} {op} {right}")


def _moved(old: Resolved, value: Any) -> Resolved:
    """A value a relation moved: a default stays a default, a log value becomes clamped."""
    if old.origin is Origin.DEFAULT:
        return Resolved(value, Origin.DEFAULT)
    logged = old.logged if old.origin is Origin.CLAMPED else old.value
    return Resolved(value, Origin.CLAMPED, logged)
