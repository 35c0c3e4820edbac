"""A progress line on stderr for big inputs on an interactive terminal; silent otherwise."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Protocol

MIN_BYTES = 50 * 1024 * 1024  # smaller inputs finish before a bar would help
INTERVAL_S = 0.5


class Readable(Protocol):
    """What the progress line reads of a log reader (bytes read so far, the total if known)."""

    @property
    def bytes_read(self) -> int: ...

    @property
    def total_bytes(self) -> int | None: ...


@contextmanager
def progress_for(reader: Readable, *, enabled: bool = True) -> Iterator[None]:
    if not enabled or not sys.stderr.isatty():
        yield
        return
    stop = threading.Event()
    thread = threading.Thread(target=_show, args=(reader, stop), daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


def _show(reader: Readable, stop: threading.Event) -> None:
    start = time.monotonic()
    shown = False
    while not stop.wait(INTERVAL_S):
        total = reader.total_bytes
        if not total or total < MIN_BYTES:
            continue
        done = reader.bytes_read
        rate = done / max(time.monotonic() - start, 1e-6) / 2**20
        sys.stderr.write(f"\rminrepro: {done / 2**20:,.0f}/{total / 2**20:,.0f} MiB"
                         f" ({100 * done / total:.0f}%) {rate:,.0f} MiB/s ")
        sys.stderr.flush()
        shown = True
    if shown:
        sys.stderr.write("\r" + " " * 60 + "\r")
        sys.stderr.flush()
