"""CUDA device-side assertion lines and out-of-memory reports.

Formats (real texts, see tests/test_extract_cuda.py for sources):
  /pytorch/aten/src/ATen/native/cuda/Indexing.cu:1141: indexSelectLargeIndex: block: [0,0,0],
      thread: [0,0,0] Assertion `srcIndex < srcSelectDimSize` failed.
  C:\\...\\NLLLoss2d.cu:106: block: [3,0,0], thread: [353,0,0] Assertion `t >= 0 ...` failed.
      (Windows builds omit the kernel name)
  python: /project/lib/Analysis/Allocation.cpp:40: ...getCvtOrder(...): Assertion `!(a && b)'
      failed.   (a host-side C++ assert, glibc's format, then "Aborted (core dumped)")
  old OOM (<= 2.0): CUDA out of memory. Tried to allocate X (GPU 0; Y total capacity;
      Z already allocated; W free; V reserved in total by PyTorch)   ("; V cached)" before 1.5)
  new OOM (2.1+): Tried to allocate X. GPU 0 has a total capacity of Y of which W is free. ...
      Of the allocated memory Z is allocated by PyTorch, and U is reserved by PyTorch but
      unallocated.   (reserved total = Z + U)
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from minrepro.diagnose.extract.units import SIZE, parse_size
from minrepro.diagnose.literals import any_of
from minrepro.model import CudaAssert, Line, OomReport
from minrepro.patterns import lazy

_ASSERT_RE = lazy(
    r"(?P<file>(?:[A-Za-z]:)?[^\s:]*\.(?:cuh?|hip|cpp|h)):(?P<lineno>\d+): "
    r"(?:(?P<kernel>.*?): )?block: \[[\d, ]*\], thread: \[[\d, ]*\] "
    r"Assertion `(?P<cond>.*?)` failed"
)
#: A host-side C/C++ assert, as glibc prints it before abort(): `prog: file.cpp:40: func:
#: Assertion `cond' failed.` (a compiled library's own invariant: Triton's, a C++ extension's)
_NATIVE_ASSERT_RE = lazy(
    r"(?P<file>(?:[A-Za-z]:)?[^\s:]*\.(?:c|cc|cpp|cxx|h|hpp)):(?P<lineno>\d+): "
    r"(?P<kernel>.{0,400}?): Assertion `(?P<cond>.{0,400})' failed"
)
#: Each failing thread prints its own line; one event per distinct assertion is enough.
_MAX_SEEN_ASSERTS = 256


class CudaAssertExtractor:
    """`file.cu:N: kernel: block: [..], thread: [..] Assertion `cond` failed.` -> CudaAssert."""

    TRIGGERS = ("Assertion `",)
    SELECT = ("assertion",)

    def __init__(self) -> None:
        self._seen: set[tuple[str, str, str, int | None]] = set()

    def feed(self, line: Line) -> Sequence[CudaAssert]:
        text = line.text
        if not _may_assert(text):
            return ()
        match = _ASSERT_RE.search(text) or _NATIVE_ASSERT_RE.search(text)
        if match is None:
            return ()
        file = match["file"]
        kernel = (match["kernel"] or "").strip()
        key = (file, kernel, match["cond"], line.rank)
        if key in self._seen:
            return ()
        if len(self._seen) < _MAX_SEEN_ASSERTS:
            self._seen.add(key)
        return (CudaAssert(line=line.line, file=file, kernel=kernel,
                           condition=match["cond"], rank=line.rank),)

    def close(self) -> Sequence[CudaAssert]:
        return ()


def _size_after(pattern: re.Pattern[str], text: str) -> int | None:
    match = pattern.search(text)
    return parse_size(match[1]) if match else None


_S = f"({SIZE})"
_REQUESTED = lazy(rf"[Tt]ried to allocate {_S}")
_DEVICE = lazy(r"\(GPU (\d+);|GPU (\d+) has a total capac")
_CAPACITY_OLD = lazy(rf"{_S} total capacity")
_CAPACITY_NEW = lazy(rf"total capac\w* of {_S}")
_FREE_OLD = lazy(rf"{_S} free\b")
_FREE_NEW = lazy(rf"of which {_S} is free")
_ALLOC_OLD = lazy(rf"{_S} already allocated")
_ALLOC_NEW = lazy(rf"{_S} is allocated by PyTorch", re.IGNORECASE)
_RESERVED_OLD = lazy(rf"{_S} (?:reserved in total by PyTorch|cached\))", re.IGNORECASE)
#: "CUDA error: out of memory", "HIP out of memory", "torch.OutOfMemoryError: ..."
_OOM_WITHOUT_SIZES = lazy(
    r"(?:CUDA|HIP|XPU|MPS backend|NPU) (?:error: )?out of memory|OutOfMemoryError")
_UNALLOCATED_NEW = lazy(rf"{_S} is reserved by PyTorch but unallocated",
                              re.IGNORECASE)


class OomExtractor:
    """CUDA/HIP out-of-memory messages -> OomReport (sizes in bytes)."""

    TRIGGERS = ("out of memory", "ried to allocate")
    SELECT = ("out of memory",)

    def feed(self, line: Line) -> Sequence[OomReport]:
        text = line.text
        if not _may_oom(text):
            return ()
        if "has a total capac" in text:
            report = _parse_new(text, line)
        elif _REQUESTED.search(text) and ("out of memory" in text or "(GPU " in text):
            report = _parse_old(text, line)
        elif _OOM_WITHOUT_SIZES.search(text):
            report = OomReport(line=line.line, requested_bytes=None, rank=line.rank)
        else:
            return ()  # prose ("my GPU runs out of memory") is not a report
        return (report,)

    def close(self) -> Sequence[OomReport]:
        return ()


def _device(text: str) -> int | None:
    match = _DEVICE.search(text)
    if match is None:
        return None
    return int(match[1] or match[2])


def _parse_old(text: str, line: Line) -> OomReport:
    return OomReport(
        line=line.line,
        requested_bytes=_size_after(_REQUESTED, text),
        capacity_bytes=_size_after(_CAPACITY_OLD, text),
        free_bytes=_size_after(_FREE_OLD, text),
        allocated_bytes=_size_after(_ALLOC_OLD, text),
        reserved_bytes=_size_after(_RESERVED_OLD, text),
        device_index=_device(text),
        rank=line.rank,
        fmt="old",
    )


def _parse_new(text: str, line: Line) -> OomReport:
    allocated = _size_after(_ALLOC_NEW, text)
    unallocated = _size_after(_UNALLOCATED_NEW, text)
    # The new wording splits reserved memory; the old one printed the total. Store the total.
    reserved = None if allocated is None or unallocated is None else allocated + unallocated
    return OomReport(
        line=line.line,
        requested_bytes=_size_after(_REQUESTED, text),
        capacity_bytes=_size_after(_CAPACITY_NEW, text),
        free_bytes=_size_after(_FREE_NEW, text),
        allocated_bytes=allocated,
        reserved_bytes=reserved,
        device_index=_device(text),
        rank=line.rank,
        fmt="new",
    )


_may_assert = any_of(CudaAssertExtractor.TRIGGERS)
_may_oom = any_of(OomExtractor.TRIGGERS)
