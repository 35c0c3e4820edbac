"""Every crash gets an answer: the first failure across ranks, its cascade, its root class."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from minrepro.diagnose.pipeline import diagnose_lines
from minrepro.diagnose.reader import split_rank
from minrepro.diagnose.roots import ROOT_RULES
from minrepro.diagnose.rules.pack import ID
from minrepro.diagnose.stamps import timestamp
from minrepro.model import Line

SAMPLES = Path(__file__).resolve().parents[1] / "samples"


def diagnose(text: str):
    lines = []
    for number, row in enumerate(text.splitlines(), 1):
        rank, rest = split_rank(row)
        lines.append(Line(line=number, text=rest, rank=rank))
    return diagnose_lines(lines)


def traceback(exc: str, *frames: str) -> str:
    body = "".join(f'  File "{f}", line 10, in run\n    x = f()\n' for f in frames)
    return f"Traceback (most recent call last):\n{body}{exc}\n"


def test_the_torchrun_cascade_names_rank_2_and_its_root() -> None:
    diagnosis = diagnose((SAMPLES / "root_data__torchrun_worker_image_cascade.log").read_text())
    failure = diagnosis.failure
    assert failure is not None and failure.rank == 2
    assert failure.exc_type == "PIL.UnidentifiedImageError"
    assert "cannot identify image file" in failure.message
    assert failure.user_frame is not None and failure.user_frame.function == "__getitem__"
    assert failure.library_frame is not None and failure.library_frame.package == "PIL"
    assert diagnosis.root is not None and diagnosis.root.value == "data"
    assert diagnosis.cause != "nccl_timeout"  # the watchdogs are its cascade
    assert {f.rank for f in diagnosis.cascade if f.kind.value == "nccl_timeout"} == {0, 1, 3}


def test_a_worker_traceback_cut_before_its_exception_takes_the_wrappers_type() -> None:
    log = ("Traceback (most recent call last):\n"
           '  File "train.py", line 270, in train\n    for datum in data_loader:\n'
           "KeyError: Caught KeyError in DataLoader worker process 0.\n"
           "Original Traceback (most recent call last):\n"
           '  File "/usr/lib/python3.10/site-packages/torch/utils/data/_utils/worker.py", '
           "line 308, in _worker_loop\n    data = fetcher.fetch(index)\n")
    diagnosis = diagnose(log)
    assert diagnosis.failure is not None and diagnosis.failure.exc_type == "KeyError"
    assert diagnosis.failure.line > 3  # the worker's traceback, not the wrapper


def test_a_config_keyerror_after_a_driver_warning_is_the_keyerror() -> None:
    diagnosis = diagnose((SAMPLES / "root_config__keyerror_after_driver_warning.log").read_text())
    assert diagnosis.cause is None and diagnosis.root is not None
    assert (diagnosis.root.value, diagnosis.failure.exc_type) == ("config", "KeyError")


def test_a_watchdog_timeout_raised_as_an_exception_keeps_its_type() -> None:
    diagnosis = diagnose(
        "RuntimeError: [Rank 2] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=3,"
        " OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=1800000) ran for 1800008 "
        "milliseconds before timing out.\n"
        "[E ProcessGroupNCCL.cpp:489] Some NCCL operations have failed or timed out.\n")
    assert diagnosis.cause == "nccl_timeout"
    assert diagnosis.failure is not None and diagnosis.failure.exc_type == "RuntimeError"


def test_a_killed_worker_raised_as_an_exception_keeps_its_type() -> None:
    diagnosis = diagnose("RuntimeError: DataLoader worker (pid 22358) is killed by signal: "
                         "Killed.\n")
    assert diagnosis.cause == "host_oom_dataloader"
    assert diagnosis.failure is not None and diagnosis.failure.exc_type == "RuntimeError"


def test_the_first_exception_of_a_chain_is_the_failure() -> None:
    log = (traceback("ValueError: bad shard index 7", "/srv/app/data.py") +
           "\nDuring handling of the above exception, another exception occurred:\n\n" +
           traceback("RuntimeError: loader failed", "/srv/app/train.py"))
    assert diagnose(log).failure.exc_type == "ValueError"


def test_an_exception_ignored_at_teardown_is_a_cascade() -> None:
    log = (traceback("KeyError: 'label'", "/srv/app/train.py") +
           "Exception ignored in: <function _MultiProcessingDataLoaderIter.__del__ at 0x7f>\n" +
           traceback("RuntimeError: DataLoader worker (pid 9) is killed by signal: Aborted.",
                     "/env/site-packages/torch/utils/data/dataloader.py"))
    assert diagnose(log).failure.exc_type == "KeyError"


def test_the_launchers_root_cause_rank_wins_over_an_earlier_line() -> None:
    log = ("[rank1]:[E ProcessGroupNCCL.cpp:563] [Rank 1] Watchdog caught collective operation "
           "timeout: WorkNCCL(SeqNum=5, OpType=ALLREDUCE, Timeout(ms)=600000) ran for 600006 ms\n"
           "[rank0]: Traceback (most recent call last):\n"
           '[rank0]:   File "/srv/app/train.py", line 5, in <module>\n'
           "[rank0]: AssertionError: empty batch\n"
           "[rank3]: Traceback (most recent call last):\n"
           '[rank3]:   File "/srv/app/train.py", line 9, in <module>\n'
           "[rank3]: FileNotFoundError: [Errno 2] No such file or directory: '/data/x.bin'\n"
           "torch.distributed.elastic.multiprocessing.errors.ChildFailedError:\n"
           "Root Cause (first observed failure):\n[0]:\n  rank      : 3 (local_rank: 3)\n"
           "  exitcode  : 1 (pid: 77)\n")
    diagnosis = diagnose(log)
    assert (diagnosis.failure.rank, diagnosis.failure.exc_type) == (3, "FileNotFoundError")
    assert diagnosis.root.value == "config"


def test_the_one_traceback_no_rank_prefixed_takes_the_launchers_root_cause_rank() -> None:
    """A child printing without torchrun's `[rankN]:` prefix (stdout of a Hydra app): its
    traceback is the one failure, and torchrun's table names its rank."""
    child = ("Traceback (most recent call last):\n"
             '  File "/srv/verl/trainer/fsdp_sft_trainer.py", line 716, in fit\n'
             "    start_epoch = global_step // self.steps_per_epoch\n"
             "ZeroDivisionError: integer division or modulo by zero\n")
    table = ("torch.distributed.elastic.multiprocessing.errors.ChildFailedError:\n"
             "Root Cause (first observed failure):\n[0]:\n  rank      : 1 (local_rank: 1)\n"
             "  exitcode  : 1 (pid: 77)\n")
    assert diagnose(child + table).failure.rank == 1
    # every rank's copy of the same error: the first observed is torchrun's
    assert diagnose(child + child.replace("716", "717") + table).failure.rank == 1
    # two different errors printed without prefixes: which is whose is not told
    other = child.replace("integer division or modulo by zero", "float division by zero")
    assert diagnose(child + other + table).failure.rank is None
    # only another rank's cascade printed (a watchdog's timeout): not the root cause's
    cascade = child.replace("ZeroDivisionError: integer division or modulo by zero",
                            "torch.distributed.DistBackendError: [Rank 0] Watchdog caught "
                            "collective operation timeout: WorkNCCL(SeqNum=5, OpType=ALLREDUCE)")
    assert diagnose(cascade + table).failure.rank is None


def test_timestamps_order_ranks_that_print_out_of_order() -> None:
    log = ("[2024-01-01 10:00:05,000] [rank1]: RuntimeError: CUDA error: an illegal memory "
           "access was encountered\n"
           "[2024-01-01 10:00:01,000] [rank0]: ValueError: bad value for --lr\n")
    assert diagnose(log).failure.exc_type == "ValueError"
    assert timestamp("[E328 16:29:29.896442419 ProcessGroupNCCL.cpp:683]") is not None


def test_a_process_killed_without_an_exception_is_the_failure() -> None:
    log = ("step 10 loss 2.1\nstep 20 loss 2.0\n"
           "torch.distributed.elastic.multiprocessing.api: [ERROR] failed (exitcode: -9) "
           "local_rank: 0 (pid: 14447) of binary: /usr/bin/python3\n")
    diagnosis = diagnose(log)
    assert diagnosis.failure is not None and diagnosis.failure.kind.value == "killed"
    assert diagnosis.root.value == "config"


def test_the_shells_killed_written_after_a_progress_bars_last_update_is_the_kill() -> None:
    bar = "epochs:  20%|##        | 3/15 [1:27:1{}<5:56:40, 1783.41s/it, loss=3.71, lr=0.01]"
    log = "".join(bar.format(n) + "\r" for n in range(4)) + bar.format(5) + "Killed\n"
    diagnosis = diagnose(log)
    assert diagnosis.failure is not None and diagnosis.failure.kind.value == "killed"
    assert diagnosis.failure.message == "process killed: Killed"
    assert diagnosis.cause == "host_oom"
    assert diagnose(bar.format(5) + " Killed after 3 epochs\n").failure is None


def test_accelerate_launchs_called_process_error_wraps_the_childs_exception() -> None:
    """`accelerate launch` re-raises its child's exit status as CalledProcessError; the
    child's exception printed above it (here cut to its raise line) is the failure."""
    log = ('    raise ValueError(f"{name} does not require `num_warmup_steps`. Set None or 0.")\n'
           "ValueError: adafactor does not require `num_warmup_steps`. Set None or 0.\n" +
           traceback("subprocess.CalledProcessError: Command '['python', 'train.py']' returned "
                     "non-zero exit status 1.",
                     "/venv/lib/python3.10/site-packages/accelerate/commands/launch.py"))
    diagnosis = diagnose(log)
    assert diagnosis.failure.exc_type == "ValueError"
    assert [f.exc_type for f in diagnosis.cascade] == ["subprocess.CalledProcessError"]
    assert diagnosis.root.value == "config"
    # a compiler's CalledProcessError the run itself raised stays the failure
    own = traceback("subprocess.CalledProcessError: Command '['ninja', '-v']' returned "
                    "non-zero exit status 1.", "/usr/lib/python3.11/subprocess.py")
    assert diagnose(own).failure.exc_type == "subprocess.CalledProcessError"


def test_a_launchers_exit_code_1_is_no_failure_of_its_own() -> None:
    log = (traceback("ZeroDivisionError: division by zero", "/srv/app/train.py") +
           "torch.distributed.elastic.multiprocessing.api: [ERROR] failed (exitcode: 1) "
           "local_rank: 0 (pid: 1) of binary: /usr/bin/python3\n")
    assert diagnose(log).failure.exc_type == "ZeroDivisionError"


def test_an_error_the_run_went_on_after_is_no_failure() -> None:
    log = (traceback("RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB",
                     "/env/site-packages/lightning/tuner.py") +
           "".join(f"epoch {e} loss {2.0 - e / 10:.2f}\n" for e in range(6)))
    diagnosis = diagnose(log)
    assert diagnosis.failure is None and not diagnosis.answered


def test_a_failure_followed_by_a_new_session_in_the_same_log_is_still_a_failure() -> None:
    """Runs appended to one log.txt: the step counter going back says training started over
    after the error (a restart), not that the run went on past it. Where the last session
    failed too, its failure is the one to diagnose: the user launched again past the first."""
    session = "".join(f"iter: {i} total_loss: {2.0 - i / 1e3:.3f}\n" for i in range(20, 120, 20))
    first = traceback("ValueError: too many dimensions 'Boxes'", "/srv/app/mapper.py")
    log = session + first + session + traceback("AssertionError: Dataset 'val' is empty!",
                                                "/srv/app/train.py")
    diagnosis = diagnose(log)
    assert diagnosis.failure.exc_type == "AssertionError" and diagnosis.cascade == ()
    # the last session still running (no failure of its own): the crash before it stands
    still_running = diagnose(session + first + session)
    assert still_running.failure.exc_type == "ValueError"


def test_the_same_oom_ending_every_launch_of_a_sweep_is_how_the_log_ended() -> None:
    """A script launching one run after another into one file, each running out of memory
    after some steps: the OOM seen first is early in the file (records of later launches
    follow it), but its last copy ends the log. More copies than the evidence keeps first."""
    oom = traceback("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 12.00 MiB. "
                    "GPU 0 has a total capacity of 44.40 GiB of which 12.88 MiB is free.",
                    "/srv/app/train.py")
    launch = "".join(f"{{'loss': {2.0 - s / 100:.2f}, 'learning_rate': 0.0001, 'epoch': {s}}}\n"
                     for s in range(5))
    diagnosis = diagnose((launch + oom + oom) * 4)
    assert diagnosis.cause == "cuda_oom" and diagnosis.confidence >= 0.8
    assert diagnosis.evidence[-1].line > diagnosis.evidence[-2].line + 10  # the last copy


def test_a_batch_counter_going_back_every_epoch_is_no_restart() -> None:
    """`[100/500]` starts over each epoch: a caught OOM before more epochs stays survived."""
    def epochs(first: int, last: int) -> str:
        return "".join(f"[{b}/500] loss {2.0 - e / 10:.2f}\n" for e in range(first, last)
                       for b in range(100, 600, 100))
    log = (epochs(0, 2) + traceback("RuntimeError: CUDA out of memory. Tried to allocate 2 GiB",
                                    "/env/site-packages/lightning/tuner.py") + epochs(2, 9))
    assert diagnose(log).failure is None


def test_a_user_interrupt_gets_no_answer() -> None:
    diagnosis = diagnose("step 1 loss 2.0\n" + traceback("KeyboardInterrupt", "train.py"))
    assert not diagnosis.answered and diagnosis.failure is None


def test_a_warning_before_a_user_interrupt_is_no_answer() -> None:
    """A driver warning at start-up, a run on the CPU, then Ctrl-C: the user stopped it, the
    warning did not (DESIGN: a user interrupt gets no answer)."""
    warning = ("/env/lib/python3.12/site-packages/torch/cuda/__init__.py:141: UserWarning: CUDA "
               "initialization: The NVIDIA driver on your system is too old (found version "
               "11040). Please update your GPU driver by downloading and installing a new "
               "version from the URL: http://www.nvidia.com/Download/index.aspx\n"
               "  return torch._C._cuda_getDeviceCount() > 0\ncpu\n")
    steps = "".join(f"torch.Size([16, {n}, 100])\n" for n in range(40))
    interrupt = traceback("KeyboardInterrupt", "/home/u/proj/train.py",
                          "/env/lib/python3.12/site-packages/torch/nn/modules/linear.py")
    diagnosis = diagnose(warning + steps + interrupt)
    assert diagnosis.cause is None and not diagnosis.answered
    # the same warning before a crash of its own is still read as the crash's context
    crashed = diagnose(warning + steps + traceback(
        "RuntimeError: Found no NVIDIA driver on your system.", "/home/u/proj/train.py"))
    assert crashed.answered


def test_an_index_error_in_the_token_table_is_no_position_overflow() -> None:
    """`index out of range in self` where the traceback quotes the word-embedding lookup: a
    token id past the vocabulary; the same error at the position table is an overflow."""
    def embedding_error(call: str) -> str:
        site = "/env/lib/python3.9/site-packages"
        return (
            "Traceback (most recent call last):\n"
            '  File "/home/u/proj/train.py", line 79, in <module>\n'
            "    output = model(src)\n"
            f'  File "{site}/transformers/models/bert/modeling_bert.py", line 232, in forward\n'
            f"    {call}\n"
            f'  File "{site}/torch/nn/modules/sparse.py", line 162, in forward\n'
            "    return F.embedding(\n"
            f'  File "{site}/torch/nn/functional.py", line 2233, in embedding\n'
            "    return torch.embedding(weight, input, padding_idx, scale_grad_by_freq, sparse)\n"
            "IndexError: index out of range in self\n")
    tokens = diagnose(embedding_error("inputs_embeds = self.word_embeddings(input_ids)"))
    assert tokens.cause is None and tokens.failure.exc_type == "IndexError"
    positions = diagnose(embedding_error(
        "position_embeddings = self.position_embeddings(position_ids)"))
    assert positions.cause == "position_overflow"


def test_two_ranks_interrupted_over_each_other_are_a_user_interrupt() -> None:
    """Two ranks' Ctrl-C tracebacks printed over each other (their frames interleaved, the
    exception names run together), then torchrun's agent passing the SIGINT on."""
    site = "/env/lib/python3.8/site-packages"
    rows = ["epoch 1 step 10 loss 2.31", "Traceback (most recent call last):",
            "Traceback (most recent call last):",
            '  File "/srv/pcdet/tools/train.py", line 229, in <module>',
            '  File "/srv/pcdet/tools/train.py", line 229, in <module>',
            "        main()main()",
            f'  File "{site}/torch/nn/modules/_functions.py", line 84, in forward',
            f'  File "{site}/torch/nn/modules/_functions.py", line 84, in forward',
            "        count_all = count_all[mask]count_all = count_all[mask]",
            "KeyboardInterruptKeyboardInterrupt", "",
            "Traceback (most recent call last):",
            f'  File "{site}/torch/distributed/elastic/multiprocessing/api.py", line 62, in '
            "_terminate_process_handler",
            '    raise SignalException(f"Process {os.getpid()} got signal: {sigval}", '
            "sigval=sigval)",
            "torch.distributed.elastic.multiprocessing.api.SignalException: Process 49486 got "
            "signal: 2"]
    diagnosis = diagnose("\n".join(rows))
    assert diagnosis.failure is None and not diagnosis.answered
    # a hang-up is no user interrupt: the agent's SIGHUP stays what failed
    hung_up = diagnose("\n".join(rows[:1] + rows[11:]).replace("signal: 2", "signal: 1"))
    assert hung_up.failure is not None
    assert hung_up.failure.exc_type.endswith("SignalException")


def test_a_healthy_run_gets_no_root() -> None:
    diagnosis = diagnose((SAMPLES / "none__healthy_hf_trainer.log").read_text())
    assert diagnosis.root is None and diagnosis.failure is None


@pytest.mark.parametrize(("exc", "frame", "root"), [
    ("ModuleNotFoundError: No module named 'flash_attn'", "train.py", "environment"),
    ("ModuleNotFoundError: No module named 'models.base'", "train.py", "config"),
    ("ModuleNotFoundError: No module named 'torch.utils.trainer'", "train.py", "environment"),
    ("ImportError: cannot import name 'Foo' from 'transformers'", "train.py", "environment"),
    ("AttributeError: module 'torch.distributed' has no attribute 'init_process_group'",
     "train.py", "environment"),
    ("TypeError: __init__() got an unexpected keyword argument 'evaluation_strategy'",
     "/env/site-packages/transformers/training_args.py", "environment"),
    ("FileNotFoundError: [Errno 2] No such file or directory: 'data/train.csv'", "train.py",
     "config"),
    ("omegaconf.errors.ConfigAttributeError: Key 'I' is not in struct", "train.py", "config"),
    ("PIL.UnidentifiedImageError: cannot identify image file 'x.jpg'", "data.py", "data"),
    ("RuntimeError: !t.is_cuda() INTERNAL ASSERT FAILED at \"x.cpp\":1, please report a bug "
     "to PyTorch.", "train.py", "framework"),
    ("RuntimeError: CUDA error: unspecified launch failure; GPU has fallen off the bus",
     "train.py", "hardware"),
    ("AttributeError: 'Runner' object has no attribute 'fitt'", "/srv/app/train.py", "code"),
    ("AttributeError: 'list' object has no attribute 'log_softmax'",
     "/env/site-packages/torch/nn/functional.py", "code"),
    ("OSError: [Errno 28] No space left on device", "train.py", "environment"),
    ("RuntimeError: cuDNN error: CUDNN_STATUS_EXECUTION_FAILED",
     "/env/site-packages/torch/nn/modules/conv.py", "environment"),
    ("RuntimeError: cuda runtime error (46) : all CUDA-capable devices are busy or unavailable",
     "train.py", "environment"),
    ("ImportError: cannot import name 'sd3_utils' from 'library' (/srv/app/library/__init__.py)",
     "train.py", "code"),
    ("ImportError: cannot import name 'Foo' from 'transformers' "
     "(/env/lib/python3.10/site-packages/transformers/__init__.py)", "train.py", "environment"),
    ("TypeError: BertModel.forward() got an unexpected keyword argument 'lm_labels'",
     "train.py", "environment"),
    ("OSError: ./out/ckpt does not appear to have a file named config.json.",
     "/env/site-packages/transformers/utils/hub.py", "config"),
    ("ValueError: num_samples should be a positive integer value, but got num_samples=0",
     "/env/site-packages/torch/utils/data/sampler.py", "data"),
    ("AssertionError: datasets should not be an empty iterable",
     "/env/site-packages/torch/utils/data/dataset.py", "data"),
    ("RuntimeError: function MyFnBackward returned an incorrect number of gradients "
     "(expected 2, got 1)", "/env/site-packages/torch/autograd/__init__.py", "code"),
    ("RuntimeError: torch/csrc/autograd/input_buffer.cpp:14: add: Assertion `pos >= 0 && "
     "pos < buffer.size()` failed.", "/env/site-packages/torch/autograd/__init__.py",
     "framework"),
    # a name an installed library's own code never defined: that library's bug
    ("NameError: name 'np' is not defined", "/env/site-packages/mylib/x.py", "framework"),
    ("NameError: name 'np' is not defined", "train.py", "code"),
    ("IndexError: invalid index of a 0-dim tensor. Use `tensor.item()` in Python",
     "train.py", "environment"),
    ("RuntimeError: Device index must not be negative",
     "/env/site-packages/torch/nn/parallel/distributed.py", "config"),
    ("KeyError: \"Dataset 'my_train' is not registered! Available datasets are: coco_2017_train\"",
     "/env/site-packages/detectron2/data/catalog.py", "config"),
])
def test_root_classes_of_failures_outside_the_taxonomy(exc: str, frame: str, root: str) -> None:
    diagnosis = diagnose(traceback(exc, "/srv/app/train.py", frame))
    assert diagnosis.root is not None and diagnosis.root.value == root, diagnosis.rule_id


def test_where_the_evidence_does_not_decide_the_root_is_null() -> None:
    diagnosis = diagnose(traceback("TypeError: 'NoneType' object is not subscriptable",
                                   "/srv/app/train.py"))
    assert diagnosis.root is None and diagnosis.failure.exc_type == "TypeError"


def test_root_rules_have_stable_unique_ids() -> None:
    ids = [rule.id for rule in ROOT_RULES]
    assert len(ids) == len(set(ids)) and all(ID.fullmatch(i) for i in ids)


def test_every_root_rules_patterns_compile() -> None:
    """A pattern that does not compile fails every log the rules reach (a flag set mid-way)."""
    import re

    for rule in ROOT_RULES:
        for pattern in (rule.message, rule.unless, rule.function):
            re.compile(pattern)


def test_json_contract_and_exit_status_of_a_root_only_answer() -> None:
    log = SAMPLES / "root_data__corrupt_jsonl.log"
    done = subprocess.run([sys.executable, "-m", "minrepro", "diagnose", str(log), "--json"],
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0
    found = json.loads(done.stdout)
    assert found["cause"] is None and found["root"] == "data"
    assert found["failure"]["exc_type"] == "json.decoder.JSONDecodeError"
    assert found["failure"]["frame"]["package"] is None  # the user's own loader.py
    assert found["failure"]["library_frame"]["package"] == "stdlib"
    assert isinstance(found["cascade"], list)
    text = subprocess.run([sys.executable, "-m", "minrepro", "diagnose", str(log)],
                          capture_output=True, text=True, check=False).stdout
    assert text.startswith("failed first: json.decoder.JSONDecodeError at loader.py:31")


@pytest.mark.parametrize(("log", "root", "kind"), [
    ("usage: train.py [-h] [--config CONFIG]\n"
     "train.py: error: unrecognized arguments: configs/faster_rcnn.py\n", "config", "usage"),
    ("In 'experiment/x': Could not override 'data@experiment.data'.\nDid you mean data?\n"
     "Set the environment variable HYDRA_FULL_ERROR=1 for a complete stack trace.\n",
     "config", "usage"),
    # Hydra's command-line parser refusing an unquoted list (on every rank of a launch)
    ("Ambiguous value for argument 'model.data.splits_string=980,10,10'\n"
     "1. To use it as a list, use key=[value1,value2]\n"
     "Set the environment variable HYDRA_FULL_ERROR=1 for a complete stack trace.\n",
     "config", "usage"),
    # a `set -u` launch script stopping before Python starts
    ("nohup: ignoring input\n/srv/run_deepspeed.sh: line 9: PYTHONPATH: unbound variable\n",
     "config", "usage"),
    ("epoch 3 loss 0.51\nsegmentation fault (core dumped)\n", "environment", "killed"),
    ("[2023-04-14 13:11:27,885] [ERROR] [launch.py:434:sigkill_handler] ['/usr/bin/python3',"
     " '-u', 'main.py'] exits with return code = -9\n", "config", "killed"),
])
def test_failures_without_a_traceback_get_a_root(log: str, root: str, kind: str) -> None:
    """A program that refused its arguments, a native crash, a launcher's -9: each a failure."""
    diagnosis = diagnose(log)
    assert diagnosis.failure is not None and diagnosis.failure.kind.value == kind
    assert diagnosis.root is not None and diagnosis.root.value == root


def test_an_argparse_help_text_is_no_failure() -> None:
    log = "usage: train.py [-h] [--lr LR]\noptions:\n  --lr LR  the learning rate\n"
    assert diagnose(log).failure is None


def test_a_signed_objective_never_explodes() -> None:
    """An RL loss (GRPO, PPO) is negative and crosses zero: no ratio to its level exists."""
    rows = [f"[step {i}] avg_loss={(-0.08 if i % 7 else 0.02) + i * 1e-4:.4f} acc=0.05"
            for i in range(0, 300, 5)]
    assert diagnose("\n".join(rows)).cause is None


def test_a_worker_that_exited_with_an_error_was_not_killed_for_memory() -> None:
    log = traceback("RuntimeError: DataLoader worker (pid 27342) exited unexpectedly with exit "
                    "code 1. Details are lost due to multiprocessing.", "train.py",
                    "/env/site-packages/torch/utils/data/dataloader.py")
    log += "RuntimeError: DataLoader worker (pid(s) 27342, 27344) exited unexpectedly\n"
    assert diagnose(log).cause != "host_oom_dataloader"


def test_no_mixed_precision_advice_to_a_run_already_in_bf16() -> None:
    oom = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a "
           "total capacity of 79.15 GiB of which 1.02 GiB is free.")
    plain = diagnose(traceback(oom, "train.py"))
    bf16 = diagnose("launching with --bf16 --per_device_train_batch_size 64\n"
                    + traceback(oom, "train.py"))
    assert plain.cause == bf16.cause == "cuda_oom"
    assert "mixed precision" in plain.fix and "mixed precision" not in bf16.fix


def test_a_background_threads_exception_is_not_what_failed() -> None:
    """`Exception in thread Thread-1:` (a tensorboard writer's queue): the thread died, the
    process trained on; the main process's error later is the failure. Copies of the thread's
    exception printed over each other count with it."""
    thread = ("Exception in thread Thread-1:\n"
              "Traceback (most recent call last):\n"
              '  File "/env/lib/python3.10/threading.py", line 1016, in _bootstrap_inner\n'
              "    self.run()\n"
              '  File "/env/lib/python3.10/multiprocessing/connection.py", line 136, in '
              "_check_closed\n"
              '    raise OSError("handle is closed")\n'
              "OSError: handle is closed\n"
              "OSError: handle is closed\n")
    later = traceback("RuntimeError: permute(sparse_coo): number of dimensions in the tensor "
                      "input does not match", "/srv/gait/model.py")
    diagnosis = diagnose(thread + "step 10 loss 0.5\n" + later)
    assert diagnosis.failure.exc_type == "RuntimeError"
    assert [f.exc_type for f in diagnosis.cascade].count("OSError") == 2


def test_crashed_launches_before_a_session_that_finished_are_history() -> None:
    crashed = traceback("FileNotFoundError: [Errno 2] No such file or directory: 'yolox_s.pth'",
                        "/srv/yolox/tools/train.py")
    session = "".join(f"epoch {e} iter {i} loss {2.0 - e * 0.1 - i * 0.01:.3f}\n"
                      for e in range(1, 4) for i in range(1, 5))
    log = session + crashed + session + "Training of experiment is done and the best AP is 90.0\n"
    assert diagnose(log).failure is None
    unfinished = session + crashed + session  # a restart that did not say it finished
    assert diagnose(unfinished).failure is not None


def test_torch_1_1s_reraise_with_the_workers_traceback_as_message_is_a_wrapper() -> None:
    """`TypeError: Traceback (most recent call last):` then the worker's frames: the worker's
    exception is what failed, in a DataLoader worker (a sample), not the main loop's re-raise."""
    log = ("Traceback (most recent call last):\n"
           '  File "train.py", line 100, in <module>\n'
           "    for batch_i, (_, imgs, targets) in enumerate(dataloader):\n"
           '  File "/env/lib/python3.6/site-packages/torch/utils/data/dataloader.py", line 658,'
           " in _process_next_batch\n"
           "    raise batch.exc_type(batch.exc_msg)\n"
           "TypeError: Traceback (most recent call last):\n"
           '  File "/env/lib/python3.6/site-packages/torch/utils/data/dataloader.py", line 138,'
           " in _worker_loop\n"
           "    samples = collate_fn([dataset[i] for i in batch_indices])\n"
           '  File "/srv/yolo/utils/augmentations.py", line 8, in horisontal_flip\n'
           "    targets[:, 2] = 1 - targets[:, 2]\n"
           "TypeError: 'NoneType' object is not subscriptable\n")
    diagnosis = diagnose(log)
    assert diagnosis.failure.message == "'NoneType' object is not subscriptable"
    assert diagnosis.failure.user_frame.function == "horisontal_flip"
    assert diagnosis.root.value == "data"


def test_an_error_the_run_trained_on_after_is_not_what_failed_nor_where_a_cause_points() -> None:
    """A shell's `CondaError` at the top of a DeepSpeed log, then 100 steps and "Training
    done": no failure, and a cause found later does not take that error as its failure."""
    steps = "".join(f"[Step {n}/100] Loss: {5 - n / 100:.4f} | Global Tokens/s: 5861.65\n"
                    for n in range(1, 101))
    log = ("CondaError: Run 'conda init' before 'conda deactivate'\n"
           "[config.py:958:print]   float16_config ....... enabled=False loss_scale=0.0\n"
           + steps + "Training done in 49.87 seconds.\n")
    diagnosis = diagnose(log)
    assert diagnosis.failure is None and diagnosis.root is None and diagnosis.cause is None
    assert "(line 1) did not stop the run" in diagnosis.summary


def test_a_tensor_ops_root_reads_its_message_not_the_warnings_printed_after_it() -> None:
    """`ProcessGroupNCCL ... destroy_process_group` printed after a shape error is the exit's
    noise: the error is still the code's."""
    log = ('Traceback (most recent call last):\n  File "/srv/train.py", line 9, in step\n'
           '    e = self.time_embedding(t)\n'
           '  File "/env/lib/python3.10/site-packages/torch/nn/modules/linear.py", line 125, '
           'in forward\n    return F.linear(input, self.weight, self.bias)\n'
           'RuntimeError: mat2 must be a matrix, got 1-D tensor\n'
           '[W1209 09:20:54.366 ProcessGroupNCCL.cpp:1541] Warning: WARNING: '
           'destroy_process_group() was not called (see https://pytorch.org/docs/stable/'
           'distributed.html#shutdown)\n')
    assert diagnose(log).root.value == "code"


CONDA_BANNER = ("CommandNotFoundError: Your shell has not been properly configured to use "
                "'conda activate'.\nTo initialize your shell, run\n\n    $ conda init "
                "<SHELL_NAME>\n\n")


def test_condas_shell_error_at_the_top_of_a_job_is_not_its_failure() -> None:
    log = CONDA_BANNER + "epoch 1 loss 0.91\n" + traceback(
        "ValueError: Input contains NaN, infinity or a value too large for dtype('float64').",
        "src/cv.py", "/env/lib/python3.8/site-packages/sklearn/metrics/_regression.py")
    assert diagnose(log).failure.exc_type == "ValueError"
    killed = diagnose(CONDA_BANNER + "epoch 1 loss 0.91\nslurmstepd: error: *** JOB 42 ON n1 "
                      "CANCELLED AT 2024-03-01T10:00:00 DUE TO TIME LIMIT ***\n")
    assert killed.failure is not None and killed.failure.exc_type == ""
    assert "TIME LIMIT" in killed.failure.message
    # alone, it is still what the log shows
    assert diagnose(CONDA_BANNER).failure.exc_type == "CommandNotFoundError"


def test_a_bare_exception_line_gives_way_to_one_printed_with_its_traceback() -> None:
    # a logger's copy of an error, then the traceback of the one that ended the run
    log = ("KeyError: 'label'\nepoch 2 loss 0.50\n"
           + traceback("RuntimeError: shape '[64, 10]' is invalid for input of size 320",
                       "train.py"))
    failure = diagnose(log).failure
    assert failure is not None and failure.exc_type == "RuntimeError" and failure.frames
    assert diagnose("KeyError: 'label'\n").failure.exc_type == "KeyError"


DYNAMO_WARNING = (
    "[2023-11-29 11:04:57,788] torch._dynamo.convert_frame: [WARNING] WON'T CONVERT message "
    "/srv/PaiNN.py line 53\n"
    "[2023-11-29 11:04:57,788] torch._dynamo.convert_frame: [WARNING] Traceback (most recent "
    "call last):\n"
    '[2023-11-29 11:04:57,788] torch._dynamo.convert_frame: [WARNING]   File "/env/lib/python3.10'
    '/site-packages/torch/_dynamo/convert_frame.py", line 324, in _compile\n'
    "[2023-11-29 11:04:57,788] torch._dynamo.convert_frame: [WARNING] FileNotFoundError: "
    "[Errno 2] No such file or directory: 'ldconfig'\n")


def test_a_traceback_a_logger_printed_as_a_warning_is_not_the_failure() -> None:
    log = DYNAMO_WARNING + "epoch 1 loss 0.52\n" + traceback(
        "RuntimeError: shape '[64, 10]' is invalid for input of size 320", "train.py")
    assert diagnose(log).failure.exc_type == "RuntimeError"


def test_lsfs_report_above_the_output_names_the_run_time_limit() -> None:
    # LSF writes its job report (the TERM_* reason) above what the job printed
    log = ("Sender: LSF System <lsfadmin@n-62-20-1>\nSubject: Job 19440563: <train> Exited\n"
           "TERM_RUNLIMIT: job killed after reaching LSF run time limit.\n"
           "Exited with exit code 140.\n\nThe output (if any) follows:\n\n" + DYNAMO_WARNING
           + "".join(f"epoch {e} loss {1 / (e + 1):.3f}\n" for e in range(40)))
    diagnosis = diagnose(log)
    assert diagnosis.failure is not None and "TERM_RUNLIMIT" in diagnosis.failure.message
    # the scheduler's time limit: said, but no root class (the run itself did not fail)
    assert diagnosis.root is None and diagnosis.rule_id == "MR-ROOT-139"
    assert "time limit" in diagnosis.title


@pytest.mark.parametrize(("end", "cause", "root"), [
    ("slurmstepd: error: *** JOB 3734198 ON node058 CANCELLED AT 2025-02-08T15:01:45 DUE TO "
     "TIME LIMIT ***", None, None),
    # a kill by the scheduler for memory is the job's settings
    ("slurmstepd: error: Detected 1 oom_kill event in StepId=3734198.batch. Some of the step "
     "tasks have been OOM Killed.", "host_oom", "config"),
])
def test_a_job_ended_at_its_time_limit_has_no_root_class(end: str, cause: str | None,
                                                         root: str | None) -> None:
    log = "".join(f"tick {t} kimg {t * 50.0:.1f} sec/tick 343.3\n" for t in range(60)) + end
    diagnosis = diagnose(log + "\n")
    assert diagnosis.cause == cause
    assert (diagnosis.root.value if diagnosis.root else None) == root


@pytest.mark.parametrize(("text", "how"), [
    ("TERM_RUNLIMIT: job killed after reaching LSF run time limit.", "scheduler"),
    ("TERM_MEMLIMIT: job killed after reaching LSF memory usage limit.", "oom"),
    ("=>> PBS: job killed: walltime 86412 exceeded limit 86400", "scheduler"),
    ("=>> PBS: job killed: mem 33554432kb exceeded limit 33554432kb", "oom"),
])
def test_lsf_and_pbs_stop_a_job_at_its_limits(text: str, how: str) -> None:
    from minrepro.diagnose.extract.kills import KillExtractor

    found = KillExtractor().feed(Line(line=3, text=text, rank=None))
    assert [event.how for event in found] == [how]


def _wrapped(text: str, width: int) -> str:
    """`text` as a console that hard-wraps at `width` columns prints it."""
    out = []
    for row in text.splitlines():
        while len(row) > width:
            out.append(row[:width])
            row = row[width:]
        out.append(row)
    return "\n".join(out) + "\n"


def test_a_traceback_hard_wrapped_at_the_consoles_width_is_read_whole() -> None:
    log = _wrapped(
        "Traceback (most recent call last):\n"
        '  File "G:\\envs\\search\\train.py", line 559, in <module>\n'
        "    loss = model(batch)\n"
        '  File "G:\\envs\\search\\lib\\site-packages\\torch\\_dynamo\\eval_frame.py", line 967,'
        " in compile_wrapper\n"
        "    raise e.remove_dynamo_frames() from None  # see TORCHDYNAMO_VERBOSE=1\n"
        '  File "G:\\envs\\search\\lib\\site-packages\\torch\\_inductor\\scheduler.py", line 5433,'
        " in create_backend\n"
        "    raise TritonMissing(inspect.currentframe())\n"
        "torch._inductor.exc.TritonMissing: Cannot find a working triton installation.\n", 58)
    failure = diagnose(log).failure
    assert failure is not None and failure.exc_type == "torch._inductor.exc.TritonMissing"
    assert failure.library_frame is not None and failure.library_frame.package == "torch"
    assert failure.user_frame is not None and failure.user_frame.line == 559


def test_after_its_frames_a_traceback_ends_in_any_class_name_but_not_in_prose() -> None:
    frames = 'Traceback (most recent call last):\n  File "train.py", line 3, in <module>\n  run()\n'
    named = diagnose(frames + "mylib.errors.Halted: stop\n")
    assert named.failure.exc_type == "mylib.errors.Halted"
    prose = diagnose(frames + "Note: see the docs\n")
    assert prose.failure is None or prose.failure.exc_type != "Note"


def test_torchs_device_side_assertions_hint_alone_is_no_index_assert() -> None:
    diagnosis = diagnose(traceback(
        "RuntimeError: CUDA error: an illegal memory access was encountered\nCompile with "
        "`TORCH_USE_CUDA_DSA` to enable device-side assertions.", "train.py"))
    assert diagnosis.root is None or diagnosis.root.value != "data"


def test_a_cause_named_in_a_run_the_user_stopped_shows_no_failure() -> None:
    """The user's Ctrl-C ended a run whose loss had blown up: the cause is the curve's, and
    the KeyboardInterrupt is no failure to show beside it."""
    log = "".join(f"Epoch [{i}/100], Train Loss: {3.19e31 + i:.4f}\n" for i in range(1, 30))
    log += traceback("KeyboardInterrupt", "/srv/app/train.py")
    diagnosis = diagnose(log)
    assert diagnosis.cause == "lr_divergence"
    assert diagnosis.failure is None


def test_lowercase_module_errors_are_exception_types() -> None:
    """OpenCV's `cv2.error`, `struct.error` (a truncated PNG read by PIL): real exceptions."""
    log = traceback("struct.error: unpack_from requires a buffer of at least 4 bytes",
                    "/env/lib/python3.9/site-packages/PIL/_binary.py")
    assert diagnose(log).failure.exc_type == "struct.error"
    cv = traceback("cv2.error: OpenCV(4.5.1) /tmp/resize.cpp:4051: error: (-215:Assertion "
                   "failed) !ssize.empty() in function 'resize'", "/srv/app/dataset.py")
    assert diagnose(cv).failure.exc_type == "cv2.error"


def test_wandbs_run_summary_after_a_crash_is_no_training_that_went_on() -> None:
    """W&B prints the run's history and summary at exit, after the crash too: those lines
    are no records of training going on past the failure."""
    log = ("epoch 17 train_loss -0.8244 val_loss -0.7131\n"
           + traceback("OSError: image file is truncated", "/srv/app/validate.py")
           + "wandb: Waiting for W&B process to finish... (failed 1).\n"
           + "wandb: Run summary:\n"
           + "wandb: loss/train_loss -0.82437\n"
           + "wandb:   loss/val_loss -0.71313\n"
           + "wandb:        test/acc 0.95804\n")
    diagnosis = diagnose(log)
    assert diagnosis.failure.exc_type == "OSError" and diagnosis.root is not None


def test_a_wrapper_scripts_called_process_error_wraps_its_python_childs_exception() -> None:
    """`subprocess.run([python, "Run.py"], check=True)` in a wrapper script: the child's
    FileNotFoundError printed just above is the failure, whether the command names python or
    a console wrapped it before it does."""
    child = traceback("FileNotFoundError: [Errno 2] No such file or directory: 'out/ckpt.json'",
                      "/srv/app/Run.py")
    for command in ("['/usr/bin/python3', 'Run.py']", "['C:\\\\Users\\\\201"):
        parent = traceback(f"subprocess.CalledProcessError: Command '{command}' returned "
                           "non-zero exit status 1.", "/usr/lib/python3.11/subprocess.py")
        assert diagnose(child + parent).failure.exc_type == "FileNotFoundError"


def test_a_workers_own_death_report_takes_the_type_the_main_process_raises() -> None:
    log = ("ERROR: Unexpected bus error encountered in worker. This might be caused by "
           "insufficient shared memory (shm).\n"
           + traceback("RuntimeError: DataLoader worker (pid 56811) is killed by signal: Bus "
                       "error. It is possible that dataloader's workers are out of shared "
                       "memory.", "/env/lib/python3.10/site-packages/torch/utils/data/"
                       "_utils/signal_handling.py"))
    failure = diagnose(log).failure
    assert (failure.line, failure.exc_type) == (1, "RuntimeError")


def test_dynamos_backend_failure_keeps_the_inner_error_as_its_message() -> None:
    """`torch._dynamo.exc.BackendCompilerFailed: backend='inductor' raised:` then the inner
    `AssertionError: libcuda.so cannot found!` is one exception: dynamo's, the inner one its
    message."""
    log = ("torch._dynamo.exc.BackendCompilerFailed: backend='inductor' raised:\n"
           "AssertionError: libcuda.so cannot found!\n")
    diagnosis = diagnose(log)
    assert diagnosis.failure.exc_type == "torch._dynamo.exc.BackendCompilerFailed"
    assert "libcuda.so cannot found" in diagnosis.failure.text
    assert diagnosis.cause == "cuda_env_mismatch"


def test_a_usage_error_before_a_later_ctrl_c_stays_the_failure() -> None:
    """A job log where the script refused its command line, and a second script run into the
    same file was stopped with Ctrl-C: the refusal is what failed (a committed SLURM log)."""
    log = ("usage: train.py [-h] [--exp EXP] [--num_worker NUM_WORKER]\n"
           "train.py: error: argument --num_worker: expected one argument\n")
    log += traceback("KeyboardInterrupt", "/srv/app/caption.py")
    diagnosis = diagnose(log)
    assert diagnosis.failure is not None and diagnosis.failure.line == 2
    assert diagnosis.root == "config"


def test_a_cxx_abort_is_the_failure_where_nothing_python_failed_first() -> None:
    diagnosis = diagnose(
        "Optimizing data/output\n"
        "terminate called after throwing an instance of 'std::runtime_error'\n"
        "  what():  /src/tiny-cuda-nn/include/tiny-cuda-nn/multi_stream.h:83 cudaEventRecord("
        "m_event, m_stream) failed with error an illegal memory access was encountered\n"
        "Aborted (core dumped)\n")
    failure = diagnosis.failure
    assert failure is not None and failure.exc_type == "std::runtime_error"
    assert "illegal memory access" in failure.message


def test_a_cxx_abort_just_after_a_python_exception_is_its_teardown() -> None:
    diagnosis = diagnose(
        traceback("RuntimeError: transform: failed to synchronize: cudaErrorECCUncorrectable:"
                  " uncorrectable ECC error encountered", "/srv/app/train.py") +
        "terminate called after throwing an instance of 'c10::Error'\n"
        "  what():  CUDA error: uncorrectable ECC error encountered\n")
    assert diagnosis.failure is not None and diagnosis.failure.exc_type == "RuntimeError"
    assert diagnosis.cause == "hardware_fault"


def test_the_nccl_watchdogs_cxx_abort_without_its_what_is_a_cascade() -> None:
    diagnosis = diagnose(
        "[rank2]:[E1128 21:12:49 ProcessGroupNCCL.cpp:1568] [Rank 2] Watchdog caught collective "
        "operation timeout: WorkNCCL(SeqNum=1, OpType=BROADCAST, Timeout(ms)=600000) ran for "
        "600057 milliseconds before timing out.\n"
        "terminate called after throwing an instance of 'c10::DistBackendError'\n"
        "[rank2]:[E1128 21:12:49 ProcessGroupNCCL.cpp:2068] Process group watchdog thread "
        "terminated with exception\n"
        "frame #0: c10::Error::Error(c10::SourceLocation) + 0x80\n")
    assert diagnosis.cause == "nccl_timeout"


def test_a_bare_line_of_a_class_from_an_exceptions_module_is_the_failure() -> None:
    diagnosis = diagnose(
        "W0110 12:27:06.332000 158 torch/_dynamo/convert_frame.py:1551] [2/8] torch._dynamo hit"
        " config.recompile_limit (8)\n\n"
        "torch._dynamo.exc.FailOnRecompileLimitHit: recompile_limit reached with fullgraph=True."
        "\n")
    assert diagnosis.failure is not None
    assert diagnosis.failure.exc_type == "torch._dynamo.exc.FailOnRecompileLimitHit"


def test_a_leak_snippet_a_run_printed_before_it_trained_on_without_failing_names_no_cause() -> None:
    """A script that prints its own source first (record logs do): the `+=` of a loss in it
    is the same text as a bug report's snippet, but this run then trained on and ended well."""
    code = ("    for x, y in loader:\n        loss = model(x, y)\n        running_loss += loss\n"
            "        losses.append(loss)\n")
    assert diagnose(code).cause == "undetached_loss_list"  # a report's snippet, on its own
    records = "".join(f"step:{i}/200 train_loss:{2.5 - i / 100:.4f} train_time:{i * 50}ms\n"
                      for i in range(1, 30))
    assert diagnose(code + records).cause is None


def test_jobs_appended_to_one_slurm_file_are_told_by_the_last_job() -> None:
    crash = traceback("OSError: /ckpt does not appear to have a file named config.json",
                      "/srv/app/train.py")
    steps = "".join(f"step {i} loss {2.0 - i / 100:.3f}\n" for i in range(1, 6))
    first_job = crash + ("slurmstepd: error: *** JOB 263121 ON dgx-15 CANCELLED AT "
                         "2025-08-17T01:22:18 ***\n")
    cancelled = "slurmstepd: error: *** JOB 267039 ON dgx-06 CANCELLED AT 2025-08-21T02:53:05 ***\n"
    # the last job trained until the user cancelled it: the first job's crash is history
    diagnosis = diagnose(first_job + "Loading data\n" + steps + cancelled)
    assert diagnosis.failure is None and diagnosis.root is None
    # the last job failed of its own: that failure, not the first job's
    last_crash = traceback("KeyError: 'optimizer'", "/srv/app/config.py")
    diagnosis = diagnose(first_job + "Loading data\n" + last_crash + cancelled)
    assert diagnosis.failure is not None and diagnosis.failure.exc_type == "KeyError"
    # one job that crashed and was then cancelled by its user keeps its crash
    diagnosis = diagnose(crash + cancelled)
    assert diagnosis.failure is not None and diagnosis.failure.exc_type == "OSError"


def test_an_error_that_comes_again_after_the_last_records_was_not_survived() -> None:
    """A sweep: each launch's set-up bar reads as records after the first launch's OOM, but
    the last launch fails the same way: that is how the log ended."""
    oom = ("RuntimeError: CUDA out of memory. Tried to allocate 64.00 MiB (GPU 0; 10.76 GiB "
           "total capacity; 2.19 GiB already allocated; 337.12 MiB free; 2.19 GiB reserved in "
           "total by PyTorch)\n")
    epochs = "".join(f"epoch {i}: train_loss: {1.5 - i / 100:.5f}\n" for i in range(5, 35, 5))
    launch = "".join(f" {p}%|##| {n}/2000 [00:00<00:00, 2710.76it/s]\n"
                     for p, n in ((27, 538), (80, 1597), (100, 2000)))
    log = epochs + oom + launch + "RuntimeError: CUDA error: out of memory\n"
    assert diagnose(log).cause == "cuda_oom"
    # ... while one the run trained on after, and that never came again, was caught
    assert diagnose(epochs[:40] + oom + epochs).cause is None


def test_the_watchdogs_timeout_takes_the_type_of_the_abort_it_ends_in() -> None:
    """NCCL's watchdog: the timeout line names no exception, the C++ abort it throws next
    does; torchrun's exitcode -6 after it is its report of that abort."""
    log = ("[rank0]:[E405 03:51:41 ProcessGroupNCCL.cpp:688] [Rank 0] Watchdog caught collective"
           " operation timeout: WorkNCCL(SeqNum=404, OpType=_ALLGATHER_BASE, Timeout(ms)=600000)"
           " ran for 600046 milliseconds before timing out.\n"
           "terminate called after throwing an instance of 'c10::DistBackendError'\n"
           "  what():  [PG ID 3 PG GUID 4 Rank 0] Process group watchdog thread terminated with "
           "exception: [Rank 0] Watchdog caught collective operation timeout\n"
           "E0405 03:52:43 torch/distributed/elastic/multiprocessing/api.py:869] failed "
           "(exitcode: -6) local_rank: 0 (pid: 5577) of binary: /env/bin/python\n")
    diagnosis = diagnose(log)
    assert diagnosis.cause == "nccl_timeout"
    failure = diagnosis.failure
    assert failure is not None and failure.kind.value == "nccl_timeout"
    assert failure.exc_type == "c10::DistBackendError" and failure.rank == 0


def test_a_later_attempts_failure_of_another_type_does_not_name_the_first() -> None:
    """Attempts appended to one log: the first died unpacking its batch, a later one (the
    loop rewritten) on a shape mismatch: what failed first is the ValueError, and the shape
    mismatch is not its cause; a later copy of the same exception still is."""
    first = traceback("ValueError: too many values to unpack (expected 2)", "/srv/app/train.py")
    later = traceback("RuntimeError: mat1 and mat2 shapes cannot be multiplied (64x512 and "
                      "256x10)", "/srv/app/train.py")
    diagnosis = diagnose(first + "module load cuda/11.8\nepoch 0\n" + later)
    assert diagnosis.failure.exc_type == "ValueError" and diagnosis.cause is None
    assert diagnosis.root.value == "code"
    again = diagnose(later + "epoch 0\n" + later)
    assert again.cause == "shape_mismatch"


def test_torch_multiprocessing_spawn_names_the_process_that_failed() -> None:
    """mp.spawn (detectron2's launch) re-raises a child's exception in the parent as
    ProcessRaisedException, `-- Process 3 terminated with the following error:` above it
    (after a blank line, which the reader does not hand on)."""
    log = (traceback("torch.multiprocessing.spawn.ProcessRaisedException: ",
                     "/env/lib/python3.9/site-packages/torch/multiprocessing/spawn.py")
           + "-- Process 3 terminated with the following error:\n"
           + traceback("TypeError: expected str, bytes or os.PathLike object, not NoneType",
                       "/env/lib/python3.9/site-packages/torch/multiprocessing/spawn.py",
                       "/srv/app/tools/train_net.py"))
    failure = diagnose(log).failure
    assert (failure.exc_type, failure.rank) == ("TypeError", 3)


def test_a_traceback_printed_bare_then_again_with_one_ranks_prefix_is_that_ranks() -> None:
    """A logger that keeps rank 0's output prints the exception once bare, then torchrun's
    `[rank0]:` copy of it: the failure is rank 0's."""
    exc = "NameError: name 'state' is not defined"
    bare = traceback(exc, "/srv/app/src/run.py", "/srv/app/src/trainer.py")
    prefixed = "".join(f"[rank0]: {row}\n" for row in bare.splitlines())
    assert diagnose(bare + prefixed).failure.rank == 0
    # copies from two ranks do not say whose the bare one was
    two = prefixed + prefixed.replace("[rank0]", "[rank1]")
    assert diagnose(bare + two).failure.rank is None


def test_the_rank_ddp_names_in_its_message_is_the_failures_rank() -> None:
    """No prefix on the traceback: DDP's own message says which rank's parameters got no
    gradient (a watchdog's own `[Rank 0]` stays the cascade's: see the launcher test)."""
    log = ("Traceback (most recent call last):\n  File \"train.py\", line 9, in <module>\n"
           "    loss = model(x)\nRuntimeError: Expected to have finished reduction in the prior "
           "iteration before starting a new one.\nParameters which did not receive grad for "
           "rank 3: head.bias, head.weight\nParameter indices which did not receive grad for "
           "rank 3: 282 283\n")
    diagnosis = diagnose(log)
    assert diagnosis.failure is not None and diagnosis.failure.rank == 3


def test_evidence_against_a_cause_vetoes_only_the_hits_it_is_near() -> None:
    """A wandb sweep: one run's CUDA OOM, the agent starts the next run, and SLURM's OOM
    killer ends the job. The kill's words read as OOM prose beside the host-OOM-killer
    against-signal; the CUDA OOM far above them still stands, and it failed first."""
    oom = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 768.00 MiB. GPU 0 "
           "has a total capacity of 31.73 GiB of which 618.19 MiB is free.")
    log = ("Traceback (most recent call last):\n  File \"main.py\", line 30, in <module>\n"
           "    train()\n" + oom + "\n" + "wandb: Agent Starting Run: em3qtl1s with config:\n"
           + "".join(f"wandb: \tparam_{i}: {i}\n" for i in range(20))
           + "/var/slurm_spool/job1/slurm_script: line 22: 1687899 Killed    python main.py\n"
           "slurmstepd: error: Detected 1 oom_kill event in StepId=1.batch. Some of the step "
           "tasks have been OOM Killed.\n")
    assert diagnose(log).cause == "cuda_oom"


def test_torchruns_first_failed_worker_names_the_rank_of_an_unprefixed_exception() -> None:
    """No Root Cause table printed (the log stops at the agent's lines): its first
    `failed (exitcode: 1) local_rank: N` says whose exception it was; the SIGTERMs that
    came before it stop the others."""
    log = ("Exception ignored in: <_io.BufferedWriter name=7>\n"
           "BrokenPipeError: [Errno 32] Broken pipe\n"
           "W1203 10:00:01.000000 901 torch/distributed/elastic/multiprocessing/api.py:897] "
           "Sending process 902 closing signal SIGTERM\n"
           "E1203 10:00:02.000000 901 torch/distributed/elastic/multiprocessing/api.py:869] "
           "failed (exitcode: 1) local_rank: 3 (pid: 905) of binary: /env/bin/python\n")
    failure = diagnose(log).failure
    assert failure is not None and (failure.exc_type, failure.rank) == ("BrokenPipeError", 3)
    # a watchdog's own `[Rank 0]` is the rank that waited: not given the failed worker's
    watchdog = log.replace("BrokenPipeError: [Errno 32] Broken pipe",
                           "torch.distributed.DistBackendError: [Rank 0] Watchdog caught "
                           "collective operation timeout")
    assert diagnose(watchdog).failure.rank != 3


def test_a_warning_before_a_crash_another_rule_names_does_not_outrank_it() -> None:
    """A driver warning at start-up, then an embedding refusing float ids: the dtype is what
    stopped the run; the warning is no stronger for the crash being named."""
    log = ("/env/lib/python3.12/site-packages/torch/cuda/__init__.py:141: UserWarning: CUDA "
           "initialization: The NVIDIA driver on your system is too old (found version 11040). "
           "Please update your GPU driver.\n"
           "  return torch._C._cuda_getDeviceCount() > 0\n"
           "Traceback (most recent call last):\n"
           '  File "/srv/deq/train.py", line 88, in <module>\n'
           "    out = model(src)\n"
           "RuntimeError: Expected tensor for argument #1 'indices' to have one of the following "
           "scalar types: Long, Int; but got torch.FloatTensor instead (while checking arguments "
           "for embedding)\n")
    diagnosis = diagnose(log)
    assert diagnosis.cause == "dtype_mismatch"
    assert dict(diagnosis.params) == {"expected_dtype": "int64", "found_dtype": "float32"}
    assert diagnosis.root is not None and diagnosis.root.value == "code"
    # without the crash the warning is the run's only sign
    assert diagnose(log.split("Traceback")[0]).cause == "cuda_env_mismatch"


@pytest.mark.parametrize("line", [
    "1970-01-01 00:00:00 start", "2000-02-29T23:59:59.5 leap day", "2024-03-01 00:00:01,250 x",
    "1999-12-31 12:00:00 y", "2100-02-28_08:30:00 z", "2024-12-31 23:59:59 end"])
def test_an_iso_stamp_is_its_unix_time_read_as_utc(line: str) -> None:
    import calendar
    import re

    year, month, day, hour, minute, second = (int(g) for g in re.findall(r"\d+", line)[:6])
    fraction = 0.5 if ".5" in line else 0.25 if ",250" in line else 0.0
    expected = calendar.timegm((year, month, day, hour, minute, second)) + fraction
    assert timestamp(line) == pytest.approx(expected)
