"""The signal prefilter never hides a match: every line a built-in signal's pattern matches
(its examples, the lines of its rule's cases, the samples' lines) passes the filter."""

from __future__ import annotations

from pathlib import Path

import pytest

from minrepro.diagnose.prefilter import SignalPrefilter
from minrepro.diagnose.rules.registry import load_rules

pytest.importorskip("hyperscan")

SAMPLES = Path(__file__).resolve().parents[1] / "samples"


def _texts(rule) -> list[str]:  # noqa: ANN001 - a Rule
    texts = list(rule.examples_match) + list(rule.examples_no_match)
    texts += [line for case in rule.cases for line in case.log.splitlines()]
    return [t for t in texts if t.isascii() and t.isprintable()]


def test_no_line_a_pattern_matches_is_filtered_out() -> None:
    sample_lines = [line for path in sorted(SAMPLES.glob("*.log"))
                    for line in path.read_text(encoding="utf-8").splitlines()
                    if line.isascii() and line.isprintable()]
    built = 0
    for rule in load_rules(eager=True):
        for s, signal in enumerate(rule.signals):
            prefilter = SignalPrefilter([(s, signal)])
            if not prefilter.build([s]):
                continue  # not filtered: always searched
            built += 1
            for text in _texts(rule) + sample_lines:
                if signal.pattern.search(text):
                    assert s in (prefilter.possible(text) or ()), (rule.id, signal.name, text)
    assert built > 150  # most built-in patterns are filtered


def test_lines_the_engines_could_read_apart_are_not_filtered() -> None:
    rule = next(r for r in load_rules() if r.signals)
    prefilter = SignalPrefilter([(0, rule.signals[0])])
    assert prefilter.build([0])
    assert prefilter.possible("tab\tseparated") is None
    assert prefilter.possible("caf\u00e9") is None
    assert isinstance(prefilter.possible("plain ascii"), set)
