"""Template specs (templates/<cause>.yaml): parsing with precise errors, and resolving a
diagnosis's params into checked values (types, bounds, relations kept after clamping)."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

from minrepro.errors import RenderError

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")
_OPS = {">": lambda a, b: a > b, ">=": lambda a, b: a >= b,
        "<": lambda a, b: a < b, "<=": lambda a, b: a <= b}
_PARAM_KEYS = {"int": {"type", "default", "min", "max"}, "float": {"type", "default", "min", "max"},
               "str": {"type", "default", "max_len"}, "choice": {"type", "default", "choices"}}
_SPEC_KEYS = {"params", "variants", "gpu_only", "relations", "example"}
_FLOAT_TEXT = re.compile(r"[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?")

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
    #: params as a real log gives them (values of the dev corpus, some out of bounds so that
    #: clamping is exercised): the diagnosis the tests and the GPU check render
    example: tuple[tuple[str, Any], ...] = ()

    def param(self, name: str) -> ParamSpec:
        return next(p for p in self.params if p.name == name)

    def example_params(self) -> dict[str, Any]:
        return dict(self.example)


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
    relation_specs = tuple(_parse_relation(rel, params, f"{where}: relations[{i}]")
                           for i, rel in enumerate(relations))
    example = data.get("example") or {}
    _check(isinstance(example, dict) and all(name in params for name in example),
           f"{where}: example should map declared params to values")
    return TemplateSpec(cause, tuple(params.values()), tuple(variants), gpu_only, relation_specs,
                        tuple(example.items()))


# --- values ------------------------------------------------------------------------------


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
