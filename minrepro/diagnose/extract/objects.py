"""A JSON object printed one key a line -> the one-line dict text the metric parser reads.

HF's trainer_state.json (its `log_history`), `json.dumps(metrics, indent=2)` in a loop:

    {
      "epoch": 0.32,
      "eval_accuracy": 0.255,
      "eval_loss": 1.3863,
      "step": 50
    },

Lines are gathered from the first `"key": value` line on (the opening brace holds no
metric word, so the extractor may not see it) until the closing brace, which makes them one
record if one of its keys is a position in the run (step, epoch ...): a settings object is
none. A line of any other shape (a nested list or object) drops what was gathered.
"""

from __future__ import annotations

from minrepro.diagnose.extract.metricnames import STEP_KEYS
from minrepro.patterns import lazy

#: `"loss": 1.387,` / `"best_metric": null,` / `"eval_runtime": 92.0138`
_PAIR_LINE = lazy(r'^\s*"(?P<key>[^"\n]{1,60})"\s*:\s*(?P<value>-?\d[\d.eE+-]*|-?NaN|-?Infinity'
                  r'|null|true|false|"[^"\n]{0,80}")\s*,?\s*$')
_CLOSE = lazy(r"^\s*\}\s*,?\s*$")
MAX_KEYS = 64  # an object with more keys than this is no metrics record
_POSITION_KEYS = frozenset((*STEP_KEYS, "epoch"))


class ObjectLines:
    """Gathers one JSON object's key lines; `feed` returns its dict text once it closes."""

    def __init__(self) -> None:
        self._pairs: list[str] = []
        self._keys: set[str] = set()
        self.first_line = 0  # the line of the object's first key

    @property
    def open(self) -> bool:
        return bool(self._pairs)

    def feed(self, text: str, line: int) -> str | None:
        """The object's one-line text when `text` closes it; None otherwise (gathering, or
        not an object's line at all)."""
        if '"' not in text and "}" not in text:
            self._pairs, self._keys = [], set()
            return None
        pair = _PAIR_LINE.match(text)
        if pair is not None:
            if not self._pairs:
                self.first_line = line
            if len(self._pairs) < MAX_KEYS:
                value = pair["value"].replace("Infinity", "inf").replace("NaN", "nan")
                self._pairs.append(f"'{pair['key']}': {value}")
                self._keys.add(pair["key"].lower())
            return None
        closed = bool(self._pairs) and _CLOSE.match(text) is not None
        pairs, keys, self._pairs, self._keys = self._pairs, self._keys, [], set()
        # a record says where in the run it is; a settings object (DeepSpeed's `"fp16":
        # {"loss_scale": 0, ...}` in its config dump) does not
        placed = bool(keys & _POSITION_KEYS)
        return "{" + ", ".join(pairs) + "}" if closed and placed else None
