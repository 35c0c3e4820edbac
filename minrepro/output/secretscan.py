"""Find credentials in log text and mask them, beside the redactor's names and addresses.

Training logs print environment dumps, launch commands and URLs: Hugging Face / OpenAI /
GitHub / AWS tokens, bearer JWTs, `https://user:password@host` remotes and `password=...`
arguments end up in them, and reports are pasted into public trackers. Each kind is one
regex, compiled once; a match becomes `<secret>` (a URL keeps its scheme and host).
Patterns are anchored on a prefix the token format fixes, so ordinary text is left alone.
"""

from __future__ import annotations

import re

SECRET = "<secret>"

_TOKENS = re.compile(
    r"(?<![\w-])(?:"
    r"hf_[A-Za-z0-9]{20,}"  # Hugging Face
    r"|sk-(?:proj-|ant-)?[A-Za-z0-9_-]{20,}"  # OpenAI, Anthropic
    r"|gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}"  # GitHub
    r"|(?:AKIA|ASIA)[0-9A-Z]{16}"  # AWS access key ids
    r"|xox[abposr]-[A-Za-z0-9-]{10,}"  # Slack
    r"|glpat-[A-Za-z0-9_-]{20,}"  # GitLab
    r"|eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*"  # a JWT (bearer or not)
    r")")
_BEARER = re.compile(  # the credential holds a digit: `Basic information_...` is prose
    r"(?i)\b(?P<key>bearer|token|basic)\s+(?=[A-Za-z._~+/=-]*\d)(?P<value>[A-Za-z0-9._~+/=-]{16,})")
_URL_CREDENTIALS = re.compile(r"(?P<scheme>\b[a-z][a-z0-9+.-]{1,15}://)[^\s/@:]+:[^\s/@]+@",
                              re.IGNORECASE)
_ASSIGNED = re.compile(
    r"(?i)(?P<key>\b[\w.-]*(?:password|passwd|pwd|token|secret|api[_-]?key|access[_-]?key"
    r"|private[_-]?key|auth)\b['\"]?\s*[:=]\s*)(?P<quote>['\"]?)(?P<value>[^\s'\",;]{4,})")

_NOT_SECRETS = frozenset({"none", "null", "false", "true", "***", "unset", "empty"})
_NUMBER = re.compile(r"[-+]?[\d.,_eE+-]+")  # `num_token=1024` counts, it is no secret


def mask_secrets(text: str) -> str:
    """`text` with tokens, bearer credentials, URL passwords and `key=secret` values masked."""
    text = _URL_CREDENTIALS.sub(lambda m: f"{m['scheme']}{SECRET}@", text)
    text = _TOKENS.sub(SECRET, text)
    text = _BEARER.sub(lambda m: f"{m['key']} {SECRET}", text)
    return _ASSIGNED.sub(_assigned, text)


def _assigned(match: re.Match[str]) -> str:
    value = match["value"]
    if value.startswith("<") or value.lower() in _NOT_SECRETS or _NUMBER.fullmatch(value):
        return match.group(0)
    return f"{match['key']}{match['quote']}{SECRET}"
