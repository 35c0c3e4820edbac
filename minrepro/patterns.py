"""Module-level regexes compiled on first use, so that start-up pays only for the ones a log needs.

    _STEP = lazy(r"step (\\d+)", re.I)   # as re.compile; nothing is compiled yet
    _STEP.search(line)                  # compiles once, then calls the pattern's own method

A `diagnose` of a two-line log imports every extractor but runs none of them: compiling their
~150 patterns up front was a tenth of its start-up. After the first call the pattern's bound
methods sit in the instance's __dict__, so a hot loop pays one attribute lookup, as it would on
the compiled pattern itself. Pass a lazy pattern's methods around, never the object to
`re.sub(pattern, ...)` (re wants a real Pattern there): call `_PAT.sub(...)` instead.
"""

from __future__ import annotations

import re
from typing import Any, cast

_METHODS = ("search", "match", "fullmatch", "finditer", "findall", "sub", "subn", "split")


class _LazyPattern:
    def __init__(self, source: str, flags: int) -> None:
        self._source = source
        self._flags = flags

    def __getattr__(self, name: str) -> Any:  # the methods: reached only before the first call
        if name.startswith("__"):
            raise AttributeError(name)
        compiled = self.__dict__.get("_compiled")
        if compiled is None:
            compiled = self.__dict__["_compiled"] = re.compile(self._source, self._flags)
            for method in _METHODS:
                setattr(self, method, getattr(compiled, method))
        return getattr(compiled, name)

    def __repr__(self) -> str:
        return f"lazy({self._source!r}, {self._flags!r})"


def lazy(source: str, flags: int | re.RegexFlag = 0) -> re.Pattern[str]:
    """`re.compile(source, flags)`, done on the first call of any of the pattern's methods."""
    return cast("re.Pattern[str]", _LazyPattern(source, int(flags)))
