"""A root rule: which failures it matches (exception type, message, where it was raised) and
the root class it gives them. The table of rules is `roots.py`."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from minrepro.model import Failure, Frame, RootClass
from minrepro.patterns import lazy

USER, LIBRARY, ANY = "user", "library", "any"
# the user's own call: raised in the user's code, in a library's __getattr__ (an attribute the
# user's code asked a library object for: `model.forward_train` on a DDP wrapper) or torch's
# call of the user's forward, or where no frame was printed
CALLER = "caller"
# library frames that only pass the user's own call on: an attribute lookup, and torch's
# Module.__call__ running the user's forward (`forward() takes 3 positional arguments...`)
_ATTRIBUTE_LOOKUP = ("__getattr__", "__getattribute__")
_DISPATCH = (*_ATTRIBUTE_LOOKUP, "_call_impl", "_wrapped_call_impl")
CALLED = "called"  # raised inside a library that the user's own code called (a user frame above)
IMPORT = "import"  # raised while an installed package was being imported (its module body)
# a library's own code asking its own object (`self.oft_diag`) for the attribute the message
# says is missing: the library's objects do not fit its own code (a bug, or a half upgrade)
OWN = "own"
# raised by torch's Module.__call__ running a forward that the user's own code called (the
# frame above torch's dispatch is the user's): the call and the module are the user's to fit
USER_CALL = "user-call"
# the raising line does not read the missing attribute off `self` (an attribute the class's
# own method asks of it is one its own code never set: the code's, whatever the class is named)
NOT_ASKED_OF_SELF = "not-asked-of-self"
# a module the code imports is missing, and its name is a folder the user's own code runs
# from (`python slot_attention/train.py` importing `slot_attention`): the project's own
# package, not on the path the command gives
OWN_PACKAGE = "own-package"
VERSION = "version_incompatibility"  # the cause the version rules' placements corroborate
_MISSING = lazy(r"has no attribute '(\w+)'")
_NO_MODULE = lazy(r"No module named '(\w+)")
_FOLDERS = lazy(r"[\\/]")
#: Where the API name lists a rule may name (`api="tensor_api"`) are kept, one name a line.
API_DIR = Path(__file__).parent


@dataclass(frozen=True)
class RootRule:
    id: str
    root: RootClass | None  # None: this evidence does not decide, stop looking
    title: str
    fix: str
    types: tuple[str, ...] = ()  # exception short names (any, when empty)
    message: str = ""  # a regex the message (first lines) must match ("" : any)
    raised_in: str = ANY  # user | library | caller | called | import | own | user-call | any
    in_worker: bool | None = None  # raised inside a DataLoader worker (None: either)
    unless: str = ""  # a regex that, found in the failure's message, rules this rule out
    scope: str = "all"  # where `message` looks: "all" (headline + traceback) or "raise"
    # (headline + the code line that raised: a traceback's other lines name cfg and args)
    packages: tuple[str, ...] = ()  # the package it was raised in is one of these (any: ())
    # a regex the name of the function that raised, or of one of its callers in the same
    # code (the frames out to the nearest frame of another package), must match ("": any)
    function: str = ""
    # the attribute the message says is missing is one this API has in current releases
    # (a list of names in API_DIR/<api>.txt): the installed release is older than the code
    api: str = ""
    # only where the log shows the run trained before it failed (the same kernels ran for
    # hours, then one failed: the card, not the code)
    after_training: bool = False
    # only where a progress bar over no item came right before the failure (`0it [00:00`):
    # the loop had no batch, and the code after it failed on what the loop never set
    after_no_batches: bool = False
    # a cause this placement is evidence of: a finding of it on the failure's own lines that
    # is too weak alone gains CORROBORATION (a keyword refused at a library call, and the
    # version rule's own match on the same exception line)
    corroborates: str = ""
    # a cause this placement rules out: a finding of it on the failure's own lines is dropped
    # (the project's own package missing is no package to install)
    refutes: str = ""

    def matches(self, failure: Failure, text: str, in_worker: bool,
                trained: bool = False, no_batches: bool = False) -> bool:
        short = failure.short_type
        if self.types and short not in self.types:
            return False
        if self.after_training and not trained:
            return False
        if self.after_no_batches and not no_batches:
            return False
        if self.in_worker is not None and self.in_worker != in_worker:
            return False
        if self.api and not _missing_from_api(self.api, failure.headline):
            return False
        if not self._raised_where(failure):
            return False
        if self.packages and (failure.library_frame is None
                              or failure.library_frame.package not in self.packages):
            return False
        if self.function and not any(re.fullmatch(self.function, frame.function or "")
                                     for frame in _raising_code(failure)):
            return False
        if self.unless and re.search(self.unless, failure.headline):
            return False  # what the failure says, not the lines printed after it
        if self.scope == "raise":
            raising = failure.frames[-1].code if failure.frames else None
            text = failure.headline + "\n" + (raising or "")
        return not self.message or re.search(self.message, text) is not None

    def _raised_where(self, failure: Failure) -> bool:
        """Where it was raised is known only from frames: none printed decides neither way
        (but for `caller`, which takes a frameless failure as the user's)."""
        library = failure.library_frame
        if self.raised_in == USER:
            return bool(failure.frames) and library is None
        if self.raised_in == LIBRARY:
            return library is not None
        if self.raised_in == CALLER:
            return library is None or library.function in _DISPATCH
        if self.raised_in == IMPORT:
            return library is not None and library.function == "<module>"
        if self.raised_in == CALLED:
            return library is not None and failure.user_frame is not None
        if self.raised_in == OWN:
            return _asked_by_its_own_code(failure)
        if self.raised_in == USER_CALL:
            return _dispatched_from_user(failure)
        if self.raised_in == NOT_ASKED_OF_SELF:
            missing = _MISSING.search(failure.headline)
            return not (missing and failure.frames
                        and _reads_off_self(failure.frames[-1], missing.group(1)))
        if self.raised_in == OWN_PACKAGE:
            return _own_package_missing(failure)
        return True


def _missing_from_api(api: str, headline: str) -> bool:
    missing = _MISSING.search(headline)
    return missing is not None and missing.group(1) in _api_names(api)


@cache
def _api_names(api: str) -> frozenset[str]:
    text = (API_DIR / f"{api}.txt").read_text(encoding="utf-8")
    return frozenset(line.strip() for line in text.splitlines()
                     if line.strip() and not line.startswith("#"))


def _asked_by_its_own_code(failure: Failure) -> bool:
    """The frame that asked for the missing attribute (the one above a `__getattr__`) is a
    library's and reads it from `self`."""
    missing = _MISSING.search(failure.headline)
    frames = list(failure.frames)
    if frames and frames[-1].function in _ATTRIBUTE_LOOKUP:
        frames.pop()
    if not missing or not frames or frames[-1].package is None:
        return False
    return _reads_off_self(frames[-1], missing.group(1))


def _reads_off_self(frame: Frame, name: str) -> bool:
    """The frame's code line reads attribute `name` off `self`."""
    return re.search(rf"\bself\.{name}\b", frame.code or "") is not None


def _own_package_missing(failure: Failure) -> bool:
    """The module the message says is missing has the name of a folder on the path of one
    of the user's own frames; not under `src/` (a src layout's package is meant to be
    installed, pip install -e .: the environment's, as any package's)."""
    missing = _NO_MODULE.search(failure.headline)
    if missing is None:
        return False
    for frame in failure.frames:
        if frame.package is None:
            folders = _FOLDERS.split(frame.file)[:-1]
            if missing.group(1) in folders:
                at = folders.index(missing.group(1))
                return at == 0 or folders[at - 1] != "src"
    return False


def _dispatched_from_user(failure: Failure) -> bool:
    """The innermost frames are torch's Module.__call__ dispatch and the frame that called
    it is the user's (not a library's Trainer passing its own keywords)."""
    frames = list(failure.frames)
    dispatched = False
    while frames and frames[-1].package == "torch" and frames[-1].function in _DISPATCH:
        frames.pop()
        dispatched = True
    return dispatched and bool(frames) and frames[-1].package is None


def _raising_code(failure: Failure) -> list[Frame]:
    """The frame that raised and its callers in the same package (or the user's code): a
    helper called by a Dataset's __getitem__ raised in that __getitem__'s work."""
    frames = list(failure.frames)
    if not frames:
        return []
    package = frames[-1].package
    chain = []
    for frame in reversed(frames):
        if frame.package != package:
            break
        chain.append(frame)
    return chain
