"""Analyzers: code that reads events (not lines) and reports findings rules cannot express."""

from __future__ import annotations

from typing import Protocol

from minrepro.diagnose.analyze.curves import CurveAnalyzer
from minrepro.diagnose.analyze.events import LossScaleAnalyzer, NcclAnalyzer, OomAnalyzer
from minrepro.diagnose.analyze.predictions import PredictionsAnalyzer
from minrepro.model import Event, Finding, Line

__all__ = ["Analyzer", "CurveAnalyzer", "default_analyzers"]


class Analyzer(Protocol):
    def feed(self, event: Event, line: Line) -> None: ...

    def findings(self) -> list[Finding]: ...


def default_analyzers() -> list[Analyzer]:
    return [CurveAnalyzer(), OomAnalyzer(), LossScaleAnalyzer(), NcclAnalyzer(),
            PredictionsAnalyzer()]
