"""Where a failure outside the cause taxonomy came from: its root class, from the evidence.

A table of root rules (data, with stable ids MR-ROOT-NNN in the rule id space), tried in
order, the first that matches the first failure deciding. Each looks at the failure's
exception type, its message, and where it was raised (the user's own code, a library, a
DataLoader worker). Where none matches, the answer is null: the evidence does not decide,
and minrepro says so rather than guess.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from minrepro.model import Failure, FailureKind, RootClass

USER, LIBRARY, ANY = "user", "library", "any"


@dataclass(frozen=True)
class RootRule:
    id: str
    root: RootClass | None  # None: this evidence does not decide, stop looking
    title: str
    fix: str
    types: tuple[str, ...] = ()  # exception short names (any, when empty)
    message: str = ""  # a regex the message (first lines) must match ("" : any)
    raised_in: str = ANY  # user | library | any
    in_worker: bool | None = None  # raised inside a DataLoader worker (None: either)

    def matches(self, failure: Failure, text: str, in_worker: bool) -> bool:
        short = failure.exc_type.rsplit(".", 1)[-1]
        if self.types and short not in self.types:
            return False
        if self.in_worker is not None and self.in_worker != in_worker:
            return False
        # Where it was raised is known only from frames: none printed decides neither way.
        if self.raised_in == USER and (not failure.frames or failure.library_frame is not None):
            return False
        if self.raised_in == LIBRARY and failure.library_frame is None:
            return False
        return not self.message or re.search(self.message, text) is not None


C, D, K, E, F, H = (RootClass.CONFIG, RootClass.DATA, RootClass.CODE, RootClass.ENVIRONMENT,
                    RootClass.FRAMEWORK, RootClass.HARDWARE)

ROOT_RULES: tuple[RootRule, ...] = (
    # hardware and framework first: they show in any exception type
    RootRule("MR-ROOT-001", H, "The GPU or its link failed (Xid, ECC, fallen off the bus)",
             "Drain the node, check `nvidia-smi -q` / dmesg for Xid and ECC errors, rerun "
             "elsewhere.",
             message=r"(?i)\bXid\b|uncorrectable ECC|fallen off the bus|GPU is lost|"
                     r"ECC error|NVLink error"),
    RootRule("MR-ROOT-002", F, "An internal assertion of PyTorch or a library failed",
             "Report it upstream with the repro; try another release of the library.",
             message=r"INTERNAL ASSERT FAILED|please report a bug to PyTorch|"
                     r"this is a bug in|Please file an issue"),
    # the project's own package not importable is the command's (cwd, PYTHONPATH), not an install
    RootRule("MR-ROOT-017", C, "The project's own package is not on the import path",
             "Run from the repository root, set PYTHONPATH to it, or pip install -e . there.",
             types=("ModuleNotFoundError",), message=r"No module named '(?:src|models?|utils?|lib|"
                                                     r"config|configs|modules|tools|core|common|"
                                                     r"scripts)(?:'|\.)"),
    # the environment: what is installed
    RootRule("MR-ROOT-010", E, "A module the code imports is not installed",
             "Install the package that provides it (pip install ...), in the environment "
             "that runs the job.", types=("ModuleNotFoundError",)),
    RootRule("MR-ROOT-011", E, "An installed package lacks a name the code imports",
             "Install the version the code was written for (see the repo's requirements).",
             types=("ImportError",),
             message=r"cannot import name|No module named|requires the \S+ library|"
                     r"undefined symbol|version `GLIBC|\.so[.\d]*: cannot open shared"),
    RootRule("MR-ROOT-012", E, "A library call fails on a keyword or attribute its "
             "installed version does not have",
             "Pin the versions the code needs (pip install 'pkg==X'); compare pip freeze "
             "with the repo's requirements.", types=("TypeError", "AttributeError"),
             message=r"unexpected keyword argument|module '[\w.]+' has no attribute|"
                     r"got multiple values for argument|takes \d+ positional arguments? but "
                     r"\d+ (?:were|was) given", raised_in=LIBRARY),
    RootRule("MR-ROOT-015", E, "The installed library no longer supports what the code uses",
             "Install the version the code was written for, or port the code to the new API.",
             message=r"(?i)no longer supported|has been removed|was removed in|"
                     r"is deprecated and (?:will be )?removed|requires \w+ ?[<>=]=? ?\d"),
    RootRule("MR-ROOT-016", E, "An installed module lacks an attribute the code uses",
             "The module's version (or build: torch without distributed, without CUDA) is not "
             "the one the code expects; install the one it needs.",
             types=("AttributeError",), message=r"module '[\w.]+' has no attribute"),
    RootRule("MR-ROOT-013", E, "The machine ran out of disk space", "Free disk space or "
             "write checkpoints elsewhere.",
             message=r"No space left on device|Disk quota exceeded|file write failed"),
    RootRule("MR-ROOT-014", E, "The CUDA driver, runtime or build does not fit",
             "Install a torch build for this driver and GPU (see pytorch.org/get-started).",
             message=r"(?i)CUDA driver version is insufficient|no kernel image|"
                     r"driver on your system is too old|Found no NVIDIA driver|"
                     r"Torch not compiled with CUDA enabled|libcudart"),
    # data: the samples
    RootRule("MR-ROOT-020", D, "A sample could not be read in a DataLoader worker",
             "Find the sample (the index or path in the message), drop or fix it; validate "
             "the data set before training.", in_worker=True),
    RootRule("MR-ROOT-021", D, "A data file is corrupt or not in the expected format",
             "Validate the data files (open each once before training) and drop the bad ones.",
             types=("UnidentifiedImageError", "JSONDecodeError", "UnicodeDecodeError",
                    "DecompressionBombError", "ParserError", "EmptyDataError"),
             message=r""),
    RootRule("MR-ROOT-022", D, "An image or sample file is truncated or unreadable",
             "Validate the data files and drop the bad ones.",
             message=r"(?i)cannot identify image file|image file is truncated|"
                     r"Invalid data found when processing|corrupt"),
    RootRule("MR-ROOT-023", D, "A CUDA kernel asserted on an index (labels or ids out of "
             "range, most often)", "Check the labels against the class count and the "
             "token ids against the vocabulary (run once on CPU for the exact error).",
             message=r"device-side assert triggered|Assertion `.*(?:n_classes|target|"
                     r"srcIndex < srcSelectDimSize|index out of bounds)"),
    # config: settings, paths, the command
    RootRule("MR-ROOT-029", C, "The process was killed (host memory, the OOM killer, the "
             "scheduler)", "Give the job more host memory or load less at once (stream the "
             "data set, fewer workers, map with fewer processes); check the scheduler's limits.",
             message=r"exitcode: -9|SIGKILL|Signal 9|oom[-_]kill|OOM Killed|Out of memory: "
                     r"Killed process|process killed: (?:\d+ )?Killed|DUE TO TIME LIMIT|"
                     r"exitcode\s*: -9"),
    RootRule("MR-ROOT-030", C, "A path in the config or command does not exist",
             "Check the data / checkpoint / output paths the job was given.",
             types=("FileNotFoundError", "NotADirectoryError", "IsADirectoryError")),
    RootRule("MR-ROOT-031", C, "A config key is missing or wrong",
             "Check the config file against what the code reads (the key in the message).",
             types=("ConfigAttributeError", "ConfigKeyError", "MissingMandatoryValue",
                    "InterpolationResolutionError", "ValidationError")),
    RootRule("MR-ROOT-032", C, "The launch command's arguments are wrong",
             "Check the command line against the script's --help.", types=("SystemExit",),
             message=r"unrecognized arguments|the following arguments are required|"
                     r"invalid choice|expected one argument"),
    RootRule("MR-ROOT-033", C, "A distributed rendezvous address or port is not usable",
             "Use a free MASTER_PORT and a reachable MASTER_ADDR.",
             message=r"Address already in use|EADDRINUSE|failed to listen on any local "
                     r"network address|Connection refused.*(?:29500|MASTER|rendezvous)"),
    RootRule("MR-ROOT-034", C, "A required setting is missing or out of range",
             "Check the setting the message names.", types=("ValueError", "KeyError",
                                                           "AssertionError"),
             message=r"(?i)\bconfig\b|\bcfg\b|\bargs?\.|\boption\b|--\w+|must be (?:set|one of|"
                     r"positive|divisible)|\bnot supported\b|\binvalid (?:value|argument)\b"),
    # code: raised in the user's or the repo's own code
    RootRule("MR-ROOT-039", None, "A value was None where an object was expected",
             "None comes from a setting not given, a file that failed to load (cv2.imread), "
             "or the code: look at where the value was made.", types=("AttributeError",
                                                                     "TypeError"),
             message=r"'NoneType' object"),
    RootRule("MR-ROOT-041", K, "The code passed a plain Python value where a tensor or model "
             "was expected", "Read the innermost frame of your code: convert the value "
             "(torch.stack / torch.tensor) or pass the right object.",
             types=("AttributeError", "TypeError"),
             message=r"'(?:list|dict|tuple|str|int|float|bool|ndarray|generator|module)' "
                     r"object (?:has no attribute|is not|does not)"),
    RootRule("MR-ROOT-040", K, "An error in the training code itself",
             "Read the innermost frame of your code in the traceback: the bug is there.",
             types=("TypeError", "AttributeError", "NameError", "UnboundLocalError",
                    "IndexError", "KeyError", "ValueError", "AssertionError",
                    "ZeroDivisionError", "NotImplementedError", "RecursionError",
                    "StopIteration", "SyntaxError", "IndentationError"),
             raised_in=USER),
)


def root_of(failure: Failure) -> RootRule | None:
    """The first root rule that matches the failure (its root None where that evidence does
    not decide), or None where no rule matches."""
    if not failure.exc_type and failure.kind is FailureKind.EXCEPTION:
        return None  # a traceback cut before its exception line
    text = failure.headline + "\n" + failure.text[-2000:]
    in_worker = "DataLoader worker" in failure.text or "_worker_loop" in failure.text
    return next((rule for rule in ROOT_RULES if rule.matches(failure, text, in_worker)), None)
