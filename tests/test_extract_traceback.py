"""TracebackExtractor on real-format snippets (sources in the comment of each case)."""

from __future__ import annotations

import pytest

from minrepro.diagnose.extract.tbpartial import MAX_FRAMES, MAX_MESSAGE_LINES
from minrepro.diagnose.extract.traceback import TracebackExtractor
from minrepro.model import Line, Traceback


def run(text: str, ranks: list[int | None] | None = None) -> list[Traceback]:
    extractor = TracebackExtractor()
    events: list[Traceback] = []
    for number, row in enumerate(text.split("\n"), start=1):
        rank = ranks[number - 1] if ranks else None
        events.extend(extractor.feed(Line(line=number, text=row, rank=rank)))
    events.extend(extractor.close())
    return events


# (id, log text, expected [(exc_type, message start, n_frames, chained)])
CASES = [
    ("standard_with_carets",
     # corpus position_overflow__04.log (zylon-ai/private-gpt#1363), Python 3.11 carets
     'Traceback (most recent call last):\n'
     '  File "D:\\venv\\Lib\\site-packages\\torch\\nn\\modules\\sparse.py", line 162, in forward\n'
     '    return F.embedding(\n'
     '           ^^^^^^^^^^^^\n'
     '  File "D:\\venv\\Lib\\site-packages\\torch\\nn\\functional.py", line 2233, in embedding\n'
     '    return torch.embedding(weight, input, padding_idx, scale_grad_by_freq, sparse)\n'
     '           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^\n'
     'IndexError: index out of range in self\n',
     [("IndexError", "index out of range in self", 2, None)]),
    ("qualified_oom_type",
     # corpus allocator_fragmentation__01.log (headerless: pasted from the middle)
     '  File "/usr/local/lib/python3.8/dist-packages/torch/_tensor.py", line 487, in backward\n'
     '    torch.autograd.backward(\n'
     'torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.51 GiB (GPU 0; ...)\n',
     [("torch.cuda.OutOfMemoryError", "CUDA out of memory. Tried", 1, None)]),
    ("child_failed_error_table",
     # the error summary torch.distributed.elastic prints (torchrun), shape as in issues
     'torch.distributed.elastic.multiprocessing.errors.ChildFailedError: \n'
     '============================================================\n'
     'train.py FAILED\n'
     '------------------------------------------------------------\n'
     'Root Cause (first observed failure):\n'
     '[0]:\n'
     '  rank      : 0 (local_rank: 0)\n'
     '  exitcode  : -9 (pid: 1234)\n'
     '============================================================\n',
     [("torch.distributed.elastic.multiprocessing.errors.ChildFailedError", "=====", 0, None)]),
    ("cuda_assert_multiline_message",
     # the CUDA device-side assert message of torch >= 2.0
     'Traceback (most recent call last):\n'
     '  File "train.py", line 10, in <module>\n'
     '    loss = criterion(out, y)\n'
     'RuntimeError: CUDA error: device-side assert triggered\n'
     'CUDA kernel errors might be asynchronously reported at some other API call, so the '
     'stacktrace below might be incorrect.\n'
     'For debugging consider passing CUDA_LAUNCH_BLOCKING=1.\n'
     'Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.\n'
     '\n'
     'some later unrelated line\n',
     [("RuntimeError", "CUDA error: device-side assert triggered\nCUDA kernel errors", 1, None)]),
    ("assertion_error_message_below",
     # corpus cuda_env_mismatch__04.log: message on the lines after "AssertionError: "
     'AssertionError: \n'
     'The NVIDIA driver on your system is too old (found version 9000).\n'
     'Please update your GPU driver by downloading and installing a new\n',
     [("AssertionError", "The NVIDIA driver on your system is too old", 0, None)]),
    ("chained_cause",
     # corpus host_oom_dataloader__04.log: no blank lines, frames without indentation
     'File "/x/torch/utils/data/dataloader.py", line 1132, in _try_get_data\n'
     'data = self._data_queue.get(timeout=timeout)\n'
     'RuntimeError: DataLoader worker (pid 108439) is killed by signal: Killed.\n'
     'The above exception was the direct cause of the following exception:\n'
     'Traceback (most recent call last):\n'
     'File "/x/train_3d.py", line 1919, in train\n'
     'trainer.train()\n'
     'RuntimeError: DataLoader worker (pid(s) 108439) exited unexpectedly\n',
     [("RuntimeError", "DataLoader worker (pid 108439) is killed", 1, "cause"),
      ("RuntimeError", "DataLoader worker (pid(s) 108439) exited", 1, None)]),
    ("chained_context_with_blank_lines",
     # corpus host_oom_dataloader__01.log (the separator line itself is truncated there)
     'RuntimeError: DataLoader worker (pid 325) is killed by signal: Bus error.\n'
     '\n'
     'During handling of the above exception, another exception o\n'
     '\n'
     'Traceback (most recent call last):\n'
     '  File "train.py", line 3, in <module>\n'
     '    main()\n'
     'RuntimeError: DataLoader worker (pid(s) 325) exited unexpectedly\n',
     [("RuntimeError", "DataLoader worker (pid 325)", 0, "context"),
      ("RuntimeError", "DataLoader worker (pid(s) 325)", 1, None)]),
    ("frames_run_together",
     # corpus cuda_env_mismatch__04.log: newlines lost between frames
     'Traceback (most recent call last):\n'
     '  File "train.py", line 182, in <module>    trainer.validation(epoch)  File "train.py", '
     'line 149, in validation    correct, labeled = eval_batch(self.model, image, target)\n'
     'ValueError: bad\n',
     [("ValueError", "bad", 2, None)]),
    ("jupyter_ipython7",
     # corpus dtype_mismatch__01.log
     '---------------------------------------------------------------------------\n'
     'RuntimeError                              Traceback (most recent call last)\n'
     '/tmp/ipykernel_118840/3049929526.py in <module>\n'
     '----> 1 scpoli_model.train(n_epochs=200,\n'
     '      2     pretraining_epochs=40,\n'
     '\n'
     '~/anaconda3/lib/python3.9/site-packages/torch/nn/modules/linear.py in forward(self, input)\n'
     '    113     def forward(self, input: Tensor) -> Tensor:\n'
     '--> 114         return F.linear(input, self.weight, self.bias)\n'
     '    115 \n'
     '\n'
     'RuntimeError: expected scalar type Float but found Double\n',
     [("RuntimeError", "expected scalar type Float but found Double", 2, None)]),
    ("jupyter_ipython8",
     # IPython 8 frame headers ("Cell In[3], line 1", "File ~/x.py:114, in Linear.forward")
     'RuntimeError                              Traceback (most recent call last)\n'
     'Cell In[3], line 1\n'
     '----> 1 model(x)\n'
     '\n'
     'File ~/envs/lib/python3.10/site-packages/torch/nn/modules/linear.py:114, in '
     'Linear.forward(self, input)\n'
     '    113 def forward(self, input: Tensor) -> Tensor:\n'
     '--> 114     return F.linear(input, self.weight, self.bias)\n'
     '\n'
     'RuntimeError: mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)\n',
     [("RuntimeError", "mat1 and mat2 shapes", 2, None)]),
    ("bare_error_line",
     # corpus dtype_mismatch__04.log
     'RuntimeError: expected scalar type Half but found Float\n\nfinetune.py 脚本根本训练不了啊\n',
     [("RuntimeError", "expected scalar type Half but found Float", 0, None)]),
    ("markdown_wrapped",
     # corpus device_mismatch__01.log
     '_**RuntimeError: Expected all tensors to be on the same device, but found at least two '
     'devices, cuda:0 and cpu!**_\n',
     [("RuntimeError", "Expected all tensors to be on the same device", 0, None)]),
    ("backticks_no_space",
     # corpus cuda_oom__07.log
     'I get the error \n`RuntimeError:CUDA out of memory. Tried to allocate 20.00 MiB`\n',
     [("RuntimeError", "CUDA out of memory. Tried to allocate 20.00 MiB", 0, None)]),
    ("log_prefix",
     # corpus allocator_fragmentation__04.log (vLLM engine log)
     'ERROR 04-01 23:46:56 [engine.py:160] torch.OutOfMemoryError: CUDA out of memory.\n',
     [("torch.OutOfMemoryError", "CUDA out of memory.", 0, None)]),
    ("header_after_tqdm",
     # corpus fp16_overflow__04.log: the header follows a progress bar on the same line
     'Steps:   0%|          | 0/800 [00:00<?, ?it/s]Traceback (most recent call last):\n'
     '  File "/opt/conda/lib/python3.9/site-packages/torch/cuda/amp/grad_scaler.py", line 210,'
     ' in _unscale_grads_\n'
     '    raise ValueError("Attempting to unscale FP16 gradients.")\n'
     'ValueError: Attempting to unscale FP16 gradients.\n'
     '```\n',
     [("ValueError", "Attempting to unscale FP16 gradients.", 1, None)]),
    ("escaped_newlines",
     # a traceback logged as one JSON string (e.g. Ray / structured loggers)
     '{"error": "Traceback (most recent call last):\\n  File \\"/app/train.py\\", line 12, in '
     'step\\n    out = model(x)\\nRuntimeError: CUDA error: device-side assert triggered\\n"}\n',
     [("RuntimeError", "CUDA error: device-side assert triggered", 1, None)]),
    ("keyboard_interrupt_without_message",
     'Traceback (most recent call last):\n'
     '  File "train.py", line 5, in <module>\n'
     '    time.sleep(10)\n'
     'KeyboardInterrupt\n',
     [("KeyboardInterrupt", "", 1, None)]),
    ("truncated_at_eof",
     # corpus allocator_fragmentation__01.log ends inside a traceback
     'Traceback (most recent call last):\n'
     '  File "submission_runner.py", line 681, in <module>\n'
     '    app.run(main)\n',
     [("", "", 1, None)]),
    ("python313_multiline_expression",
     'Traceback (most recent call last):\n'
     '  File "x.py", line 3, in <module>\n'
     '    foo(\n'
     '    ~~~^\n'
     '        1,\n'
     '        ^^\n'
     '    )\n'
     '    ^\n'
     'TypeError: foo() takes 0 positional arguments but 1 was given\n',
     [("TypeError", "foo() takes 0", 1, None)]),
]


@pytest.mark.parametrize("text, expected", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_traceback_cases(text: str, expected: list[tuple[str, str, int, str | None]]) -> None:
    events = run(text)
    got = [(e.exc_type, e.message, len(e.frames), e.chained) for e in events]
    assert len(got) == len(expected), got
    for (exc_type, message, n_frames, chained), (want_type, want_msg, want_n, want_chain) in zip(
            got, expected, strict=True):
        assert exc_type == want_type
        assert message.startswith(want_msg), message
        assert n_frames == want_n
        assert chained == want_chain


# Lines that must not produce a traceback.
NOT_TRACEBACKS = [
    "    except RuntimeError: pass",
    "UserWarning: \nNVIDIA GeForce RTX 3060 Laptop GPU with CUDA capability sm_86 is not "
    "compatible with the current PyTorch installation.",  # corpus cuda_env_mismatch__01.log
    "Error: something went wrong",  # not a Python exception class
    "ERROR: Unexpected bus error encountered in worker. This might be caused by insufficient "
    "shared memory (shm).",  # corpus host_oom_dataloader__01.log
    "[W python_anomaly_mode.cpp:104] Warning: Error detected in SoftmaxBackward0.",
    "2023-01-01 12:00:00 INFO loaded 1000 examples",
    # an exception's repr is Hydra's report only right under its `Error in call to target`
    'TypeError("f() got an unexpected keyword argument \'x\'")',
]


@pytest.mark.parametrize("text", NOT_TRACEBACKS)
def test_not_a_traceback(text: str) -> None:
    assert run(text) == []


def test_frames_and_code_and_line_numbers() -> None:
    text = ('x\nTraceback (most recent call last):\n'
            '  File "train.py", line 120, in <module>\n'
            "    data_transforms['train'])\n"
            "FileNotFoundError: [Errno 2] No such file or directory: 'your_data_path/train_all'\n")
    (event,) = run(text)  # corpus unrelated_error__01.log
    assert (event.first_line, event.line) == (2, 5)
    assert event.frames[0].file == "train.py" and event.frames[0].line == 120
    assert event.frames[0].function == "<module>"
    assert event.frames[0].code == "data_transforms['train'])"
    assert event.short_type == "FileNotFoundError"


RICH = """╭──────────────────── Traceback (most recent call last) ─────────────────────╮
│ /home/u/proj/train.py:121 in <module>                                     │
│                                                                           │
│   118 │   model = build(cfg)                                              │
│ ❱ 121 │   trainer.fit(model)                                              │
│                                                                           │
│ /env/lib/python3.10/site-packages/lightning/pytorch/trainer.py:544 in fit │
│                                                                           │
│ ❱ 544 │   │   call._call_and_handle_interrupt(                            │
╰───────────────────────────────────────────────────────────────────────────╯
RuntimeError: mat1 and mat2 shapes cannot be multiplied (64x512 and 256x10)"""


def test_a_rich_boxed_traceback_keeps_its_frames() -> None:
    """rich.traceback's box (typer and other rich apps print it): each frame's path, line and
    function, and the line it ran, then the exception below the box."""
    (event,) = run(RICH)
    assert event.short_type == "RuntimeError" and event.first_line == 1 and event.line == 11
    assert [(f.file.rsplit("/", 1)[-1], f.line, f.function) for f in event.frames] == [
        ("train.py", 121, "<module>"), ("trainer.py", 544, "fit")]
    assert event.frames[0].code == "trainer.fit(model)"
    assert event.frames[1].code == "call._call_and_handle_interrupt("


def test_interleaved_ranks_keep_one_traceback_each() -> None:
    rows = [
        (0, "Traceback (most recent call last):"),
        (1, "Traceback (most recent call last):"),
        (0, '  File "a.py", line 1, in f'),
        (1, '  File "b.py", line 2, in g'),
        (0, "    f()"),
        (1, "    g()"),
        (1, "ValueError: rank one"),
        (0, "torch.OutOfMemoryError: rank zero"),
        (0, ""),
        (1, ""),
    ]
    extractor = TracebackExtractor()
    events = []
    for number, (rank, text) in enumerate(rows, start=1):
        events.extend(extractor.feed(Line(line=number, text=text, rank=rank)))
    events.extend(extractor.close())
    by_rank = {event.rank: event for event in events}
    assert by_rank[0].exc_type == "torch.OutOfMemoryError"
    assert by_rank[0].frames[0].file == "a.py"
    assert by_rank[1].exc_type == "ValueError" and by_rank[1].frames[0].file == "b.py"


def test_pending_traceback_is_flushed_by_close() -> None:
    extractor = TracebackExtractor()
    assert extractor.feed(Line(1, "ValueError: x")) == []
    assert extractor.feed(Line(2, "")) == []  # waits for a possible chain separator
    (event,) = extractor.close()
    assert event.exc_type == "ValueError" and event.chained is None


def test_bounded_frames_and_message() -> None:
    frames = "".join(f'  File "f{i}.py", line {i}, in f\n    f()\n' for i in range(1000))
    message = "".join(f"line {i}\n" for i in range(500))
    (event,) = run("Traceback (most recent call last):\n" + frames + "ValueError: x\n" + message)
    assert len(event.frames) == MAX_FRAMES
    assert event.frames[0].file == "f0.py" and event.frames[-1].file == "f999.py"
    assert event.message.count("\n") <= MAX_MESSAGE_LINES


def test_many_ranks_are_capped() -> None:
    extractor = TracebackExtractor()
    events = []
    for rank in range(500):
        events.extend(extractor.feed(Line(rank + 1, "ValueError: x", rank=rank)))
    assert len(extractor._partial) + len(extractor._pending) <= 64
    events.extend(extractor.close())
    assert len(events) == 500


def test_vs_codes_debugger_output_is_one_traceback_innermost_frame_last() -> None:
    """`Exception has occurred: X`, its message, then the frames innermost FIRST."""
    found = run('Exception has occurred: RuntimeError\n'
                "Expected object of scalar type Long but got scalar type Int for argument #2\n"
                '  File "C:\\work\\train.py", line 133, in train_one_epoch\n'
                "    loss_x = criteria_x(logits_x, lbs_x)\n"
                '  File "C:\\work\\train.py", line 316, in <module>\n'
                "    train()\n"
                "\n")
    assert len(found) == 1
    tb = found[0]
    assert tb.exc_type == "RuntimeError" and tb.message.startswith("Expected object of scalar")
    assert [(f.line, f.function) for f in tb.frames] == [(316, "<module>"),
                                                         (133, "train_one_epoch")]
    assert tb.frames[-1].code == "loss_x = criteria_x(logits_x, lbs_x)"


def test_a_log_records_bare_exception_header_is_not_an_exception_of_its_own() -> None:
    found = run("speechbrain.core - Exception:\n"
                "Traceback (most recent call last):\n"
                '  File "train.py", line 130, in fit_batch\n'
                "    if self.use_amp:\n"
                "AttributeError: 'Separation' object has no attribute 'use_amp'\n\n")
    assert [t.exc_type for t in found] == ["AttributeError"]


def test_a_traceback_whose_newlines_were_lost_in_the_paste_keeps_its_exception() -> None:
    """GitHub renders an unfenced traceback as one paragraph: header, frames, code and the
    exception run together on one line."""
    found = run("`Traceback (most recent call last):   File \"/srv/LOMO/train.py\", line 181, in"
                " <module>     train()   File \"/srv/LOMO/utils.py\", line 381, in get_loss"
                "     loss = loss_fct(logits.view(4096, -1), RuntimeError: shape '[4096, -1]' is"
                " invalid for input of size 117504000`\n")
    assert [(t.exc_type, t.message) for t in found] == [
        ("RuntimeError", "shape '[4096, -1]' is invalid for input of size 117504000")]
    assert found[0].frames[-1].code == "loss = loss_fct(logits.view(4096, -1),"


def test_a_traceback_cut_at_an_assert_statement_is_an_assertion_error() -> None:
    cut = run('File ".../site-packages/deepspeed/runtime/zero/stage3.py", line 525, in defragment\n'
              "    assert len(set(t.dtype for t in tensors)) == 1\n")
    assert [t.exc_type for t in cut] == ["AssertionError"]
    other = run('  File "/srv/train.py", line 5, in main\n    loss.backward()\n')
    assert [t.exc_type for t in other] == [""]  # cut elsewhere: the type is not known


def test_a_code_line_a_pager_cut_at_its_dollar_sign_continues_on_the_next_line() -> None:
    found = run('  File "train.py", line 727, in main\n'
                "    n_iters = one_epoch(model, criterion, opt, config, train_datalo$\n"
                "der, device, epoch, is_train=True, master=ma$\n"
                "ter, writer=writer)\n"
                '  File "train.py", line 398, in one_epoch\n'
                "    total_loss.backward()\n"
                "RuntimeError: NCCL communicator was aborted.\n")
    assert [(t.exc_type, len(t.frames)) for t in found] == [("RuntimeError", 2)]


def test_old_torch_worker_reraise_names_the_workers_exception_type() -> None:
    """torch < 1.1: `raise Exception("KeyError:" + batch.exc_msg)` and the worker's traceback."""
    found = run("Traceback (most recent call last):\n"
                '  File "train.py", line 215, in train\n'
                "    for datum in data_loader:\n"
                '  File "/env/dist-packages/torch/utils/data/dataloader.py", line 606, in _next\n'
                '    raise Exception("KeyError:" + batch.exc_msg)\n'
                "Exception: KeyError:Traceback (most recent call last):\n"
                '  File "/env/dist-packages/torch/utils/data/_utils/worker.py", line 99, in _loop\n'
                "    samples = collate_fn([dataset[i] for i in batch_indices])\n"
                '  File "/srv/yolact/data/coco.py", line 126, in pull_item\n'
                "    file_name = self.coco.loadImgs(img_id)[0]['file_name']\n")
    assert [t.exc_type for t in found] == ["Exception", ""]
    assert found[0].message.startswith("KeyError:Traceback")
    assert len(found[1].frames) == 2


def test_a_jupyter_traceback_cut_before_its_exception_line_has_the_headers_type() -> None:
    found = run("FileNotFoundError                         Traceback (most recent call last)\n"
                "~\\anaconda3\\lib\\site-packages\\ultralytics\\engine\\trainer.py in __init__"
                "(self, cfg)\n"
                "--> 133                 self.data = check_det_dataset(self.args.data)\n")
    assert [t.exc_type for t in found] == ["FileNotFoundError"]


def test_spyders_unquoted_frames_are_frames() -> None:
    """Spyder prints `File ~/x.py:362 in f` (no quotes, no comma) between blank lines; the
    frame is what places the failure in a library (a real cellpose report, shortened)."""
    text = ("Traceback (most recent call last):\n\n"
            "  File ~/envs/cp/lib/python3.8/site-packages/cellpose/train.py:362 in train_seg\n"
            "    net.diam_labels.data = torch.Tensor([diam_train.mean()]).to(device)\n\n"
            "AttributeError: attribute 'data' of 'numpy.generic' objects is not writable\n")
    (event,) = run(text)
    (frame,) = event.frames
    assert frame.file.endswith("site-packages/cellpose/train.py") and frame.line == 362
    assert frame.function == "train_seg" and frame.code.startswith("net.diam_labels.data")
    assert run("File ~/notes.txt:3 in my head\n") == []  # no .py: prose
    (cut,) = run(text.split("\n", 2)[2])  # pasted without its header
    assert cut.frames == event.frames


HYDRA = ("Error executing job with overrides: []\n"
         "Error in call to target 'walkjump.cmdline.utils.instantiate_model_for_sample_mode':\n"
         "TypeError(\"instantiate_model_for_sample_mode() got an unexpected keyword argument "
         "'model_type'\")\n\n"
         "Set the environment variable HYDRA_FULL_ERROR=1 for a complete stack trace.\n")


def test_hydras_short_report_of_a_failed_instantiate_is_the_exception() -> None:
    """Without HYDRA_FULL_ERROR Hydra prints no traceback: the target's line, then the
    exception's repr. The exception is the failure, its message names the target."""
    [event] = run(HYDRA)
    assert event.exc_type == "TypeError" and event.line == 3 and event.first_line == 2
    assert event.message.splitlines() == [
        "instantiate_model_for_sample_mode() got an unexpected keyword argument 'model_type'",
        "Error in call to target 'walkjump.cmdline.utils.instantiate_model_for_sample_mode'"]
