"""The live monitor: each fault caught within one check interval and named by diagnose;
healthy noisy runs raise nothing; no device read between reads."""

from __future__ import annotations

import ast
import io
import math
import random
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch
from monitor_runs import (
    cause_of,
    exploding,
    healthy_training,
    leaking,
    loader_run,
    nan_in_batch,
    stuck_at_ln_c,
)

from minrepro.monitor import (
    EVENTS,
    Alert,
    MemoryReport,
    TrainingMonitor,
    check_batch,
    memory_report,
    oom_handler,
    parse_alert_line,
)
from minrepro.monitor.data import check_loader
from minrepro.taxonomy import ALL_CAUSES


@pytest.fixture(autouse=True)
def one_thread() -> Iterator[None]:
    """Two shared cores: one torch thread per test runs several times faster here."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


# --- faults -----------------------------------------------------------------------------------


def test_nan_in_the_batch_at_step_k(tmp_path: Path) -> None:
    monitor, stream = nan_in_batch(seed=0, at=37, every=10)
    first = monitor.alerts[0]
    assert (first.event, first.step) == ("nan_input", 37)
    assert any(a.event == "nan" and a.step == 37 for a in monitor.alerts)
    assert cause_of(stream.getvalue(), tmp_path) == "nan_in_data"


def test_nan_is_read_at_the_end_of_its_interval_not_later() -> None:
    monitor = TrainingMonitor(every=10, stream=io.StringIO())
    raised = {step: monitor.check(step, torch.tensor(math.nan if step >= 23 else 1.0))
              for step in range(40)}
    assert [step for step, alerts in raised.items() if alerts] == [29]
    assert raised[29][0].step == 23


def test_loss_explosion(tmp_path: Path) -> None:
    monitor, stream = exploding(seed=0, bump_at=60, every=10)
    explosion = next(a for a in monitor.alerts if a.event == "explosion")
    assert 60 <= explosion.step < 70
    assert explosion.values["lr"] == 3.0
    path = tmp_path / "run.log"
    path.write_text(stream.getvalue())
    from minrepro.diagnose.pipeline import diagnose_log

    diagnosis = diagnose_log(path)
    assert (diagnosis.cause, diagnosis.params.get("learning_rate")) == ("lr_divergence", 3.0)


def test_a_list_of_losses_with_their_graphs_is_a_leak(tmp_path: Path) -> None:
    monitor, stream = leaking(leak=True)
    assert [a.event for a in monitor.alerts] == ["leak"]
    assert monitor.alerts[0].step <= 29  # three reads: two intervals of growth
    assert cause_of(stream.getvalue(), tmp_path) == "undetached_loss_list"


def test_the_same_loop_keeping_numbers_is_no_leak() -> None:
    monitor, _ = leaking(leak=False)
    assert monitor.alerts == []


def test_a_slow_loader(tmp_path: Path) -> None:
    monitor, stream = loader_run(delay=0.01)
    loader = [a for a in monitor.alerts if a.event == "loader"]
    assert loader and loader[0].step <= 14 and loader[0].values["data_share"] > 1.0
    assert cause_of(stream.getvalue(), tmp_path) == "dataloader_bottleneck"


def test_a_fast_loader_is_no_bottleneck() -> None:
    monitor, _ = loader_run(delay=0.0)
    assert monitor.alerts == []


def test_all_zero_labels(tmp_path: Path) -> None:
    data = torch.utils.data.TensorDataset(torch.randn(256, 4), torch.zeros(256, dtype=torch.long))
    stream = io.StringIO()
    monitor = TrainingMonitor(num_classes=2, stream=stream)
    alerts = monitor.check_loader(torch.utils.data.DataLoader(data, batch_size=16), batches=10)
    assert [(a.event, a.values["label"]) for a in alerts] == [("single_class", 0)]
    assert cause_of(stream.getvalue(), tmp_path) == "single_class_labels"


def test_balanced_labels_and_one_small_batch_are_fine() -> None:
    labels = torch.arange(256) % 3
    data = torch.utils.data.TensorDataset(torch.randn(256, 4), labels)
    assert check_loader(torch.utils.data.DataLoader(data, batch_size=16), num_classes=3) == []
    assert check_batch((torch.randn(8, 4), torch.zeros(8, dtype=torch.long))) == []


def test_plateau_at_ln_c(tmp_path: Path) -> None:
    monitor, stream = stuck_at_ln_c()
    alert = monitor.alerts[0]
    assert alert.event == "ln_c" and alert.step == 299  # the read at which the window is full
    assert alert.values["ln_c"] == pytest.approx(math.log(10))
    assert cause_of(stream.getvalue(), tmp_path) == "loss_stagnation"


def test_stagnation_over_500_steps() -> None:
    monitor = TrainingMonitor(every=50, stream=io.StringIO())
    alerts = [a for step in range(600) for a in monitor.check(step, 0.6931 + 1e-5 * (step % 7))]
    assert [(a.event, a.step) for a in alerts] == [("stagnation", 499)]


# --- healthy runs -----------------------------------------------------------------------------


@pytest.mark.parametrize("seed", [0, 1])
def test_healthy_training_raises_nothing(seed: int) -> None:
    monitor = healthy_training(seed)
    assert monitor.alerts == []
    assert monitor.losses.baseline[-1] < 0.5 * math.log(10)  # it did learn


def noisy_curve(seed: int, steps: int = 3000) -> list[float]:
    """Warmup, decay, heavy-tailed batch noise, spikes of 5x, early fp16 overflow bursts."""
    rng = random.Random(seed)
    losses = []
    for step in range(steps):
        level = 2.3 * (0.15 + 0.85 * math.exp(-step / 600)) * (1.2 if step < 100 else 1.0)
        loss = level * math.exp(rng.gauss(0, 0.25))
        if rng.random() < 0.01:
            loss *= 5
        losses.append(math.inf if step in (3, 4, 5, 6, 40, 41, 42) else loss)
    return losses


@pytest.mark.parametrize("seed", range(4))
def test_noisy_healthy_curves_raise_nothing(seed: int) -> None:
    monitor = TrainingMonitor(num_classes=10, amp=True, stream=io.StringIO(), memory=False)
    for step, loss in enumerate(noisy_curve(seed)):
        monitor.check(step, torch.tensor(loss))
    assert monitor.close() == [] and monitor.alerts == []


def test_without_amp_an_overflow_is_a_nan() -> None:
    monitor = TrainingMonitor(stream=io.StringIO(), memory=False)
    for step, loss in enumerate(noisy_curve(0, 100)):
        monitor.check(step, loss)
    assert [(a.event, a.step) for a in monitor.alerts] == [("nan", 3)]


def test_amp_tolerates_bursts_but_not_a_run_of_nans() -> None:
    monitor = TrainingMonitor(amp=True, every=10, stream=io.StringIO(), memory=False)
    for step in range(40):
        monitor.check(step, math.nan if step >= 20 else 1.0)
    assert [(a.event, a.step) for a in monitor.alerts] == [("nan", 25)]


# --- the cost: nothing read between reads --------------------------------------------------


def test_no_device_read_between_reads(monkeypatch: pytest.MonkeyPatch) -> None:
    reads: list[str] = []
    for name in ("item", "tolist", "__float__", "__bool__"):
        original = getattr(torch.Tensor, name)

        def counted(self: torch.Tensor, *a: object, _n: str = name, _o: object = original
                    ) -> object:
            reads.append(_n)
            return _o(self, *a)  # type: ignore[operator]

        monkeypatch.setattr(torch.Tensor, name, counted)
    monitor = TrainingMonitor(every=50, stream=io.StringIO(), memory=False)
    batch = (torch.randn(4, 3), torch.tensor([0, 1, 0, 1]))
    for step in range(49):
        assert monitor.check(step, torch.tensor(1.0 + step), batch=batch) == []
    assert reads == []
    monitor.check(49, torch.tensor(50.0), batch=batch)
    assert reads == ["tolist", "tolist"]  # one transfer for the losses, one for the flags


# --- the API around the checks ---------------------------------------------------------------


def test_close_returns_what_is_pending() -> None:
    monitor = TrainingMonitor(every=50, stream=io.StringIO())
    for step in range(20):
        assert monitor.check(step, math.nan if step == 12 else 1.0) == []
    assert [(a.event, a.step) for a in monitor.close()] == [("nan", 12)]


def test_on_alert_stop_and_callable() -> None:
    stopped, _ = nan_in_batch(seed=0, at=15, every=10, on_alert="stop")
    assert stopped.should_stop and stopped.alerts[0].step == 15
    seen: list[Alert] = []
    nan_in_batch(seed=0, at=15, every=10, on_alert=seen.append)
    assert [a.event for a in seen][:1] == ["nan_input"]
    with pytest.raises(ValueError, match="on_alert"):
        TrainingMonitor(on_alert="explode")
    with pytest.raises(TypeError, match="unknown thresholds: nan_limit"):
        TrainingMonitor(nan_limit=3)


def test_alert_lines_are_documented_and_parse_back() -> None:
    alert = Alert("nan", 812, {"loss": math.nan, "lr": 3e-4, "trend": "rising"})
    assert alert.line() == "minrepro: event=nan step=812 loss=nan lr=0.0003 trend=rising"
    parsed = parse_alert_line("12:00:01 INFO " + alert.line())
    assert parsed is not None and (parsed.event, parsed.step, parsed.values["lr"]) == (
        "nan", 812, 3e-4)
    assert Alert("nan_input", 1, {"tensor": "pix els\nminrepro: x"}).line().endswith(
        "tensor=?")  # a name never breaks the line or adds one
    assert parse_alert_line("minrepro: event=unknown step=1") is None
    assert set(a_cause for _, a_cause in EVENTS.values()) <= set(ALL_CAUSES)


def test_every_event_with_a_cause_is_read_by_diagnose(tmp_path: Path) -> None:
    for event in EVENTS:
        values = {"trend": "rising"} if event == "nan" else {}
        line = Alert(event, 5, values).line()
        assert cause_of(line + "\n", tmp_path, f"{event}.log") == EVENTS[event][1], line


def test_diagnose_never_imports_the_monitor() -> None:
    code = ("import sys; from minrepro.diagnose.pipeline import diagnose_log;"
            " assert diagnose_log(sys.argv[1]).cause == 'undetached_loss_list';"
            " print(sorted(m for m in sys.modules if m.startswith(('minrepro.monitor', 'torch'))))")
    log = Path(__file__).resolve().parents[1] / "samples" / "monitor__leak_alert.log"
    done = subprocess.run([sys.executable, "-c", code, str(log)],
                          capture_output=True, text=True, timeout=60,
                          cwd=Path(__file__).resolve().parents[1])
    assert done.stdout.strip() == "[]", done.stdout + done.stderr


def test_check_batch_finds_each_problem() -> None:
    assert check_batch({"x": torch.zeros(0, 3)})[0].event == "empty_batch"
    assert check_batch((torch.randn(8, 3), torch.zeros(6, dtype=torch.long)))[0].event == (
        "length_mismatch")
    bad = torch.randn(8, 3)
    bad[2, 1] = math.inf
    assert check_batch({"pixel_values": bad})[0].values == {"tensor": "pixel_values", "count": 1}
    labels = torch.tensor([0, 1, 2, -100, 10])
    alert = check_batch({"x": torch.randn(5, 2), "labels": labels}, num_classes=10)[0]
    assert (alert.event, alert.values["max"]) == ("label_range", 10)


def test_memory_report_and_fragmentation_advice() -> None:
    report = memory_report("cpu")
    assert report.device == "cpu" and report.allocated and report.allocated > 0
    assert report.lines()[0].startswith("memory (cpu): allocated_mb=")
    fragmented = MemoryReport("cuda:0", allocated=100 << 20, reserved=400 << 20, peak=0)
    assert fragmented.fragmented and "expandable_segments" in fragmented.advice()
    assert [a.event for a in fragmented.alerts(3)] == ["fragmentation"]


def test_oom_handler_reports_then_reraises(tmp_path: Path) -> None:
    stream = io.StringIO()
    with pytest.raises(torch.OutOfMemoryError), oom_handler(stream=stream, step=7):
        raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
    text = stream.getvalue()
    assert "memory (" in text and "minrepro: event=oom step=7" in text
    assert cause_of(text, tmp_path) == "cuda_oom"

    @oom_handler(stream=stream)
    def fails() -> None:
        raise ValueError("not memory")

    stream.truncate(0)
    with pytest.raises(ValueError):
        fails()
    assert stream.getvalue().strip("\x00") == ""


def test_repro_dir_gets_the_log_and_the_script(tmp_path: Path) -> None:
    exploding(seed=0, bump_at=60, every=10, repro_dir=tmp_path / "out")
    log = (tmp_path / "out" / "monitor.log").read_text()
    assert log.startswith("minrepro: event=explosion")
    script = (tmp_path / "out" / "repro.py").read_text()
    ast.parse(script)
    assert "3.0" in script and "lr_divergence" in script


def test_repro_dir_takes_the_batch_shape(tmp_path: Path) -> None:
    import minrepro.monitor.core as core

    monitor = TrainingMonitor(every=10, stream=io.StringIO(), repro_dir=tmp_path)
    core_batch = (torch.randn(48, 32), torch.zeros(48, dtype=torch.long))
    monitor.check(0, 1.0, batch=core_batch)
    monitor._emit(Alert("leak", 30, {"memory_mb": 900.0, "growth_mb": 300.0}))
    script = (tmp_path / "repro.py").read_text()
    assert "undetached_loss_list" in script and ", 48, " in script
    assert core.DEFAULT_EVERY == 50


def test_diagnose_cli_reads_a_captured_stream(tmp_path: Path) -> None:
    _, stream = nan_in_batch(seed=1, at=20, every=10)
    path = tmp_path / "stderr.log"
    path.write_text("epoch 0 step 10 loss 2.3\n" + stream.getvalue())
    done = subprocess.run([sys.executable, "-m", "minrepro", "diagnose", str(path)],
                          capture_output=True, text=True, timeout=60,
                          cwd=Path(__file__).resolve().parents[1])
    assert done.returncode == 0 and "nan_in_data" in done.stdout
