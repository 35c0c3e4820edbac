"""minrepro: diagnose a failed PyTorch training log and write a minimal repro script."""

from __future__ import annotations

import os
from collections.abc import Iterable

from minrepro.model import Diagnosis

__all__ = ["Diagnosis", "diagnose", "render_repro"]
__version__ = "0.1.0"


def diagnose(source: str | os.PathLike[str], *, rule_dirs: Iterable[str] = ()) -> Diagnosis:
    """Diagnose the log at `source` (a path, '-' for stdin, or a .gz file). Never imports torch."""
    from minrepro.pipeline import diagnose_log

    return diagnose_log(source, rule_dirs=rule_dirs)


def render_repro(diagnosis: Diagnosis) -> str:
    """Render the repro script for a diagnosis (a Python source text that passed ast.parse)."""
    from minrepro.render import render_repro as _render

    return _render(diagnosis)
