"""minrepro: diagnose a failed PyTorch training log and write a minimal repro script.

Public API: `diagnose()`, `render_repro()`, `Diagnosis`. The capabilities live in packages
(`minrepro.diagnose`, `minrepro.repro`, `minrepro.report`, ...); their insides may change.
"""

from __future__ import annotations

import os
from collections.abc import Iterable

# The package minrepro.diagnose is imported first so that the function below, defined after
# it, is what `minrepro.diagnose` names (a submodule import binds its name on the parent
# only when the submodule is first loaded). The package's __init__ imports nothing.
import minrepro.diagnose as _diagnose_package  # noqa: F401
from minrepro.model import Diagnosis

__all__ = ["Diagnosis", "diagnose", "render_repro"]
__version__ = "0.1.0"


def diagnose(source: str | os.PathLike[str], *, rule_dirs: Iterable[str] = ()) -> Diagnosis:
    """Diagnose the log at `source` (a path, '-' for stdin, or a .gz file). Never imports torch."""
    from minrepro.diagnose.pipeline import diagnose_log

    return diagnose_log(source, rule_dirs=rule_dirs)


def render_repro(diagnosis: Diagnosis) -> str:
    """Render the repro script for a diagnosis (a Python source text that passed ast.parse)."""
    from minrepro.repro.render import render_repro as _render

    return _render(diagnosis)
