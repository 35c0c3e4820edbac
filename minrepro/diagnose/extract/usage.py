"""A program that refused its command line or its config and exited without a traceback
-> UsageError (a failure candidate; its root class is config).

Real texts:
  argparse:  usage: train.py [-h] [--config CONFIG] ...
             train.py: error: unrecognized arguments: configs/faster_rcnn_r50_fpn_1x.py
             main.py: error: the following arguments are required: --data
             main.py: error: 'Configuration check failed :: No action for destination key
                 "trainer.process_position" to check its value.'   (jsonargparse, LightningCLI)
             train.py: error: argument --lr: invalid float value: '1e-3,'
  shell:     run_deepspeed.sh: line 9: PYTHONPATH: unbound variable   (a `set -u` launch script)
  Python:    /env/bin/python: can't open file '/src/full_finetune.py': [Errno 2] No such file
             or directory
  Hydra:     In 'experiment/x': Could not override 'data@experiment.data'.
             Key 'lr' is not in struct
             Ambiguous value for argument 'model.data.splits_string=980,10,10'
             Set the environment variable HYDRA_FULL_ERROR=1 for a complete stack trace.
"""

from __future__ import annotations

from collections.abc import Sequence

from minrepro.diagnose.literals import any_of
from minrepro.model import Line, UsageError
from minrepro.patterns import lazy

# a program's name at the start of a line, or quoted inside a report's sentence (`this error
# "train.py: error: unrecognized arguments: --local_rank=0"`)
_PROGRAM = r"(?:^|(?<=[\s\"'`(]))[\w./\\-]+"
_ARGPARSE = lazy(_PROGRAM + r": error: ((?:unrecognized arguments|"
                 r"the following arguments are required|"
                 r"argument \S+: (?:invalid|expected|not allowed|ambiguous))"
                 r".{0,300})"
                 # any message of a Python script's parser (argparse's parser.error, jsonargparse
                 # / LightningCLI): `main.py: error: 'Configuration check failed :: ...'`; not
                 # `nvcc: error:` or `ninja: error:` (a build, not the job's command line)
                 r"|" + _PROGRAM + r"\.py: error: (\S.{0,300})")
# a launch script run with `set -u` reading a variable the environment does not set: the job
# stops in the shell before Python starts (`run.sh: line 9: PYTHONPATH: unbound variable`)
_UNBOUND = lazy(r"(?:^|\s)(\S+: line \d+: [A-Za-z_]\w*: unbound variable)")
# the interpreter itself, given a script path that does not exist (a launcher's entry, a recipe)
_NO_SCRIPT = lazy(r"python[\w.]*: can't open file '([^'\n]{0,300})': \[Errno 2\] No such file")
_HYDRA = lazy(r"(Could not override '[^']{1,200}'|Key '[^']{1,200}' is not in struct|"
              r"Could not find '[^']{1,200}'|Could not load '[^']{1,200}'|"
              # its command-line parser: `a=1,2` unquoted, an override it cannot read
              r"Ambiguous value for argument '[^']{1,200}'|Error parsing override '[^']{1,200}')")
_HYDRA_END = "HYDRA_FULL_ERROR=1"


class UsageExtractor:
    """argparse, Hydra and launch-script refusals -> UsageError; Hydra's, once its closing
    line is seen."""

    TRIGGERS = (": error: ", "can't open file", "unbound variable", "Could not override",
                "is not in struct", "Could not find '", "Could not load '",
                "Ambiguous value for argument", "Error parsing override", _HYDRA_END)
    SELECT = (": error: unrecognized", ": error: the following", ".py: error: ", "can't open file",
              "unbound variable", "hydra_full_error")

    def __init__(self) -> None:
        self._hydra: tuple[int, str, int | None] | None = None  # Hydra's message, held
        self._done = False  # one usage error a log: a program exits after it

    def feed(self, line: Line) -> Sequence[UsageError]:
        text = line.text
        if self._done or not _may_refuse(text):
            return ()
        match = _ARGPARSE.search(text)
        if match is not None:
            self._done = True
            return (UsageError(line.line, (match[1] or match[2]).strip(), line.rank),)
        match = _UNBOUND.search(text) if "unbound variable" in text else None
        if match is not None:
            self._done = True
            return (UsageError(line.line, match[1][:300], line.rank),)
        match = _NO_SCRIPT.search(text)
        if match is not None:
            self._done = True
            return (UsageError(line.line, f"can't open file '{match[1]}': no such file",
                               line.rank),)
        match = _HYDRA.search(text)
        if match is not None:
            self._hydra = (line.line, match[1], line.rank)
        elif _HYDRA_END in text and self._hydra is not None:
            self._done = True
            number, message, rank = self._hydra
            return (UsageError(number, message, rank),)
        return ()

    def close(self) -> Sequence[UsageError]:
        return ()


_may_refuse = any_of(UsageExtractor.TRIGGERS)
