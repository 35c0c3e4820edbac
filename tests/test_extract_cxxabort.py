"""C++ aborts: `terminate called after throwing an instance of 'T'` + `what():` -> an event.

Texts as printed in public reports: libtorch's c10::Error after an ECC error (bigscience
tr1-13B logs), NCCL's watchdog (pytorch/pytorch#115883-style), DGL's dmlc::Error, and
tiny-cuda-nn's std::runtime_error (nerfstudio).
"""

from __future__ import annotations

from minrepro.diagnose.extract import CxxAbortExtractor, ExtractorSet
from minrepro.model import Line, Traceback


def events(text: str, extractor: CxxAbortExtractor | None = None) -> list[Traceback]:
    extractor = extractor or CxxAbortExtractor()
    found: list[Traceback] = []
    for number, row in enumerate(text.splitlines(), 1):
        found.extend(extractor.feed(Line(line=number, text=row)))
    return [*found, *extractor.close()]


def test_the_type_and_the_what_text_make_the_event() -> None:
    [event] = events("terminate called after throwing an instance of 'std::runtime_error'\n"
                     "  what():  /src/tiny-cuda-nn/multi_stream.h:83 cudaEventRecord(m_event, "
                     "m_stream) failed with error an illegal memory access was encountered\n"
                     "Aborted (core dumped)\n")
    assert event.exc_type == "std::runtime_error"
    assert event.message.endswith("an illegal memory access was encountered")
    assert (event.line, event.first_line, event.frames) == (1, 1, ())


def test_what_on_the_same_line_where_output_ran_together() -> None:
    [event] = events("terminate called after throwing an instance of 'dmlc::Error'  what():  "
                     "[09:48:37] tensordispatch.cc:23: Check failed: !available_\n")
    assert (event.exc_type, event.message) == (
        "dmlc::Error", "[09:48:37] tensordispatch.cc:23: Check failed: !available_")


def test_no_what_within_a_few_lines_keeps_the_type_alone() -> None:
    log = ("terminate called after throwing an instance of 'c10::DistBackendError'\n"
           "[rank2]:[E1128 21:12:49 ProcessGroupNCCL.cpp:2068] watchdog thread terminated\n"
           "Exception raised from checkTimeout at ProcessGroupNCCL.cpp:688\n"
           "frame #0: c10::Error::Error(c10::SourceLocation) + 0x80\n"
           "frame #1: <unknown function> + 0xdf0e6\n")
    [event] = events(log)
    assert (event.exc_type, event.message, event.line) == ("c10::DistBackendError", "", 1)


def test_a_later_what_belongs_to_no_earlier_abort_and_a_bare_terminate_is_none() -> None:
    log = ("terminate called after throwing an instance of 'c10::Error'\n" + "x\n" * 5 +
           "  what():  CUDA error: unspecified launch failure\n"
           "terminate called without an active exception\n")
    [event] = events(log)
    assert (event.exc_type, event.message) == ("c10::Error", "")


def test_the_extractor_set_feeds_it_the_lines_after_the_trigger() -> None:
    extractors = ExtractorSet()
    rows = ["terminate called after throwing an instance of 'c10::Error'",
            "  what():  CUDA error: uncorrectable ECC error encountered"]
    found = [e for n, row in enumerate(rows, 1)
             for e in extractors.feed(Line(line=n, text=row)) if isinstance(e, Traceback)]
    assert [(e.exc_type, e.message) for e in found] == [
        ("c10::Error", "CUDA error: uncorrectable ECC error encountered")]


def test_the_watchdogs_rank_tag_is_the_aborts_rank_where_no_prefix_gave_one() -> None:
    """NCCL's watchdog names its rank in the message it aborts with ("[Rank 7] ...", newer
    torch "[PG ID 0 PG GUID 0(default_pg) Rank 5] ..."); a launcher prefix, where there is
    one, stays the rank."""
    thrown = "terminate called after throwing an instance of 'std::runtime_error'\n"
    [old] = events(thrown + "  what():  [Rank 7] Watchdog caught collective operation timeout")
    [new] = events(thrown + "  what():  [PG ID 0 PG GUID 0(default_pg) Rank 5] Process group "
                            "watchdog thread terminated with exception: NCCL error")
    [bare] = events(thrown + "  what():  CUDA error: an illegal memory access was encountered")
    assert (old.rank, new.rank, bare.rank) == (7, 5, None)
    extractor = CxxAbortExtractor()
    extractor.feed(Line(line=1, text=thrown.strip(), rank=2))
    [prefixed] = extractor.feed(Line(line=2, text="  what():  [Rank 7] Watchdog", rank=2))
    assert prefixed.rank == 2
