"""The layout is part of the design: one package per capability, imports only downward."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "minrepro"
MODULES = sorted(PACKAGE.rglob("*.py"))

#: Each layer may import from itself and the layers before it, never from a later one.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("minrepro.errors", "minrepro.model", "minrepro.taxonomy", "minrepro.schema",
     "minrepro.files", "minrepro.sanitize", "minrepro.patterns"),
    ("minrepro.output",),
    ("minrepro.diagnose",),
    ("minrepro.repro",),
    ("minrepro.report",),
    ("minrepro.monitor",),  # live checks: may read logs and render scripts; nothing imports it
    ("minrepro.triage",),
    ("minrepro.tools",),
    ("minrepro.preflight",),  # reads logs through diagnose for `diff`; nothing imports it
    ("minrepro.cli", "minrepro.scoring", "minrepro.__main__", "minrepro"),
)


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def layer_of(name: str) -> int:
    best, found = -1, len(LAYERS)
    for index, prefixes in enumerate(LAYERS):
        for prefix in prefixes:
            if (name == prefix or name.startswith(prefix + ".")) and len(prefix) > best:
                best, found = len(prefix), index
    return found


def imported(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return {name for name in names if name == "minrepro" or name.startswith("minrepro.")}


@pytest.mark.parametrize("path", MODULES, ids=module_name)
def test_imports_go_downward_only(path: Path) -> None:
    own = layer_of(module_name(path))
    upward = sorted(name for name in imported(path)
                    if layer_of(name) > own and not _is_submodule_of_own_package(name, path))
    assert not upward, f"{module_name(path)} imports from a later layer: {upward}"


def _is_submodule_of_own_package(name: str, path: Path) -> bool:
    """`from minrepro.diagnose import extract` names a module, not the package's layer."""
    return module_name(path) == "minrepro" and name.startswith("minrepro.diagnose")


def test_at_most_ten_flat_modules() -> None:
    flat = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert len(flat) <= 10, flat


@pytest.mark.parametrize("path", MODULES, ids=module_name)
def test_modules_stay_under_400_lines(path: Path) -> None:
    assert len(path.read_text(encoding="utf-8").splitlines()) <= 400


@pytest.mark.parametrize("package", sorted(p.parent for p in PACKAGE.rglob("__init__.py")),
                         ids=lambda p: p.name)
def test_each_package_says_what_it_does(package: Path) -> None:
    tree = ast.parse((package / "__init__.py").read_text(encoding="utf-8"))
    assert ast.get_docstring(tree), f"{package.name}/__init__.py has no docstring"
