"""Compiled hyperscan databases, kept between runs in the user's cache folder.

Compiling the selector's ~220 trigger literals takes ~55 ms and the matcher's hint sets ~35 ms:
on a 256 MiB log that is a tenth of the run, and a CLI process pays it every time. The compiled
form (hyperscan's own serialisation, ~300 KB) is saved under $MINREPRO_CACHE (default
$XDG_CACHE_HOME/minrepro, else ~/.cache/minrepro), named by a hash of everything that shapes
it (expressions, ids, flags, mode, hyperscan's version); loading it takes ~50 us. A file that
does not load (another build, a torn write; hyperscan checks what it loads) is compiled again;
where the folder cannot be written nothing is saved; MINREPRO_CACHE=off never reads or writes.
"""

from __future__ import annotations

import os
from pathlib import Path
from types import ModuleType
from typing import Any

_OFF = ("off", "0", "none")


def cache_dir() -> Path | None:
    """Where compiled databases are kept, or None when caching is switched off."""
    chosen = os.environ.get("MINREPRO_CACHE", "")
    if chosen.lower() in _OFF:
        return None
    if chosen:
        return Path(chosen)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "minrepro"


def cached(hyperscan: ModuleType, expressions: list[bytes], flags: list[int]) -> bool:
    """Whether a compiled database of these expressions is in the cache (loading is cheap)."""
    path = _path(hyperscan, expressions, flags)
    return path is not None and path.is_file()


def database(hyperscan: ModuleType, expressions: list[bytes], flags: list[int]) -> Any:
    """A block-mode database of `expressions` (ids 0..n-1), from the cache when it is there."""
    path = _path(hyperscan, expressions, flags)
    if path is not None:
        loaded = _load(hyperscan, path)
        if loaded is not None:
            return loaded
    db = hyperscan.Database()
    db.compile(expressions=expressions, ids=list(range(len(expressions))),
               elements=len(expressions), flags=flags)
    if path is not None:
        _save(hyperscan, db, path)
    return db


def _path(hyperscan: ModuleType, expressions: list[bytes], flags: list[int]) -> Path | None:
    """The cache file of a database (None when caching is off)."""
    folder = cache_dir()
    return folder / f"hs-{_key(hyperscan, expressions, flags)}.db" if folder else None


def _key(hyperscan: ModuleType, expressions: list[bytes], flags: list[int]) -> str:
    import hashlib  # noqa: PLC0415 - only a big log's selector needs it: start-up stays fast

    digest = hashlib.sha256()
    version = getattr(hyperscan, "__version__", "") + str(getattr(hyperscan, "HS_VERSION", ""))
    digest.update(version.encode())
    for expression, flag in zip(expressions, flags, strict=True):
        digest.update(len(expression).to_bytes(4, "little") + expression)
        digest.update(flag.to_bytes(8, "little"))
    return digest.hexdigest()[:32]


def _load(hyperscan: ModuleType, path: Path) -> Any | None:
    try:
        data = path.read_bytes()
        return hyperscan.loadb(data, hyperscan.HS_MODE_BLOCK)
    except Exception:  # noqa: BLE001 - missing, unreadable or not a database: compile instead
        return None


def _save(hyperscan: ModuleType, db: Any, path: Path) -> None:
    """Written to a temporary file and renamed: a concurrent reader sees all of it or none."""
    import tempfile  # noqa: PLC0415 - as hashlib above

    try:
        data = hyperscan.dumpb(db)
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=".hs-")
        try:
            with os.fdopen(handle, "wb") as out:
                out.write(data)
            os.replace(temporary, path)
        except BaseException:
            os.unlink(temporary)
            raise
    except Exception:  # noqa: BLE001 - a read-only home or a full disk: just not cached
        return
