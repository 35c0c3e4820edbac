"""Writing outputs: atomically (temp file + rename), never clobbering without `force`."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from minrepro.errors import OutputError, shown_path


def write_atomic(text: str, path: str | os.PathLike[str], *, force: bool = False,
                 mode: int = 0o644, protect: tuple[str | os.PathLike[str], ...] = ()) -> Path:
    """Write `text` to `path` and nowhere else; a reader never sees a half-written file.

    `protect` names files that must never be replaced, not even with `force` (the input log).
    """
    target = Path(path)
    shown = shown_path(target)
    if target.is_dir():
        raise OutputError(f"{shown}: is a directory")
    if target.is_symlink() or (target.exists() and not target.is_file()):
        raise OutputError(f"{shown}: not a regular file (refusing to follow or replace it)")
    if target.exists() and any(_same_file(target, keep) for keep in protect):
        raise OutputError(f"{shown}: is the input log (refusing to overwrite it)")
    if target.exists() and not force:
        raise OutputError(f"{shown}: already exists (use --force to overwrite)")
    if not target.parent.is_dir():
        raise OutputError(f"{shown}: cannot write: no such directory")
    try:
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    except OSError as err:
        raise OutputError(f"{shown}: cannot write: {err.strerror or err}") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(text)
        os.chmod(tmp, mode)
        _move_into_place(tmp, target, force)
    except OSError as err:
        raise OutputError(f"{shown}: cannot write: {err.strerror or err}") from None
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return target


def _same_file(a: Path, b: str | os.PathLike[str]) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def _move_into_place(tmp: str, target: Path, force: bool) -> None:
    if force:
        os.replace(tmp, target)
        return
    try:  # a hard link fails if the target appeared meanwhile: no silent clobbering
        os.link(tmp, target)
    except FileExistsError:
        message = f"{shown_path(target)}: already exists (use --force to overwrite)"
        raise OutputError(message) from None
    except OSError:  # filesystems without hard links
        os.replace(tmp, target)
