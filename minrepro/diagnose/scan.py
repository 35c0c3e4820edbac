"""Chunk-level selection of the lines worth a per-line look, for logs of many gigabytes.

A per-line Python loop costs ~1 us a line before any regex runs; a week-long run's log has
hundreds of millions of lines. So the reader hands whole blocks of lines to a `LineSelector`,
which finds trigger words in the block at C speed (`engines`: hyperscan, Aho-Corasick, or one
trie-shaped `re` pattern over the lower-cased bytes) and picks:

* every line of the first HEAD_BYTES and the last TAIL_BYTES (start-up facts, the failure),
* each line holding a trigger (an error, an OOM report, a watchdog line, a NaN ...), with
  CONTEXT_BEFORE / CONTEXT_AFTER lines around it (frames, continuation lines, evidence nearby)
  and, past those, the rest of an indented run (a traceback's frames, up to its exception line),
* SAMPLES_PER_BLOCK lines spread evenly through each block, so the metric curves keep their
  shape (the curve analyzer decimates to a few hundred points anyway: a log so big that its
  blocks would give more than SAMPLES_PER_LOG gets fewer a block, down to
  MIN_SAMPLES_PER_BLOCK); of a line rewritten by '\r' (a progress bar) a sample is its last
  update, one point as for any other line.

Small logs (under HEAD_BYTES + TAIL_BYTES) are read line by line in full.

The trigger scan of a block can start ahead (`prepare`), in a thread: hyperscan drops the GIL
while it scans, so the next block is searched while the reader counts and reads the lines of
this one (on a 256 MiB log the two take ~0.1 s each).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator

from minrepro.diagnose import engines

HEAD_BYTES = 256 * 1024
TAIL_BYTES = 128 * 1024
CONTEXT_BEFORE = 3
CONTEXT_AFTER = 12
SAMPLES_PER_BLOCK = 48
# A metric's series keeps 512 points (analyze/series.py), and a sampled line holds a given
# metric only now and then (one line kind of several): four times that is plenty.
SAMPLES_PER_LOG = 2048
MIN_SAMPLES_PER_BLOCK = 8
MAX_AHEAD = 2  # scans started ahead: the block being read in and the one read before it
MAX_HITS_PER_TRIGGER = 128  # occurrences of one trigger looked at per block (floods)
KEEP_UPDATES = 16  # '\r' updates kept at each end of a line rewritten thousands of times
MANY_UPDATES = 512  # a line with more '\r' updates than this is thinned like a block
EVERY_LINE = None  # what `pick` returns for a block whose lines are all read
# A hit's context goes on past CONTEXT_AFTER while the lines stay indented (a traceback's
# frames, a report's body) and takes the first line after them (the exception), at most
# this many lines more: a 40-frame traceback in the middle of a big log is read whole.
MAX_CONTINUATION = 400
#: A block is the reader's reused buffer (a bytearray, read into in place: no copy of a 4 MiB
#: chunk, no fresh pages to fault in) or, from tests and callers, plain bytes.
Block = bytes | bytearray

class LineSelector:
    """Decides which lines of a block reach the per-line stages."""

    def __init__(self, triggers: Iterable[str], *, whole_words: Iterable[str] = (),
                 engine: str = "auto") -> None:
        """`triggers`: words whose lines are kept (any case); `whole_words`: the same, as
        whole words only ("nan", not "finance") and in the cases listed ("inf", "Inf": not
        the INF that begins every INFO line); `engine`: one of `engines.ENGINES`, or "auto"
        for the fastest installed."""
        self.triggers = tuple(sorted({t.lower() for t in triggers if t}))
        self.words = tuple(sorted({w for w in whole_words if w}))
        self._engine_name = engine
        self._engine: engines.Engine | None = None  # built on the first big block
        self.offset = 0  # bytes of the input seen before the current block
        self._ahead: list[tuple[Block, int, threading.Thread, list[engines.Hits]]] = []

    def pick(self, block: Block, total: int | None, final: bool, size: int | None = None
             ) -> Iterator[tuple[int, int]] | None:
        """(start, end) byte spans of the chosen lines of `block[:size]` (lines split on
        b'\\n'), or EVERY_LINE when all of them are (a small log, a block inside the head or
        tail). `size` is where the block ends in a reused buffer (default: all of it); the
        byte there, if any, is the newline that ended the block's last line."""
        size = len(block) if size is None else size
        prepared = self._claim(block, size)
        start_offset = self.offset
        self.offset += size + 1
        full_until = max(0, HEAD_BYTES - start_offset)
        full_from = size - TAIL_BYTES if final else size + 1
        if _read_in_full(total):
            full_until = size + 1
        if full_until >= full_from or full_until > size:
            return EVERY_LINE
        if prepared is None:
            prepared = self._hits(memoryview(block)[:size])
        hits = {h: True for h in _thin(prepared)}
        for sample in _samples(size, _samples_for(size, total)):
            hits.setdefault(sample, False)  # a sample is one line, without context
        return _spans(block, size, sorted(hits.items()), full_until, full_from)

    def prepare(self, block: Block, size: int, total: int | None) -> None:
        """Start the trigger scan of `block[:size]` in a thread, to be picked up by `pick`
        (the reader prepares a block as it reads it in, then reads the block before it).
        The caller leaves the block's bytes alone until `pick` has had them. An engine that
        holds the GIL (the `re` one) would gain nothing: it scans in `pick`."""
        if _read_in_full(total):
            return  # no scan: small logs are read line by line (nor is the engine built)
        engine = self._built()
        if not engine.drops_gil:
            return
        while len(self._ahead) >= MAX_AHEAD:
            self._ahead.pop(0)[2].join()
        found: list[engines.Hits] = []
        view = memoryview(block)[:size]
        thread = threading.Thread(target=lambda: found.append(engine.hits(view)), daemon=True)
        thread.start()
        self._ahead.append((block, size, thread, found))

    def _claim(self, block: Block, size: int) -> engines.Hits | None:
        """The hits of a scan `prepare` started for this block (done by now), or None. Every
        scan started on the block ends here, before the block's buffer is read into again."""
        ahead = next((a for a in self._ahead if a[0] is block), None)  # one a buffer
        if ahead is None:
            return None
        self._ahead.remove(ahead)
        ahead[2].join()
        # an empty list: the scan failed in its thread; the caller scans again, to raise here
        return ahead[3][0] if ahead[1] == size and ahead[3] else None

    def _built(self) -> engines.Engine:
        if self._engine is None:
            self._engine = engines.build(self._engine_name, self.triggers, self.words)
        return self._engine

    def _hits(self, block: engines.Buffer) -> engines.Hits:
        """(offset, which trigger) of every trigger occurrence in the block."""
        return self._built().hits(block)

    def pick_updates(self, raw: bytes) -> list[bytes]:
        """Of a line rewritten by '\\r' many times (a progress bar), the first and last few
        updates, those holding a trigger, and SAMPLES_PER_BLOCK spread evenly (the curve)."""
        spans: set[tuple[int, int]] = set()
        start = 0
        for _ in range(KEEP_UPDATES):
            if start > len(raw):
                break
            end = _find_or_end(raw, b"\r", start)
            spans.add((start, end))
            start = end + 1
        end = len(raw)
        for _ in range(KEEP_UPDATES):
            if end < 0:
                break
            begin = raw.rfind(b"\r", 0, end) + 1
            spans.add((begin, end))
            end = begin - 1
        for hit in [*_thin(self._hits(raw)), *_samples(len(raw))]:
            begin = raw.rfind(b"\r", 0, hit) + 1
            spans.add((begin, _find_or_end(raw, b"\r", hit)))
        return [raw[a:b] for a, b in sorted(spans)]


def _read_in_full(total: int | None) -> bool:
    """Whether a log of `total` bytes is small enough to read every line of (no scan)."""
    return total is not None and total <= HEAD_BYTES + TAIL_BYTES


def _thin(hits: list[tuple[int, object]]) -> list[int]:
    """Offsets to look at: of each trigger, its first and last occurrences in the block (a block
    full of one repeated message says no more than that, and must not hide a rarer trigger)."""
    if len(hits) <= MAX_HITS_PER_TRIGGER:
        return [offset for offset, _ in hits]
    by_trigger: dict[object, list[int]] = {}
    for offset, trigger in hits:
        by_trigger.setdefault(trigger, []).append(offset)
    half = MAX_HITS_PER_TRIGGER // 2
    kept: list[int] = []
    for offsets in by_trigger.values():
        offsets.sort()
        kept += offsets if len(offsets) <= 2 * half else offsets[:half] + offsets[-half:]
    return kept


def _find_or_end(data: Block, needle: bytes, start: int, size: int | None = None) -> int:
    end = len(data) if size is None else size
    found = data.find(needle, start, end)
    return end if found < 0 else found


def _samples_for(size: int, total: int | None) -> int:
    """How many samples a block of `size` bytes gets in a log of `total` bytes."""
    if not total:
        return SAMPLES_PER_BLOCK
    share = SAMPLES_PER_LOG * size // total
    return max(MIN_SAMPLES_PER_BLOCK, min(SAMPLES_PER_BLOCK, share))


def _samples(size: int, count: int = SAMPLES_PER_BLOCK) -> range:
    step = max(1, size // count)
    return range(step // 2, size, step)


def _all_spans(block: Block, size: int | None = None) -> Iterator[tuple[int, int]]:
    size = len(block) if size is None else size
    return _all_spans_between(block, size, 0, size + 1)


def _spans(block: Block, size: int, hits: list[tuple[int, bool]], full_until: int,
           full_from: int) -> Iterator[tuple[int, int]]:
    """Lines in the full head/tail ranges, and lines at (around) each hit, once each, in order."""
    last_end = -1  # end of the last emitted line
    for start, end in _all_spans_between(block, size, 0, full_until):
        yield start, end
        last_end = end
    anchors = [(h, context) for h, context in hits if full_until <= h < full_from]
    for hit, context in anchors:
        if hit <= last_end:
            continue
        start = _line_start(block, hit)
        for _ in range(CONTEXT_BEFORE if context else 0):
            if start <= last_end + 1 or start == 0:
                break
            start = _line_start(block, start - 1)
        start = max(start, last_end + 1)
        if not context:  # a sample, for the curves: one line, and of a progress bar its last state
            end = _find_or_end(block, b"\n", start, size)
            if end > last_end:
                yield _last_update(block, start, end), end
                last_end = end
            continue
        budget = 1 + CONTEXT_AFTER + _lines_before(block, start, hit)
        continued = 0
        while start <= size and start < full_from:
            end = _find_or_end(block, b"\n", start, size)
            yield start, end
            indented = block.startswith((b" ", b"\t"), start)
            last_end, start = end, end + 1
            budget -= 1
            if budget <= 0:  # past the context: on only through an indented run (frames)
                if not indented or continued >= MAX_CONTINUATION:
                    break
                continued += 1
    if full_from <= size:
        tail_start = max(_line_start(block, full_from), last_end + 1)
        yield from _all_spans_between(block, size, tail_start, size + 1)


def _all_spans_between(block: Block, size: int, begin: int, until: int
                       ) -> Iterator[tuple[int, int]]:
    start = begin
    while start < until and start <= size:
        end = _find_or_end(block, b"\n", start, size)
        yield start, end
        start = end + 1


def _last_update(block: Block, start: int, end: int) -> int:
    """Where the last non-empty '\r' update of the line block[start:end] starts."""
    while end > start and block[end - 1] == 0x0D:  # "\r\n" line ends, a bar's final '\r'
        end -= 1
    return block.rfind(b"\r", start, end) + 1 or start


def _line_start(block: Block, position: int) -> int:
    return block.rfind(b"\n", 0, position) + 1


def _lines_before(block: Block, start: int, hit: int) -> int:
    return block.count(b"\n", start, hit)
