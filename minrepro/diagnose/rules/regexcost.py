"""What a regex costs to compile, estimated before compiling it.

The `regex` engine expands counted repeats of groups: `((((a{100}){100}){100}){100})` is
10^8 nodes and gigabytes before the first match is tried. `expansion` walks the pattern text
(no engine involved) and multiplies nested counts; a user pack whose pattern exceeds
MAX_EXPANSION is refused at load time, with its file and rule named.
"""

from __future__ import annotations

import re

from minrepro.patterns import lazy

MAX_EXPANSION = 20_000  # (?:(?:a{100}){100}) compiles in ms; ten times more costs 100 MB
_COUNT = lazy(r"\{(\d{0,9})(?:,(\d{0,9}))?\}")


def expansion(source: str) -> int:
    """An upper estimate of the nodes the engine builds: atoms, times nested repeat counts."""
    stack: list[int] = [0]  # the size of each open group
    last = 0  # size of the last atom, which a quantifier multiplies
    index = 0
    while index < len(source):
        char = source[index]
        if char == "\\":
            index, last = index + 2, 1
            stack[-1] += 1
            continue
        if char == "[":
            index, last = _class_end(source, index), 1
            stack[-1] += 1
            continue
        if char == "(":
            stack.append(0)
        elif char == ")" and len(stack) > 1:
            last = stack.pop()
            stack[-1] += last
        elif char == "{" and (count := _COUNT.match(source, index)):
            times = _repeat(count)
            stack[-1] += last * (times - 1)
            last *= times
            index = count.end()
            continue
        elif char not in "*+?|":
            last = 1
            stack[-1] += 1
        index += 1
    return sum(stack)


def _repeat(count: re.Match[str]) -> int:
    low, high = count.group(1), count.group(2)
    if high:
        return max(int(high), 1)
    return max(int(low or 0), 1) + (1 if count.group(0).endswith(",}") else 0)


def _class_end(source: str, start: int) -> int:
    """The index after the `]` closing the class that opens at `start`."""
    index = start + 1
    if index < len(source) and source[index] == "^":
        index += 1
    if index < len(source) and source[index] == "]":
        index += 1
    while index < len(source) and source[index] != "]":
        index += 2 if source[index] == "\\" else 1
    return index + 1
