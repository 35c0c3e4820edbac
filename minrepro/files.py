"""Writing outputs: atomically (temp file + rename), never clobbering without `force`, never
replacing the input, with the permissions the user's umask allows.

The temp file is created with `os.open(..., mode)` so that the OS applies the umask (a script
is 0o777 & ~umask, a report 0o666 & ~umask), as `open()` and `cp` do; its name is short
whatever the target's (a valid 255-byte name must not become an invalid temp name).
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

from minrepro.errors import OutputError, shown_path

STDIN = "-"
_TEMP_STEM_BYTES = 32


def write_atomic(text: str, path: str | os.PathLike[str], *, force: bool = False,
                 mode: int = 0o666, protect: tuple[str | os.PathLike[str], ...] = ()) -> Path:
    """Write `text` to `path` and nowhere else; a reader never sees a half-written file.

    `mode` is before the umask. `protect` names files that must never be replaced, not even
    with `force` (the input log; "-" is whatever file stdin reads), compared by device and
    inode, so no other spelling of the path (a link, `./x`, `/proc/self/fd/0`) gets past.
    """
    target = Path(path)
    shown = shown_path(target)
    _check_target(target, shown, protect, force)
    tmp = target.parent / _temp_name(target.name)
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0),
                     mode)
    except OSError as err:
        raise OutputError(f"{shown}: cannot write: {err.strerror or err}") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(text)
        _move_into_place(str(tmp), target, force)
    except OSError as err:
        raise OutputError(f"{shown}: cannot write: {err.strerror or err}") from None
    finally:
        if os.path.lexists(tmp):
            os.unlink(tmp)
    return target


def _check_target(target: Path, shown: str, protect: tuple[str | os.PathLike[str], ...],
                  force: bool) -> None:
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


def _temp_name(name: str) -> str:
    """`.<start of name>.<random>.tmp`, at most ~60 bytes whatever the length of `name`."""
    stem = name.encode("utf-8", "surrogateescape")[:_TEMP_STEM_BYTES]
    return f".{stem.decode('utf-8', 'ignore')}.{secrets.token_hex(6)}.tmp"


def _same_file(target: Path, keep: str | os.PathLike[str]) -> bool:
    try:
        mine = target.stat()
        theirs = os.fstat(0) if os.fspath(keep) == STDIN else os.stat(keep)
    except OSError:
        return False
    return (mine.st_dev, mine.st_ino) == (theirs.st_dev, theirs.st_ino)


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
