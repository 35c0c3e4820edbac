"""The bytes of a log as UTF-8 text for the reader: leading NULs skipped, UTF-16 transcoded,
binary data refused, and the `Fill` functions that put the text into the reader's buffer."""

from __future__ import annotations

import codecs
import re
from collections.abc import Callable, Iterator

from minrepro.errors import BadInputError

_SNIFF_BYTES = 8192
_NUL_BLOCK = 16
_NUL_RUN = re.compile(rb"\x00{%d,}" % _NUL_BLOCK)
#: Fills a view of the reader's buffer with the next bytes of text; 0 at the end.
Fill = Callable[[memoryview], int]


def skip_leading_nuls(chunks: Iterator[bytes]) -> bytes:
    """The first chunk with text in it, leading NUL bytes dropped: logrotate's `copytruncate`
    leaves the writer's old offset behind, and the file then starts with a block of NULs."""
    skipped = 0
    for chunk in chunks:
        text = chunk.lstrip(b"\x00")
        skipped += len(chunk) - len(text)
        if text:  # one or two NULs may be UTF-16-BE without a BOM: only a block is dropped
            return text if skipped >= _NUL_BLOCK else chunk
    return b""


def copying(chunks: Iterator[bytes]) -> Fill:
    """A Fill that copies decoded chunks into the buffer (what is left of a chunk waits)."""
    rest: list[bytes] = []
    offset = 0

    def fill(view: memoryview) -> int:
        nonlocal offset
        while not rest:
            chunk = next(chunks, None)
            if chunk is None:
                return 0
            if chunk:
                rest.append(chunk)
                offset = 0
        got = copy_into(view, rest, offset)
        offset = 0 if not rest else offset + got
        return got

    return fill


def copy_into(view: memoryview, queue: list[bytes], offset: int) -> int:
    """Copy queue[0][offset:] into the view, as much as fits; drop it from the queue once
    all of it is copied. Returns how many bytes were copied."""
    data = queue[0]
    got = min(len(view), len(data) - offset)
    view[:got] = memoryview(data)[offset:offset + got]
    if offset + got >= len(data):
        queue.pop(0)
    return got


def chain(first: bytes, rest: Iterator[bytes]) -> Iterator[bytes]:
    yield first
    yield from rest


def utf16_encoding(head: bytes) -> str | None:
    """'utf-16' for a BOM, 'utf-16-le'/'-be' for BOM-less text that is mostly ASCII."""
    if head[:2] in (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE):
        return "utf-16"
    sample = head[:_SNIFF_BYTES] if len(head) >= 64 else b""
    half = len(sample) // 2
    if half and sample[1::2].count(0) > 0.9 * half and sample[0::2].count(0) < 0.1 * half:
        return "utf-16-le"
    if half and sample[0::2].count(0) > 0.9 * half and sample[1::2].count(0) < 0.1 * half:
        return "utf-16-be"
    return None


def transcode_utf16(chunks: Iterator[bytes], encoding: str) -> Iterator[bytes]:
    decoder = codecs.getincrementaldecoder(encoding)("replace")
    for chunk in chunks:
        yield decoder.decode(chunk).encode("utf-8")
    yield decoder.decode(b"", final=True).encode("utf-8")


def refuse_binary(head: bytes, source: str) -> None:
    """Reject data that is clearly not text (images, archives, model checkpoints): they hold
    control bytes (~10 % of random bytes are). Text in another encoding (GBK, Shift-JIS,
    Latin-1: a log from a Windows machine set to Chinese) is text; its bad UTF-8 is replaced."""
    # holes of NULs (a log truncated under a writer that kept its offset, two writers on one
    # nohup.out) are no binary data: only the bytes around them are judged
    sample = _NUL_RUN.sub(b"", head[:_SNIFF_BYTES])
    if not sample:
        return
    controls = len(sample) - len(sample.translate(None, _CONTROL_BYTES))
    if controls > 0.05 * len(sample):
        raise BadInputError(f"{source}: not a text log (binary data)")


# Control bytes that text logs do not contain (tab, newlines, form feed and ESC are allowed).
_CONTROL_BYTES = bytes(b for b in range(32) if b not in (9, 10, 12, 13, 27)) + b"\x7f"
