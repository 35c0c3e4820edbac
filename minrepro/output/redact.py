"""Mask what identifies a person or a machine in log text before it is pasted publicly.

Masked: credentials (tokens, URL passwords, `password=...`: see secretscan), home
directories (`/home/alice/x` -> `/home/<user>/x`, `/Users/alice`, `/u/alice`,
`C:\\Users\\alice`; `/root` stays, it names no one), the current user name and the local
host name (whole words, any case), `host: name` fields and `name:port` / `user@host`
patterns, IPv4/IPv6 addresses (-> `<ip>`; loopback and unspecified addresses stay, they
identify nothing and matter for NCCL/rendezvous problems) and e-mail addresses.

Pure functions and regexes compiled once. Heuristics lean towards keeping what a maintainer
needs: `train.py:88` and `Indexing.cu:1290` are file:line, not host:port; `cuda:1` is a
device; `Acc@1` is a metric.
"""

from __future__ import annotations

import ast
import getpass
import ipaddress
import re
import socket
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from minrepro.output.secretscan import mask_secrets

USER, HOST, IP, EMAIL = "<user>", "<host>", "<ip>", "<email>"

# Account names that identify no one; masking them would only blur the text ("root cause").
_GENERIC_NAMES = frozenset({
    "root", "user", "admin", "ubuntu", "runner", "jovyan", "nobody", "ec2-user", "localhost",
    "colab", "docker", "default", "public",
})
_MIN_NAME_LEN = 3  # shorter names ("u", "li") would mask fragments of ordinary words

_HOME_POSIX = re.compile(  # /home, /Users, /users, /u (NFS homes)
    r"(?P<pre>/(?:home|[Uu]sers)/|(?<![\w.-])/u/)(?!<user>)(?P<name>[^/\s'\"<>:]+)")
_CLOUD_HOST = re.compile(  # AWS/GCP-style names that spell the private address out
    r"(?<![\w-])ip-\d{1,3}-\d{1,3}-\d{1,3}-\d{1,3}(?:\.[A-Za-z0-9-]+)*(?![\w-])")
_HOME_WINDOWS = re.compile(
    r"(?P<pre>\b[A-Za-z]:(?:\\{1,2}|/)Users(?:\\{1,2}|/))(?!<user>)(?P<name>[^\\/\s'\"<>:]+)",
    re.IGNORECASE)
_EMAIL = re.compile(
    r"(?<![\w.+-])[A-Za-z0-9][\w.+-]*@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,24}"
    r"(?![\w(])")  # `q@k.transpose(...)` is a matmul, not an address
_USER_AT_HOST = re.compile(  # both sides >= 2 characters: `q@k` and `x@w` are matmuls
    r"(?<![\w.+-])(?P<user>[A-Za-z_][\w.-]+)@(?P<host>[A-Za-z][\w-]+(?:\.[\w-]+)*)(?![\w.(-])")
_HOST_FIELD = re.compile(
    r"\b(?P<key>host(?:name)?|MASTER_ADDR)(?P<sep>\s*[:=]\s*)(?P<value>[^\s,;'\")]+)",
    re.IGNORECASE)
_HOST_PORT = re.compile(
    r"(?<![\w.<-])(?<![^/]/)(?P<host>[A-Za-z][A-Za-z0-9-]*(?:\.[A-Za-z0-9-]+)*)"
    r":(?P<port>\d{2,5})(?![\w:]|\.\d)")
_IPV4 = re.compile(r"(?<![\w.])(?:\d{1,3}\.){3}\d{1,3}(?![\w]|\.\d)")
_IPV6 = re.compile(r"(?<![\w:.])[0-9A-Fa-f:]*:[0-9A-Fa-f:]*:[0-9A-Fa-f:.]*(?:%\w+)?(?![\w:])")

# `name.ext:NN` with a source-file extension is file:line; these words before ':NN' are not hosts.
_FILE_EXTENSIONS = frozenset({
    "py", "pyx", "pyi", "cu", "cuh", "cpp", "cc", "cxx", "c", "h", "hpp", "so", "yaml", "yml",
    "json", "txt", "log", "ipynb", "sh", "md", "toml", "cfg", "ini", "csv", "js", "rs", "go",
})
_NOT_HOSTS = frozenset({"cuda", "cpu", "mps", "xla", "xpu", "hpu", "meta", "localhost", "line",
                        "http", "https", "tcp", "file", "env", "epoch", "step", "rank"})


@dataclass(frozen=True)
class Redactor:
    """Masks one text at a time. `users`/`hosts`: names to mask as whole words."""

    users: tuple[str, ...] = ()
    hosts: tuple[str, ...] = ()
    _masks: dict[str, str] = field(init=False, repr=False, compare=False)
    _names: re.Pattern[str] | None = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        masks = {n.lower(): HOST for n in _useful(self.hosts)}
        masks.update({n.lower(): USER for n in _useful(self.users)})
        object.__setattr__(self, "_masks", masks)
        object.__setattr__(self, "_names", _names_pattern(masks))

    def __call__(self, text: str) -> str:
        return redact(text, self)

    def mask_names(self, text: str) -> str:
        """Whole-word, any-case occurrences of the user and host names."""
        if self._names is None:
            return text
        return self._names.sub(lambda m: self._masks[m.group(0).lower()], text)


def _names_pattern(masks: dict[str, str]) -> re.Pattern[str] | None:
    """One alternation of whole-word names, longest first (`node3.lab` before `node3`)."""
    if not masks:
        return None
    alternation = "|".join(re.escape(n) for n in sorted(masks, key=len, reverse=True))
    return re.compile(rf"(?<![\w-])(?:{alternation})(?![\w-])", re.IGNORECASE)


def _useful(names: Iterable[str]) -> list[str]:
    return [n for n in names
            if n and len(n) >= _MIN_NAME_LEN and n.lower() not in _GENERIC_NAMES]


def local_redactor(*, user: str | None = None, hostname: str | None = None) -> Redactor:
    """A Redactor for this machine's user and host names (both injectable for tests)."""
    user = _current_user() if user is None else user
    hostname = _local_hostname() if hostname is None else hostname
    hosts = (hostname, hostname.split(".", 1)[0]) if hostname else ()
    return Redactor(users=(user,) if user else (), hosts=hosts)


def _current_user() -> str:
    try:
        return getpass.getuser()
    except Exception:  # no USER variable and no passwd entry (some containers): nothing to mask
        return ""


def _local_hostname() -> str:
    try:
        return socket.gethostname()
    except OSError:
        return ""


# --- the masking, one pass per kind; order matters (e-mails before user@host) ---------------


def redact(text: str, redactor: Redactor | None = None) -> str:
    """`text` with home paths, names, hosts, addresses and e-mails masked."""
    if not text:
        return text
    text = mask_secrets(text)
    text = mask_home_paths(text)
    text = _CLOUD_HOST.sub(HOST, text)
    text = _EMAIL.sub(EMAIL, text)
    text = _USER_AT_HOST.sub(_user_at_host, text)
    text = _IPV4.sub(_ipv4, text)
    text = _IPV6.sub(_ipv6, text)
    text = _HOST_FIELD.sub(lambda m: f"{m['key']}{m['sep']}{_host_value(m['value'])}", text)
    text = _HOST_PORT.sub(_host_port, text)
    return redactor.mask_names(text) if redactor is not None else text


def mask_home_paths(text: str) -> str:
    """`/home/alice/x` -> `/home/<user>/x` (also /Users/ and C:\\Users\\); `/root` stays."""
    text = _HOME_POSIX.sub(lambda m: m["pre"] + USER, text)
    return _HOME_WINDOWS.sub(lambda m: m["pre"] + USER, text)


def _user_at_host(match: re.Match[str]) -> str:
    return f"{USER}@{HOST}"


def _host_value(value: str) -> str:
    if value.startswith("<") or value.lower() in _NOT_HOSTS:
        return value
    host, sep, port = value.rpartition(":")
    if sep and port.isdigit():
        return f"{HOST if not _keeps_ip(host) else host}:{port}"
    return value if _keeps_ip(value) else HOST


def _keeps_ip(text: str) -> bool:
    """Loopback and unspecified addresses identify nothing; keep them."""
    try:
        address = ipaddress.ip_address(text.strip("[]"))
    except ValueError:
        return False
    return address.is_loopback or address.is_unspecified


def _ipv4(match: re.Match[str]) -> str:
    text = match.group(0)
    try:
        ipaddress.IPv4Address(text)
    except ValueError:  # 999.1.2.3 is no address
        return text
    return text if _keeps_ip(text) else IP


def _ipv6(match: re.Match[str]) -> str:
    text = match.group(0)
    try:
        ipaddress.IPv6Address(text.split("%", 1)[0])
    except ValueError:  # times (12:30:45), C++ scopes (c10::Error) are no address
        return text
    return text if _keeps_ip(text.split("%", 1)[0]) else IP


def _host_port(match: re.Match[str]) -> str:
    host = match["host"]
    if int(match["port"]) > 65535 or not _looks_like_host(host):
        return match.group(0)
    return f"{HOST}:{match['port']}"


def _looks_like_host(host: str) -> bool:
    """A machine name: `gpu-node-3`, `node17`, `worker.lab.internal`, not `train.py` or `cuda`."""
    lowered = host.lower()
    if lowered in _NOT_HOSTS or lowered.rsplit(".", 1)[-1] in _FILE_EXTENSIONS:
        return False
    return any(c.isdigit() or c in "-." for c in host)


def redact_script(script: str | None, mask: Callable[[str], str]) -> str | None:
    """A repro script as a report shows it: names, paths and secrets in its header comment
    and strings masked, where the masked text is still valid Python (else the comments)."""
    if script is None or mask is str:
        return script
    masked = mask(script)
    try:
        ast.parse(masked)
    except SyntaxError:
        masked = "".join(mask(line) if line.lstrip().startswith("#") else line
                         for line in script.splitlines(keepends=True))
    return masked
