"""Writing outputs: atomically (temp file + rename), never clobbering without `force`."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from minrepro.errors import OutputError


def write_atomic(text: str, path: str | os.PathLike[str], *, force: bool = False,
                 mode: int = 0o644) -> Path:
    """Write `text` to `path` and nowhere else; a reader never sees a half-written file."""
    target = Path(path)
    if target.is_dir():
        raise OutputError(f"{target}: is a directory")
    if target.exists() and not force:
        raise OutputError(f"{target}: already exists (use --force to overwrite)")
    try:
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    except OSError as err:
        raise OutputError(f"{target}: cannot write: {err.strerror or err}") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(text)
        os.chmod(tmp, mode)
        _move_into_place(tmp, target, force)
    except OSError as err:
        raise OutputError(f"{target}: cannot write: {err.strerror or err}") from None
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return target


def _move_into_place(tmp: str, target: Path, force: bool) -> None:
    if force:
        os.replace(tmp, target)
        return
    try:  # a hard link fails if the target appeared meanwhile: no silent clobbering
        os.link(tmp, target)
    except FileExistsError:
        raise OutputError(f"{target}: already exists (use --force to overwrite)") from None
    except OSError:  # filesystems without hard links
        os.replace(tmp, target)
