"""What a check reads (`Inputs`) and what it says (`CheckResult`): the types the check
modules share, kept apart from the registry so those modules import no registry."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from minrepro.model import Name, RootClass
from minrepro.preflight.config import RunConfig
from minrepro.preflight.data import DataSample
from minrepro.preflight.machine import Machine
from minrepro.preflight.memory import ModelShape


class Status(Name):
    PASS = "pass"
    FAIL = "fail"
    CANNOT_CHECK = "cannot_check"


@dataclass(frozen=True)
class Inputs:
    """Everything the checks may look at; a missing part makes its checks `cannot_check`."""

    config: RunConfig
    machine: Machine
    model: dict[str, Any] | None = None  # the model's config.json
    shape: ModelShape | None = None  # its sizes, when the config has them
    train: DataSample | None = None
    eval: DataSample | None = None
    lock: dict[str, str] | None = None  # package -> version pinned by a lock file
    lock_name: str | None = None


@dataclass(frozen=True)
class Outcome:
    """What a check function returns: its status and a one-line reason."""

    status: Status
    detail: str


@dataclass(frozen=True)
class CheckResult:
    """One check's verdict, naming the taxonomy cause it prevents (None where the failure it
    prevents has no cause in the taxonomy) and the root class such a failure has."""

    name: str
    cause: str | None
    root: RootClass
    status: Status
    detail: str


def passed(detail: str) -> Outcome:
    return Outcome(Status.PASS, detail)


def failed(detail: str) -> Outcome:
    return Outcome(Status.FAIL, detail)


def cannot(detail: str) -> Outcome:
    return Outcome(Status.CANNOT_CHECK, detail)


CheckFunction = Callable[[Inputs], Outcome]
