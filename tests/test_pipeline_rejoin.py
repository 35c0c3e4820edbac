"""An exception message wrapped over several lines (by a paste, a terminal, an e-mail) is
matched as the one line it was."""

from __future__ import annotations

from minrepro.diagnose.pipeline import diagnose_lines
from minrepro.model import Line


def _diagnose(text: str):
    return diagnose_lines(Line(line=n, text=t) for n, t in enumerate(text.split("\n"), 1))


def test_a_wrapped_inplace_message_names_its_cause() -> None:
    # pytorch/pytorch#175024 (2026): the message broken over three lines as posted
    text = ("RuntimeError: one of the variables needed for gradient computation has been "
            "modified\nby an inplace operation: [torch.cuda.FloatTensor [768]] is at version 3;"
            " expected version 2\ninstead.\n")
    diagnosis = _diagnose(text)
    assert diagnosis.cause == "inplace_autograd"
    assert diagnosis.evidence[0].line == 1  # the exception's own line, rejoined


def test_a_message_matched_on_its_first_line_is_not_counted_twice() -> None:
    text = ("Traceback (most recent call last):\n"
            '  File "train.py", line 9, in <module>\n'
            "    model.load_state_dict(sd)\n"
            "RuntimeError: Error(s) in loading state_dict for Net:\n"
            '\tMissing key(s) in state_dict: "fc.weight".\n')
    diagnosis = _diagnose(text)
    assert diagnosis.cause == "state_dict_mismatch"
    assert len({(e.line, e.text) for e in diagnosis.evidence}) == len(diagnosis.evidence)
    assert [e.line for e in diagnosis.evidence].count(4) == 1
