"""Terminal output: colour and word wrapping at a terminal, the plain text anywhere else."""

from __future__ import annotations

import io
import re

import pytest

from minrepro.output import terminal
from minrepro.output.terminal import emit, styled
from minrepro.output.text import clip

FIX = ("fix:\n  Lower the learning rate (e.g. by 3-10x), add warmup, and clip gradients "
       "(torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)) before the next run.\n")
ANSI = re.compile(r"\x1b\[[0-9;]*m")


def rendered(text: str, width: int = 80) -> str:
    out = io.StringIO()
    terminal.sys.stdout, saved = out, terminal.sys.stdout
    try:
        emit(text, force=True, width=width)
    finally:
        terminal.sys.stdout = saved
    return out.getvalue()


def test_a_terminal_gets_colour_and_words_wrapped_whole() -> None:
    out = rendered(FIX, width=64)
    assert ANSI.search(out)  # styled
    plain = ANSI.sub("", out)
    lines = plain.splitlines()
    assert all(len(line) <= 64 for line in lines) and len(lines) > 2
    words = set(FIX.split())
    assert all(word in words for line in lines[1:] for word in line.split())  # none cut
    assert all(line.startswith("  ") for line in lines[1:])  # the indent is kept


def test_log_text_is_never_read_as_markup() -> None:
    text = "evidence:\n  line 3: [bold]x[/bold] [link=https://evil.example]click[/link]\n"
    assert "[link=https://evil.example]click[/link]" in ANSI.sub("", rendered(text))


def test_a_pipe_gets_the_text_unchanged(capsys: pytest.CaptureFixture[str]) -> None:
    emit(FIX)  # stdout is captured: not a terminal
    assert capsys.readouterr().out == FIX


@pytest.mark.parametrize(("env", "want"), [({"NO_COLOR": "1"}, False),
                                           ({"TERM": "dumb"}, False), ({}, True)])
def test_no_color_and_dumb_terminals_are_plain(monkeypatch: pytest.MonkeyPatch, env: dict,
                                               want: bool) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm-256color")
    for key, value in env.items():
        monkeypatch.setenv(key, value)

    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    assert styled(Tty()) is want


def test_evidence_is_clipped_at_a_word_with_a_mark() -> None:
    text = "RuntimeError: " + " ".join(f"word{i}" for i in range(80))
    clipped = clip(text, 200)
    assert len(clipped) <= 200 and clipped.endswith("…")
    assert clipped[:-1].split()[-1] in text.split()  # the last word is whole
    assert clip("short", 200) == "short"
