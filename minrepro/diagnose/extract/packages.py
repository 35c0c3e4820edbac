"""Installed package versions the log shows -> EnvFact(key="package:<name>", value=version).

Real texts (name normalised as pip does, PEP 503: lower case, runs of -_. as one "-"):
  pip freeze / collect_env:  transformers==4.36.2   [pip3] numpy==1.24.1   'torch==2.0.1'
  conda:                     transformers=4.41.2=pyhd8ed1ab_0   [conda] pytorch-lightning 1.9.0
  banners:                   transformers version: 4.36.2   - `transformers` version: 4.35.2
                             - Datasets version: 2.21.0   Pytorch Ignite version: 0.3.0
  paths:                     site-packages/pytorch_lightning-1.9.0-py3.8.egg/...,
                             site-packages/opennre-0.1-py3.6.egg, .../foo-1.2.dist-info
  pip:                       Successfully installed peft-0.4.0 tokenizers-0.15.0
                             Requirement already satisfied: einops in ./site-packages (0.6.1)
torch itself is the env extractor's torch_version; Python, CUDA, cuDNN, the driver and the
compilers are not packages.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence

from minrepro.diagnose.literals import any_of
from minrepro.model import PACKAGE_FACT, EnvFact, Line, package_key
from minrepro.patterns import lazy

_MAX_PACKAGES = 200
_VERSION = r"\d+(?:\.\d+)+(?:(?:a|b|rc|post|dev)\d*)?(?:\.(?:post|dev)\d+)?(?:\+[\w.]+)?"
_NAME = r"[A-Za-z][A-Za-z0-9._-]*"

_PINNED = lazy(rf"(?:^|[\s\[\]'\"(,;])({_NAME})==({_VERSION})(?![\w.])")
_CONDA_PIN = lazy(rf"(?:^|\s)({_NAME})=(\d+\.\d+\.\d+[\w.+]*)(?:=\w+)?(?:\s|$|,)")
_PIN_CONTEXT = lazy(r"(?i)\bconda\b|\binstall|\bus(?:e|ing)\b|\bversion")
_CONDA_ROW = lazy(rf"^\s*\[conda\]\s+({_NAME})\s+({_VERSION})\s")
_BANNER = lazy(
    rf"^[\s*#>|-]*`?({_NAME}(?: [A-Za-z][\w-]*){{0,2}})`? version(?: \([^)]*\))?\s*[:=]\s*"
    rf"`?v?({_VERSION})(?![\w.])")
_PATH = lazy(
    rf"(?:site|dist)-packages[/\\]({_NAME}?)-({_VERSION}?)(?:-py\d[\w.]*|\.dist-info|\.egg-info"
    rf"|\.egg)(?![\w-])")
_INSTALLED = lazy(r"Successfully installed ((?:\S+-\d\S*\s*)+)")
_SATISFIED = lazy(
    rf"Requirement already satisfied: ({_NAME})(?:[<>=!~]=?\S+)? in \S+ \(({_VERSION})\)")
_NAME_VERSION = lazy(rf"^({_NAME})-({_VERSION})$")

#: Names that banners and pins print which are not installed Python packages.
_NOT_PACKAGES = frozenset({
    "torch", "pytorch", "python", "cuda", "cudnn", "cuda-runtime", "nvidia-driver", "driver",
    "gcc", "clang", "cmake", "libc", "os", "rocm", "hip-runtime", "miopen-runtime", "kernel",
    "platform", "version", "ver", "v", "my", "the", "latest", "current", "installed", "new",
    "old", "our", "your", "this", "nccl", "cublas", "cuda-used-to-build-pytorch", "is-debug-build",
})

TRIGGERS = ("==", "=", "version", "-packages", "installed", "[conda]", "satisfied")
_may_hold = any_of(TRIGGERS)


def _pair(match: re.Match[str]) -> tuple[str, str]:
    return match[1], match[2]


def _pairs(text: str) -> Iterator[tuple[str, str]]:
    """(name, version) pairs the line shows, in the order of the formats above."""
    if "==" in text:
        yield from (_pair(m) for m in _PINNED.finditer(text))
    elif "=" in text and _PIN_CONTEXT.search(text):  # name=1.2.3 is a pin only where one is said
        yield from (_pair(m) for m in _CONDA_PIN.finditer(text))
    if "[conda]" in text:
        yield from (_pair(m) for m in _CONDA_ROW.finditer(text))
    if "version" in text:
        yield from (_pair(m) for m in _BANNER.finditer(text))
    if "-packages" in text:
        yield from (_pair(m) for m in _PATH.finditer(text))
    if "Successfully installed" in text:
        match = _INSTALLED.search(text)
        for token in match[1].split() if match else ():
            pair = _NAME_VERSION.match(token.rstrip(","))
            if pair:
                yield pair[1], pair[2]
    if "satisfied" in text:
        yield from (_pair(m) for m in _SATISFIED.finditer(text))


class PackageExtractor:
    """Versions of installed packages -> EnvFact("package:<name>", version), each once."""

    TRIGGERS = TRIGGERS

    def __init__(self) -> None:
        self._seen: set[str] = set()

    def feed(self, line: Line) -> Sequence[EnvFact]:
        text = line.text
        if not _may_hold(text) or len(self._seen) >= _MAX_PACKAGES:
            return ()
        facts = []
        for name, version in _pairs(text):
            key = package_key(name)
            if key in self._seen or key.removeprefix(PACKAGE_FACT) in _NOT_PACKAGES:
                continue
            self._seen.add(key)
            facts.append(EnvFact(line=line.line, key=key, value=version))
        return facts

    def close(self) -> Sequence[EnvFact]:
        return ()
