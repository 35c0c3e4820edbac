"""Regexes compiled on first use behave as the compiled ones, and compile once."""

from __future__ import annotations

import re

from minrepro.patterns import lazy


def test_a_lazy_pattern_answers_as_the_compiled_one() -> None:
    source, text = r"step (\d+)", "Step 12 loss 0.5 step 13"
    compiled, pending = re.compile(source, re.I), lazy(source, re.I)
    assert pending.search(text).group(1) == compiled.search(text).group(1)  # type: ignore[union-attr]
    assert pending.findall(text) == compiled.findall(text)
    assert pending.sub("#", text) == compiled.sub("#", text)
    assert [m.span() for m in pending.finditer(text)] == [m.span() for m in compiled.finditer(text)]
    assert pending.fullmatch("step 1") is not None and pending.match("x step 1") is None
    assert (pending.pattern, pending.groups, pending.flags) == (compiled.pattern, compiled.groups,
                                                                compiled.flags)


def test_nothing_is_compiled_before_use_and_once_after(monkeypatch) -> None:
    calls: list[str] = []
    real = re.compile

    def counting(source, flags=0):
        calls.append(source)
        return real(source, flags)

    monkeypatch.setattr(re, "compile", counting)
    pending = lazy(r"nan|inf")
    assert calls == []
    for line in ("loss nan", "loss 0.1", "grad inf"):
        pending.search(line)
    assert pending.pattern == "nan|inf"
    assert calls == ["nan|inf"]


def test_an_invalid_pattern_fails_at_first_use_with_re_error() -> None:
    pending = lazy(r"(unclosed")
    try:
        pending.search("x")
    except re.error:
        return
    raise AssertionError("re.error expected")
