"""Stream a log as `Line` records, in bounded memory.

Input: a path, '-' (stdin) or a gzip file (detected by its magic bytes, not its name).
Each physical line is split on '\\r' (progress bars rewrite one line hundreds of times), decoded
(bad UTF-8 replaced, UTF-16 with a BOM transcoded), ANSI-stripped, capped in length, and its
rank prefix ("[rank3]:", "[default0]:", "3: ", "(Runner pid=1)") moved into `Line.rank`.
"""

from __future__ import annotations

import codecs
import os
import stat
import sys
import zlib
from collections.abc import Generator, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, cast

from minrepro.diagnose.scan import EVERY_LINE, MANY_UPDATES, LineSelector
from minrepro.diagnose.textbytes import (
    Fill,
    chain,
    copy_into,
    copying,
    refuse_binary,
    skip_leading_nuls,
    transcode_utf16,
    utf16_encoding,
)
from minrepro.errors import BadInputError, shown_path
from minrepro.model import Line
from minrepro.patterns import lazy
from minrepro.sanitize import log_text

if TYPE_CHECKING:
    import io

CHUNK_BYTES = 4 << 20
MAX_LINE_BYTES = 16 * 1024  # longer records are cut here and flagged `truncated`
MAX_BLANK_RUN = 32
_LONG_LINE = 256  # shorter lines cannot hold a run long enough to cost anything
_BLANK_RUN = lazy(rf"[ \t]{{{MAX_BLANK_RUN + 1},}}")
#: The records of a physical line depend on its bytes alone: a line seen before (a progress
#: bar, a repeated warning; in this log or an earlier one of a triage worker) is not decoded,
#: cleaned and split again.
_RECORDS: dict[bytes, list[tuple[int | None, str, bool]]] = {}
_MEMO_BYTES = 1024  # lines up to this long are remembered
_MEMO_LINES = 8192

_RANK_PREFIX = lazy(
    r"^(?:\[\d+\]\s+)?"  # a line-number prefix some launchers add: "[80746] "
    r"(?:\[(?:rank|default)(?P<r1>\d{1,5})\]:?"  # torchrun: "[rank3]:" / "[default0]:"
    r"|\[\d+,(?P<r2>\d{1,5})\]<std(?:out|err)>:"  # mpirun --tag-output: "[1,3]<stderr>:"
    r"|(?P<r3>\d{1,4}): "  # srun --label / torchrun --tee: "3: "
    r"|\((?:\w+ )?pid=\d+(?:, ip=[\d.]+)?\) )"  # Ray workers: "(RayTrainWorker pid=123, ip=..)"
    r" ?"
)

#: torchrun's prefix behind a log collector's timestamp (kubectl logs --timestamps, a
#: platform's console): "2024-11-20 14:37:16 [rank3]: x" -> rank 3, the timestamp kept
_STAMPED_RANK = lazy(r"^(\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d+)?Z?\s+)"
                     r"\[(?:rank|default)(\d{1,5})\]:? ?")


class LogReader:
    """Iterate over the records of one log. `warnings` fills as problems are met."""

    def __init__(self, source: str | os.PathLike[str], *, max_line_bytes: int = MAX_LINE_BYTES,
                 chunk_bytes: int = CHUNK_BYTES, stdin: BinaryIO | None = None,
                 selector: LineSelector | None = None) -> None:
        self.source = str(source)
        self.name = "<stdin>" if self.source == "-" else Path(self.source).name
        self.max_line_bytes = max_line_bytes
        self.chunk_bytes = chunk_bytes
        self._stdin = stdin
        self.selector = selector  # None: every line; else it picks lines of big blocks
        self.warnings: list[str] = []
        self.bytes_read = 0  # raw bytes read from the file (compressed for .gz)
        self.total_bytes: int | None = None
        self.truncated_lines = 0
        self.compressed = False

    def __iter__(self) -> Iterator[Line]:
        stream = self._open()
        try:
            yield from self._records(self._filler(stream))
        finally:
            if stream is not self._stdin and stream is not sys.stdin.buffer:
                stream.close()

    # --- opening ------------------------------------------------------------------------

    def _open(self) -> BinaryIO:
        if self.source == "-":
            if self._stdin is not None:
                return self._stdin
            if sys.stdin is None or sys.stdin.closed:  # `minrepro diagnose - <&-`
                raise BadInputError("<stdin>: standard input is closed (nothing to read)")
            return sys.stdin.buffer
        path = Path(self.source)
        shown = shown_path(self.source)
        try:
            mode = path.stat().st_mode
            if stat.S_ISDIR(mode):
                raise BadInputError(f"{shown}: is a directory, not a log file")
            if not stat.S_ISREG(mode):  # a FIFO or device would block or never end
                raise BadInputError(f"{shown}: not a regular file (use - to read a pipe)")
            stream = open(path, "rb")  # noqa: SIM115 - closed in __iter__
            self.total_bytes = os.fstat(stream.fileno()).st_size
            return stream
        except FileNotFoundError:
            raise BadInputError(f"{shown}: no such file") from None
        except PermissionError:
            raise BadInputError(f"{shown}: permission denied") from None
        except OSError as err:
            raise BadInputError(f"{shown}: cannot read ({err.strerror or err})") from None

    def _raw_chunks(self, stream: BinaryIO) -> Iterator[bytes]:
        """Chunks up to the size the file had when opened: a log still being written (a fast
        writer) is read as it was, not followed forever. Stdin is read with one read per
        chunk (`read1`): on a terminal, one Ctrl-D then ends it, not two."""
        left = self.total_bytes  # None: stdin, no limit
        read = getattr(stream, "read1", stream.read) if self.source == "-" else stream.read
        while left is None or left > 0:
            try:
                chunk = read(self.chunk_bytes if left is None else min(self.chunk_bytes, left))
            except OSError as err:
                raise BadInputError(f"{shown_path(self.source)}: read failed"
                                    f" ({err.strerror or err})") from None
            if not chunk:
                return
            self.bytes_read += len(chunk)
            if left is not None:
                left -= len(chunk)
            yield chunk

    def _filler(self, stream: BinaryIO) -> Fill:
        """What fills the reader's buffer with the log's UTF-8 text: a regular file is read
        into it in place; gzip, UTF-16 and stdin are decoded chunk by chunk and copied in."""
        chunks = self._raw_chunks(stream)
        first = skip_leading_nuls(chunks)
        if first[:2] == b"\x1f\x8b":
            self.compressed = True  # total_bytes is no longer the size of the text
            chunks = self._gunzip(chain(first, chunks))
            first = next(chunks, b"")
        encoding = utf16_encoding(first)
        if encoding:
            return copying(transcode_utf16(chain(first, chunks), encoding))
        refuse_binary(first, shown_path(self.source))
        first = first.removeprefix(codecs.BOM_UTF8)
        if self.compressed or self.total_bytes is None:
            return copying(chain(first, chunks))
        return self._reading_into(stream, first)

    def _reading_into(self, stream: BinaryIO, first: bytes) -> Fill:
        """`readinto` the buffer, up to the size the file had when opened (as _raw_chunks)."""
        served = [first] if first else []
        total = self.total_bytes or 0
        readinto = cast("io.BufferedReader", stream).readinto  # a file opened "rb" by _open

        def fill(view: memoryview) -> int:
            if served:
                return copy_into(view, served, 0)
            left = total - self.bytes_read
            if left <= 0:
                return 0
            try:
                got = readinto(view[:left]) or 0
            except OSError as err:
                raise BadInputError(f"{shown_path(self.source)}: read failed"
                                    f" ({err.strerror or err})") from None
            self.bytes_read += got
            return got

        return fill

    def _gunzip(self, chunks: Iterator[bytes]) -> Iterator[bytes]:
        """Inflate in bounded pieces (a small bomb must not become one huge bytes object)."""
        inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
        produced = 0
        for chunk in chunks:
            while chunk:
                try:
                    data = inflater.decompress(chunk, self.chunk_bytes)
                except zlib.error as err:
                    if not produced:
                        raise BadInputError(f"{shown_path(self.source)}: corrupt gzip data"
                                            f" ({err})") from None
                    self.warnings.append(f"{self.name}: gzip data corrupt after {produced} bytes;"
                                         " diagnosed what was readable")
                    return
                produced += len(data)
                if data:
                    yield data
                if inflater.unconsumed_tail:
                    chunk = inflater.unconsumed_tail
                    continue
                chunk = inflater.unused_data  # a further gzip member follows
                if chunk:
                    inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
        if not inflater.eof:
            if not produced:
                raise BadInputError(f"{shown_path(self.source)}: truncated gzip file"
                                    " (no data before the end)")
            self.warnings.append(f"{self.name}: truncated gzip file, read {produced} bytes;"
                                 " diagnosed what was readable")

    # --- splitting into records ---------------------------------------------------------

    def _records(self, fill: Fill) -> Iterator[Line]:
        """Records in order. The text is read into one of two reused buffers behind the
        unfinished line carried over (`pending`: the buffer's first `length` bytes); the
        complete lines go out as a block, one block held back (in the other buffer) so that
        the selector knows which block is the last (its tail is read in full)."""
        # pending is at most max_line_bytes at the top of the loop (longer is flushed below),
        # so a chunk always fits behind it; a file smaller than a chunk gets a chunk of its
        # size (a 2-line log does not zero-fill two 4 MiB buffers)
        known = self._text_bytes()
        chunk = self.chunk_bytes if known is None else max(1, min(self.chunk_bytes, known + 1))
        size = chunk + self.max_line_bytes + 1
        buffers = (bytearray(size), bytearray(size))
        current, length = 0, 0
        number = 1  # line number of the first line not yet emitted
        held: tuple[bytearray, int] | None = None  # a block of complete lines: (buffer, size)
        skipping = False  # inside an over-long record whose head was already emitted
        while True:
            buffer = buffers[current]
            got = fill(memoryview(buffer)[length:length + chunk])
            if not got:
                break
            end = length + got
            cut = buffer.rfind(b"\n", length, end)  # `pending` holds no newline
            if cut >= 0:
                previous, held = held, None  # None when skipping: flushed with the long line
                block_end = cut
                if skipping:
                    first = buffer.find(b"\n", 0, cut + 1)
                    yield from self._segments(_after_separator(bytes(buffer[:first])), number)
                    number, skipping = number + 1, False
                    if first < cut:  # lines follow: the block starts at the buffer's start
                        buffer[:cut - first - 1] = buffer[first + 1:cut]
                        block_end = cut - first - 1
                    else:
                        block_end = -1
                if block_end >= 0:
                    held = (buffer, block_end)
                    if self.selector is not None:  # its scan runs while `previous` is read
                        self.selector.prepare(buffer, block_end, self._text_bytes())
                if previous is not None:
                    number = yield from self._block(*previous, number, final=False)
                current ^= 1  # what follows the last newline goes to the other buffer
                length = end - cut - 1
                memoryview(buffers[current])[:length] = memoryview(buffer)[cut + 1:end]
            else:
                length = end
            if length > self.max_line_bytes:
                if held is not None:
                    number = yield from self._block(*held, number, final=False)
                    held = None
                pending = bytes(buffers[current][:length])
                head, skip_rest = self._flush_long(pending)
                if not skipping:
                    yield from self._segments(head, number)
                if skip_rest:
                    length, skipping = 0, True
                else:
                    length = len(pending) - len(head)
                    memoryview(buffers[current])[:length] = pending[len(head):]
        if held is not None:
            number = yield from self._block(*held, number, final=not length)
        if length and not skipping:
            yield from self._segments(bytes(buffers[current][:length]), number)

    def _block(self, block: bytearray, size: int, number: int, *, final: bool
               ) -> Generator[Line, None, int]:
        """The records of the complete lines block[:size]; returns the number of the next
        line. The buffer is reused after this: what leaves here are copies."""
        spans = EVERY_LINE
        if self.selector is not None:
            spans = self.selector.pick(block, self._text_bytes(), final, size)
        if spans is EVERY_LINE:
            for raw in bytes(memoryview(block)[:size]).split(b"\n"):
                yield from self._segments(raw, number)
                number += 1
            return number
        position = 0
        view = memoryview(block)
        for start, end in spans:
            number += block.count(b"\n", position, start)
            position = start
            yield from self._segments(bytes(view[start:end]), number)
        return number + block.count(b"\n", position, size) + 1

    def _text_bytes(self) -> int | None:
        """The size of the log's text, where known (not for stdin or gzip)."""
        return None if self.compressed else self.total_bytes

    def _flush_long(self, pending: bytes) -> tuple[bytes, bool]:
        """Split an over-long unfinished line: emit complete '\\r' segments, or cut the head."""
        cut = pending.rfind(b"\r")
        if cut >= 0 and len(pending) - cut <= self.max_line_bytes:
            return pending[: cut + 1], False
        return pending, True

    def _segments(self, raw: bytes, number: int) -> Iterator[Line]:
        # the memo holds records made under the default cap: a reader with a cap below the
        # memoised lengths (tests) makes its own
        memo = len(raw) <= _MEMO_BYTES <= self.max_line_bytes
        records = _RECORDS.get(raw) if memo else None
        if records is None:
            records = self._records_of(raw)
            if memo and (b"\r" not in raw or raw.count(b"\r") <= MANY_UPDATES):
                if len(_RECORDS) >= _MEMO_LINES:
                    _RECORDS.clear()
                _RECORDS[raw] = records
        for rank, text, truncated in records:
            if truncated:
                self.truncated_lines += 1
            yield Line(line=number, text=text, rank=rank, truncated=truncated)

    def _records_of(self, raw: bytes) -> list[tuple[int | None, str, bool]]:
        """(rank, text, truncated) of each non-blank '\\r' segment of one physical line."""
        if b"\r" not in raw:
            segments: list[bytes] | tuple[bytes] = (raw,)
        elif self.selector is not None and raw.count(b"\r") > MANY_UPDATES:
            segments = self.selector.pick_updates(raw)
        else:
            segments = raw.split(b"\r")
        records = []
        for segment in segments:
            truncated = len(segment) > self.max_line_bytes
            if truncated:
                segment = segment[: self.max_line_bytes]
            text = _clean(segment)
            if text.strip():
                rank, text = split_rank(text)
                records.append((rank, text, truncated))
        return records


def split_rank(text: str) -> tuple[int | None, str]:
    """Move a launcher's rank prefix out of the text: "[rank3]: x" -> (3, "x")."""
    if not text or not (text[0] in "[(" or text[0].isdigit()):
        return None, text
    match = _RANK_PREFIX.match(text)
    if not match:
        stamped = _STAMPED_RANK.match(text) if text[0].isdigit() else None
        return (int(stamped[2]), stamped[1] + text[stamped.end():]) if stamped else (None, text)
    digits = match.group("r1") or match.group("r2") or match.group("r3")
    rest = text[match.end():]
    if rest.startswith("[") and (inner := _RANK_PREFIX.match(rest)) and inner.group("r1"):
        # a launcher inside a launcher (srun's "1: " then torchrun's "[rank6]: "): the inner
        # one is the global rank, and tells apart the node's ranks printing at once
        return int(inner.group("r1")), rest[inner.end():]
    return (int(digits) if digits else None), rest


def iter_lines(source: str | os.PathLike[str], **options: Any) -> Iterator[Line]:
    """Convenience: the records of `source` (see LogReader)."""
    return iter(LogReader(source, **options))


def _clean(segment: bytes) -> str:
    """Decoded, with escape sequences and control characters removed (see sanitize); in a
    long line, runs of blanks cut to MAX_BLANK_RUN: every `\\s*...\\s*` in an extractor
    is quadratic in the length of a run (`lr` + 8,000 spaces took seconds a line)."""
    text = log_text(segment.decode("utf-8", "replace")).rstrip()
    if len(text) > _LONG_LINE:
        text = _BLANK_RUN.sub(lambda m: m[0][:MAX_BLANK_RUN], text)
    return text


def _after_separator(raw: bytes) -> bytes:
    """The part of a physical line after the over-long record that was already cut."""
    cut = raw.find(b"\r")
    return raw[cut + 1:] if cut >= 0 else b""
