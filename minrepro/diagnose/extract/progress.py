"""The rate a progress bar shows (tqdm's `13.47it/s`, `3.85s/it`), as steps a second.

A bar of a set-up task (loading checkpoint shards or a framework's modules, downloading,
tokenizing, mapping a data set) is no training: its rate is no step's, and such bars printed
by other ranks after one rank failed are no sign that the run went on.
"""

from __future__ import annotations

from minrepro.patterns import lazy

_THROUGHPUT = lazy(r"(\d+(?:\.\d+)?)\s?(it/s|s/it)")
_SETUP_BAR = lazy(r"^\W*(?i:loading|downloading|fetching|resolving|extracting|tokeniz\w*|"
                  r"(?:pre)?processing|generating|building|saving|writing|converting|caching|"
                  r"compiling|map|filter)\b[^|\n]{0,80}?\d+%\|")


#: a bar over nothing: tqdm's `0it [00:00, ?it/s]` (an iterable without a length that gave no
#: item) or `0/0 [` (one of length 0), Lightning's `Epoch 0: 0it`
_EMPTY_BAR = lazy(r"(?:^|[\s:|])0it \[|\|\s*0/0 \[")


def is_bar(text: str) -> bool:
    """The line shows a progress bar (tqdm's, Lightning's, rich's `it/s` or `47%|`)."""
    return "it/s" in text or "s/it" in text or "%|" in text or "it [" in text


def empty_bar(text: str) -> bool:
    """The line is a progress bar that went over no item (an empty data set's loop)."""
    return ("0it [" in text or "0/0 [" in text) and _EMPTY_BAR.search(text) is not None


def training_rate(text: str) -> float | None:
    """Steps a second of the line's progress bar; None when it shows none, or is a set-up
    task's bar."""
    if "it/s" not in text and "s/it" not in text or _SETUP_BAR.match(text):
        return None
    match = _THROUGHPUT.search(text)
    if match is None:
        return None
    rate = float(match[1])
    if match[2] == "s/it":
        return 1.0 / rate if rate else float("inf")
    return rate
