"""The one exception family of minrepro. The CLI catches MinreproError once."""

from __future__ import annotations

import os

from minrepro.sanitize import shown


class MinreproError(Exception):
    """Base class: str(err) is the one line the CLI prints."""


class BadInputError(MinreproError):
    """The log cannot be read: missing, a directory, unreadable, not text, corrupt archive."""


class RulePackError(MinreproError):
    """A rule pack is malformed; the message names file, rule id and key."""


class RenderError(MinreproError):
    """A repro script could not be rendered (unknown cause, bad value, invalid Python)."""


class OutputError(MinreproError):
    """An output file cannot be written (exists without --force, unwritable)."""


def shown_path(path: str | os.PathLike[str]) -> str:
    """A path as it may appear in a one-line message: escapes removed, controls, bidi
    characters and undecodable bytes made visible (a newline cannot forge a line)."""
    return shown(os.fspath(path) if not isinstance(path, str) else path)
