"""Analyzers on hand-made events: the arithmetic behind curve and memory findings."""

from __future__ import annotations

import math

import pytest

from minrepro.diagnose.analyze import CurveAnalyzer
from minrepro.diagnose.analyze.events import (
    LossScaleAnalyzer,
    NcclAnalyzer,
    OomAnalyzer,
    is_fragmented,
)
from minrepro.diagnose.analyze.trends import classes_for
from minrepro.model import EnvFact, Line, LossScaleEvent, MetricRecord, NcclTimeout, OomReport
from tests.test_failures import diagnose

GIB = 1 << 30


def curve(rows: list[dict[str, float]]) -> dict[str, object]:
    analyzer = CurveAnalyzer()
    for number, values in enumerate(rows, 1):
        record = MetricRecord(line=number, values=tuple(values.items()), step=number)
        analyzer.feed(record, Line(number, str(values)))
    return {f.cause: f for f in analyzer.findings()}


@pytest.mark.parametrize("requested, allocated, reserved, fragmented", [
    (2.51, 6.25, 13.91, True),  # reserved >> allocated, unallocated > request
    (0.53, 13.73, 14.45, False),  # 5 % of the pool unallocated: the card is full
    (1.86, 24.58, 5.08, True),  # torch <= 1.3 "5.08 GiB cached" is the free part
    (7.00, 6.00, 9.00, False),  # unallocated smaller than the request
    (0.086, 3.76, 4.49, False),  # 16 % of a full 6 GiB card: 0.73 GiB of slack, not a GiB
    (1.67, 0.2405, 1.91, True),  # unallocated equals the request up to the message's rounding
    # under 5 % of a full 80 GiB card's pool unused, however many times the request: a
    # maintainer's "reduce the batch size" (d16 cuda_oom__04: 2.85 GiB against 172 MiB)
    (0.168, 73.95, 76.80, False),
])
def test_fragmentation_arithmetic(requested, allocated, reserved, fragmented) -> None:
    report = OomReport(line=1, requested_bytes=int(requested * GIB),
                       allocated_bytes=int(allocated * GIB), reserved_bytes=int(reserved * GIB))
    assert is_fragmented(report) is fragmented
    analyzer = OomAnalyzer()
    analyzer.feed(report, Line(1, "OOM"))
    cause = analyzer.findings()[0].cause
    assert cause == ("allocator_fragmentation" if fragmented else "cuda_oom")


@pytest.mark.parametrize(("capacity", "free", "fragmented"), [
    (39.59, 0.47, False),  # 37 GiB of a 40 GiB card held outside this process's pool
    (2.50, 0.30, True),  # the pool is most of the card: its split blocks are what ran out
])
def test_a_pool_beside_a_card_another_process_holds_is_no_fragmentation(
        capacity: float, free: float, fragmented: bool) -> None:
    report = OomReport(line=1, requested_bytes=int(0.69 * GIB), allocated_bytes=int(0.97 * GIB),
                       reserved_bytes=int(1.72 * GIB), capacity_bytes=int(capacity * GIB),
                       free_bytes=int(free * GIB))
    assert is_fragmented(report) is fragmented


def test_plateau_at_ln_c_gives_class_count() -> None:
    found = curve([{"loss": math.log(10) + d} for d in (0.004, -0.003, 0.002, -0.001, 0.0)])
    params = dict(found["loss_stagnation"].params)
    assert params["num_classes"] == 10 and abs(params["plateau_loss"] - 2.3026) < 0.01


def test_runs_appended_under_epoch_headers_are_runs_not_a_climb() -> None:
    """Epoch summaries without an epoch of their own, under `Epoch: 0002` header lines, of
    five runs appended to one file (a GCN's log): each new run starting high again, and the
    fourth settling higher than the first, is no divergence."""
    from tests.test_failures import diagnose

    rows = []
    for length, start, floor in ((82, 1.59, 0.34), (61, 2.14, 0.49), (61, 1.91, 0.50),
                                 (80, 1.92, 0.71), (61, 1.58, 0.28)):
        for epoch in range(1, length + 1):
            rows += [f"[2022-06-26 21:44:04,162]Epoch: {epoch:04d}",
                     "[2022-06-26 21:44:05,000]this epoch:",
                     f"loss= {floor + (start - floor) * 0.9 ** epoch:.4f} "
                     f"accuracy= {0.9 - 0.6 * 0.9 ** epoch:.4f}"]
        rows.append("Optimization Finished!")
    assert diagnose("\n".join(rows) + "\n").cause is None


def test_a_flat_loss_with_the_learning_rate_at_zero_throughout_is_stuck() -> None:
    found = curve([{"loss": 10.9, "learning_rate": 0.0} for _ in range(6)])
    assert found["loss_stagnation"].score >= 0.7
    assert dict(found["loss_stagnation"].params)["learning_rate"] == 0.0
    # warmup from 0: a zero lr at the start only says nothing
    warm = curve([{"loss": 10.9, "learning_rate": 1e-5 * i} for i in range(6)])
    assert "loss_stagnation" not in warm or warm["loss_stagnation"].score < 0.5


def test_a_flat_loss_inside_the_lr_warmup_is_no_plateau() -> None:
    """A DINO run cancelled in its first epoch: the loss sits at ln(out_dim) while the lr is
    still climbing from 0 to its peak (a real SLURM log); after the warmup the same flat
    loss is a plateau."""
    rows = [{"loss": 11.11 + 0.001 * (i % 3), "learning_rate": 3e-7 * i} for i in range(60)]
    assert "loss_stagnation" not in curve(rows)
    after = [{"loss": 11.11 + 0.001 * (i % 3), "learning_rate": 1e-3} for i in range(60)]
    assert "loss_stagnation" in curve(rows + after)


def test_learning_curve_is_not_a_plateau() -> None:
    found = curve([{"loss": 2.3 * 0.8 ** i} for i in range(12)])
    assert "loss_stagnation" not in found and "lr_divergence" not in found


def test_nan_after_finite_steps_and_spikes() -> None:
    found = curve([{"loss": v, "learning_rate": 0.1} for v in (0.9, 0.8, 0.85, 0.7, 9.0, math.nan)])
    finding = found["lr_divergence"]
    assert finding.score >= 0.7 and dict(finding.params)["learning_rate"] == 0.1


def test_a_training_loss_above_its_first_step_while_the_held_out_loss_falls_is_no_divergence(
) -> None:
    # easy batches first (0.7), then a noisy loss around 2 all run long: judged alone, a
    # climb; the held-out loss falling from 2.17 to 1.78 says the run learned
    noisy = [0.7] * 20 + [2.0 + 0.3 * ((i * 7) % 5 - 2) / 2 for i in range(40)]
    rows: list[dict[str, float]] = [{"loss": v, "learning_rate": 5e-05} for v in noisy]
    assert "lr_divergence" in curve(rows)
    rows.insert(20, {"eval_loss": 2.17})
    rows.append({"eval_loss": 1.78})
    assert "lr_divergence" not in curve(rows)


def test_a_running_data_time_average_still_carrying_the_start_up_is_no_bottleneck() -> None:
    # maskrcnn-benchmark at iter 20: "data: 0.0029 (1.4490)  time: 0.3928 (1.9001)"
    rows = [{"data_time": d, "data_time_avg": da, "batch_time": b, "batch_time_avg": ba}
            for d, da, b, ba in ((0.0029, 1.449, 0.3928, 1.9001), (0.0025, 1.4344, 0.4166, 1.9303))]
    assert "dataloader_bottleneck" not in curve(rows)
    # the steps themselves waiting: a bottleneck
    waiting = [{"data_time": d, "data_time_avg": d, "batch_time": d + 0.1,
                "batch_time_avg": d + 0.1} for d in (1.2, 1.3, 1.25)]
    assert "dataloader_bottleneck" in curve(waiting)


def test_collapse_with_eval_at_chance() -> None:
    rows = [{"loss": v} for v in (0.7, 0.2, 0.01, 0.001, 0.0005)]
    rows.append({"eval_accuracy": 0.5, "eval_loss": 3.0})
    found = curve(rows)
    assert dict(found["single_class_labels"].params)["num_classes"] == 2


def test_perfect_training_accuracy_at_once_is_a_collapse_learned_to_is_a_fit() -> None:
    # 100 % from the second record on, loss 0: every sample carries the same label
    at_once = [{"loss": 6.9, "accuracy": 0.0}] + [{"loss": 0.0, "accuracy": 100.0}] * 8
    assert "single_class_labels" in curve(at_once)
    # a few-shot run that climbs to 100 % and a loss of 0 over many steps has fitted its data
    learned = [{"loss": 1.1 * 0.9 ** i, "accuracy": min(100.0, 25.0 + 3 * i)} for i in range(40)]
    learned += [{"loss": 0.0, "accuracy": 100.0}] * 20
    assert "single_class_labels" not in curve(learned)


def test_three_pasted_records_perfect_from_the_second_are_a_collapse() -> None:
    # a Keras paste whose labels all parsed as 0: 99 % then 100 % at a loss of 1e-9
    pasted = [{"loss": 0.0116, "accuracy": 0.9904}, {"loss": 5.7853e-09, "accuracy": 1.0},
              {"loss": 5.7422e-09, "accuracy": 1.0}]
    assert "single_class_labels" in curve(pasted)
    # the same accuracy at a loss a real fit reaches is no collapse
    fitted = [{"loss": 0.0116, "accuracy": 0.9904}, {"loss": 0.004, "accuracy": 1.0},
              {"loss": 0.003, "accuracy": 1.0}]
    assert "single_class_labels" not in curve(fitted)


def test_train_falls_while_eval_rises_is_overfitting() -> None:
    rows = []
    for epoch, (train, held) in enumerate(zip((1.0, 0.7, 0.5, 0.35, 0.25, 0.18),
                                              (1.1, 0.9, 0.85, 0.95, 1.1, 1.3), strict=True)):
        rows += [{"loss": train, "epoch": epoch}, {"eval_loss": held, "epoch": epoch}]
    assert "overfitting" in curve(rows)


# A ranking model's 100 epochs (a committed log): the test loss falls 138 -> ~17, then wanders
# 14 ... 30 around that level to the end while the training loss settles at 11.
_WANDERING_EVALS = (
    138.1, 63.6, 45.7, 36.7, 33.4, 31.8, 32.5, 28.6, 29.2, 38.4, 28.9, 26.8, 27.0, 25.3, 22.9,
    21.5, 25.0, 18.7, 21.4, 24.3, 25.3, 19.4, 18.4, 18.2, 18.9, 25.4, 19.4, 16.2, 16.8, 20.5,
    19.9, 17.6, 20.5, 19.5, 19.9, 16.0, 17.8, 15.3, 19.1, 17.0, 22.0, 17.7, 17.0, 17.2, 18.0,
    17.8, 18.5, 17.8, 18.8, 19.8, 18.1, 18.8, 21.6, 15.7, 24.5, 16.0, 19.3, 17.1, 17.6, 19.1,
    29.6, 16.6, 18.7, 18.7, 21.2, 19.2, 21.4, 19.4, 19.7, 23.8, 20.3, 19.6, 19.4, 19.1, 19.1,
    17.1, 26.0, 24.6, 16.8, 30.4, 19.6, 18.3, 18.1, 19.5, 17.2, 18.9, 14.0, 18.9, 20.5, 16.7,
    17.2, 16.7, 16.7, 21.1, 17.9, 22.5, 16.0, 17.8, 19.6, 15.8)


def _epochs(held: list[float] | tuple[float, ...]) -> list[dict[str, float]]:
    rows: list[dict[str, float]] = []
    for epoch, value in enumerate(held):
        rows += [{"loss": 170.0 / (epoch + 1) + 12.0 - 0.05 * epoch, "epoch": epoch},
                 {"eval_loss": value, "epoch": epoch}]
    return rows


def test_a_hundred_noisy_evaluations_wandering_at_their_level_are_no_overfitting() -> None:
    assert "overfitting" not in curve(_epochs(_WANDERING_EVALS))
    # the same run whose test loss then climbs for good is overfitting
    climbed = list(_WANDERING_EVALS[:60]) + [v * 1.6 for v in _WANDERING_EVALS[60:]]
    assert "overfitting" in curve(_epochs(climbed))


def test_a_held_out_loss_that_stays_low_beside_a_zero_train_loss_is_no_overfitting() -> None:
    """A k-fold classifier at train loss 0.0000 and validation 0.09 (accuracy 0.95)
    generalises: neither a ratio to a vanishing train loss nor a flat held-out loss is a gap."""
    rows = []
    for epoch in range(12):
        rows += [{"loss": 0.3 / (epoch + 1) ** 3, "epoch": epoch},
                 {"eval_loss": 0.1 - 0.001 * (epoch % 3), "epoch": epoch}]
    assert "overfitting" not in curve(rows)


@pytest.mark.parametrize(("held", "found"), [(2.4, True), (0.3, False)])
def test_few_evaluations_far_above_a_small_train_loss(held: float, found: bool) -> None:
    rows = [{"loss": 0.9}, {"loss": 0.2}, {"loss": 0.05}, {"loss": 0.02}, {"eval_loss": held}]
    assert ("overfitting" in curve(rows)) is found


def test_data_time_share() -> None:
    rows = [{"data_time": d, "batch_time": t, "loss": 1.0} for d, t in
            ((5.0, 5.2), (2.4, 2.6), (0.001, 0.2), (2.3, 2.5))]
    params = dict(curve(rows)["dataloader_bottleneck"].params)
    assert params["data_time"] > 0.5 * params["batch_time"]


@pytest.mark.parametrize("share, found", [(0.58, False), (0.64, False), (0.7, True), (0.95, True)])
def test_data_time_share_threshold(share: float, found: bool) -> None:
    """Detection runs commonly wait on data half of each step and are healthy: a bottleneck is
    a clear majority of the step time."""
    rows = [{"data_time": share * t, "batch_time": t, "loss": 1.0} for t in (2.0, 0.7, 0.68, 0.66)]
    assert ("dataloader_bottleneck" in curve(rows)) is found


def test_data_time_from_running_averages() -> None:
    """pytorch/examples ImageNet printed every 200 steps: the current step's data time is tiny,
    the average over all 200 is 95 % of the step (the first record is start-up alone)."""
    rows = [{"data_time": 196.4, "batch_time": 203.6, "data_time_avg": 196.4,
             "batch_time_avg": 203.6},
            {"data_time": 0.001, "batch_time": 0.55, "data_time_avg": 11.761,
             "batch_time_avg": 12.315}]
    params = dict(curve(rows)["dataloader_bottleneck"].params)
    assert params == {"data_time": 11.761, "batch_time": 12.315}


def test_a_summed_loss_at_a_log_value_is_no_ln_c_plateau() -> None:
    """Detection losses are sums (loss = loss_cls + loss_box): their level says nothing of ln C."""
    falling = [3.4, 3.05, 2.9, 2.75, 2.66]
    settled = [1.7645, 1.7536, 1.7660, 1.7252, 1.7597, 1.7615, 1.7580]  # near ln 6 = 1.79
    chance = {"eval_accuracy": 1 / 6}  # a 6-class task at chance: the evidence ln 6 needs
    single = [{"loss": v, **chance} for v in falling + settled]
    summed = [{"loss": v, "loss_ins": v * 0.7, "loss_cate": v * 0.3, **chance}
              for v in falling + settled]
    assert "loss_stagnation" in curve(single)
    assert "loss_stagnation" not in curve(summed)


def test_a_level_near_ln_c_without_a_c_class_task_is_no_plateau() -> None:
    """An SFT loss settling at 1.92 is near ln 7; nothing says the task has 7 classes."""
    settled = [2.03, 1.99, 1.96, 1.94, 1.93, 1.925, 1.921, 1.93, 1.918, 1.924, 1.92, 1.922]
    assert "loss_stagnation" not in curve([{"loss": v} for v in settled])
    stated = CurveAnalyzer()
    stated.feed(EnvFact(line=1, key="num_classes", value="7"), Line(1, "num_classes=7"))
    for number, value in enumerate(settled, 2):
        stated.feed(MetricRecord(line=number, values=(("loss", value),)), Line(number, ""))
    assert "loss_stagnation" in {f.cause for f in stated.findings()}


@pytest.mark.parametrize("level, classes", [
    (0.6931, 2), (2.3045, 10), (4.60, 100), (6.9079, 1000),  # common counts, within 1-3 %
    (math.log(37) + 0.0005, 37),  # any count when the level is that close
    (3.7442, None),  # 0.0065 from ln 42, but the ln(C) lie 0.024 apart there: a coincidence
    (8.25, None),  # beyond 1000 classes
])
def test_which_levels_are_ln_c(level: float, classes: int | None) -> None:
    assert classes_for(level) == classes


def test_an_eval_loss_of_exactly_ln_c_is_uniform_output() -> None:
    exact = curve([{"eval_loss": 1.386294308898901, "eval_accuracy": 0.283}])
    near = curve([{"eval_loss": 1.3791, "eval_accuracy": 0.283}])
    assert exact["loss_stagnation"].score == 0.6 and near["loss_stagnation"].score == 0.45
    assert dict(exact["loss_stagnation"].params)["num_classes"] == 4


def test_accuracy_that_rises_rules_out_stagnation() -> None:
    """ImageNet with mixup: train loss settles near 3.4 (= ln 30 by chance), top-1 reaches 76 %."""
    rows = [{"loss": v, "eval_accuracy": a} for v, a in
            ((6.91, 0.4), (5.2, 20.0), (4.1, 48.0), (3.41, 70.1), (3.398, 75.0), (3.402, 76.2),
             (3.401, 76.5), (3.399, 76.6))]
    assert "loss_stagnation" not in curve(rows)
    stuck = [{**row, "eval_accuracy": 1 / 30} for row in rows]  # 30 classes, at chance
    assert "loss_stagnation" in curve(stuck)


def test_memory_rising_until_the_end_is_a_leak_and_explains_the_oom() -> None:
    rows = [{"memory_mb": 5000.0, "loss": 1.0}] * 5
    rows += [{"memory_mb": 5000.0 + 900 * i, "loss": 1.0} for i in range(1, 8)]
    finding = curve(rows)["undetached_loss_list"]
    assert finding.supersedes == ("cuda_oom",)


def test_loss_scale_floor_and_startup_reductions() -> None:
    healthy = LossScaleAnalyzer()
    for scale in (32768.0, 16384.0):
        healthy.feed(LossScaleEvent(line=1, scale_to=scale), Line(1, "x"))
    assert healthy.findings() == []
    floor = LossScaleAnalyzer()
    floor.feed(LossScaleEvent(line=2, scale_to=1.0, scale_from=1.0), Line(2, "x"))
    finding = floor.findings()[0]
    assert finding.cause == "fp16_overflow" and dict(finding.params)["loss_scale"] == 1.0


def test_nccl_timeout_params_and_cascade() -> None:
    analyzer = NcclAnalyzer()
    analyzer.feed(NcclTimeout(line=3, op="ALLREDUCE", timeout_ms=600000, rank=4),
                  Line(3, "Watchdog caught collective operation timeout"))
    finding = analyzer.findings()[0]
    assert finding.cascade and dict(finding.params) == {"timeout_ms": 600000, "op": "allreduce",
                                                        "rank": 4}


def test_loss_climbing_back_from_its_minimum_is_divergence() -> None:
    losses = (15.5, 13.0, 3.8, 2.4, 1.43, 5.8, 7.1, 10.0)
    rows = [{"loss": v, "learning_rate": 2e-5} for v in losses]
    finding = curve(rows)["lr_divergence"]
    assert dict(finding.params)["learning_rate"] == 2e-5 and finding.evidence[0].line == 5


def test_a_loss_scale_that_regrows_between_reductions_is_healthy() -> None:
    """fairseq prints only the new scale: a reduction to above the last low means it grew."""
    analyzer = LossScaleAnalyzer()
    for number, scale in enumerate([128.0, 64.0, 32.0, 16.0, 8.0, 16.0, 16.0, 8.0, 16.0], 1):
        analyzer.feed(LossScaleEvent(line=number, scale_to=scale), Line(number, "x"))
    assert analyzer.findings() == []


_FAIRSEQ_SCALE = ("[2023-11-21 19:51:31,167][fairseq.trainer][INFO] - NOTE: gradient overflow "
                  "detected, ignoring gradient, setting loss scale to: {}")


def _fairseq_run(scales: list[float], loss_at_end: str) -> str:
    """A fairseq fp16 run: epochs' losses between the scaler's reductions."""
    lines = ["fp16: true"]
    for epoch, scale in enumerate(scales, 1):
        loss = loss_at_end if epoch == len(scales) else f"{10 - epoch * 0.2:.3f}"
        lines.append(f"epoch {epoch:03d} | loss {loss} | ppl 912.4 | num_updates {epoch * 500}")
        lines.append(_FAIRSEQ_SCALE.format(scale))
    return "\n".join(lines) + "\n"


def test_a_scale_that_grew_back_from_below_one_on_a_run_that_trains_on_is_no_overflow() -> None:
    """HuBERT in fp16: the scale fell to 0.5, grew back and settled at 1-4 while the loss
    kept falling: the lines reading a scale below 1 are vetoed by the history."""
    scales = [64.0, 32.0, 16.0, 8.0, 4.0, 2.0, 1.0, 0.5, 1.0, 2.0, 1.0, 2.0, 4.0, 2.0]
    assert diagnose(_fairseq_run(scales, "3.051")).cause is None
    # the same history with the loss gone NaN, or one that never left the floor, is fp16's
    assert diagnose(_fairseq_run(scales, "nan")).cause == "fp16_overflow"
    stuck = [64.0, 32.0, 16.0, 8.0, 4.0, 2.0, 1.0, 0.5, 0.5, 0.25, 0.25, 0.125]
    assert diagnose(_fairseq_run(stuck, "7.400")).cause == "fp16_overflow"


def _detection_log(parts_at_end: str, climb: bool = False) -> str:
    """A detection run's records (loss = sum of parts), the last one given."""
    rows = []
    for i in range(8):
        total = 2.0 * (4 ** i) if climb else 2.0 - 0.05 * i
        rows.append(f"Epoch: [0]  [{i * 20:>4}/1000]  lr: 0.0020  loss: {total:.4f}  "
                    f"loss_classifier: 0.{60 - i}  loss_box_reg: 0.{30 - i}  "
                    f"loss_objectness: 0.0{80 - i}")
    rows.append(parts_at_end)
    rows.append("Loss is nan, stopping training")
    return "\n".join(rows) + "\n"


def test_one_loss_part_nan_while_the_others_stay_finite_is_the_data() -> None:
    from tests.test_failures import diagnose

    log = _detection_log("Epoch: [0]  [ 160/1000]  lr: 0.0020  loss: nan  loss_classifier: "
                         "0.5210  loss_box_reg: nan  loss_objectness: 0.0712")
    diagnosis = diagnose(log)
    assert diagnosis.cause == "nan_in_data" and diagnosis.rule_id == "MR-CONV-105"
    assert diagnosis.params["loss_part"] == "loss_box_reg"


def test_parts_printed_by_short_names_under_their_total_are_parts() -> None:
    """faster-rcnn.pytorch: the total, a line of counts, then the parts without 'loss'."""
    from tests.test_failures import diagnose

    rows = []
    for i, (total, box) in enumerate([(1.19, "0.0488"), (0.89, "0.0421"), (1.10, "0.0351"),
                                      (1.02, "0.0402"), ("nan", "nan")]):
        rows += [f"[session 1][epoch  1][iter   {12 + i}/4500] loss: {total}, lr: 1.00e-03",
                 "\t\t\tfg/bg=(16/496), time cost: 0.503772",
                 f"\t\t\trpn_cls: 0.1663, rpn_box: {box}, rcnn_cls: 0.9381, rcnn_box 0.0433"]
    diagnosis = diagnose("\n".join(rows) + "\n")
    assert diagnosis.cause == "nan_in_data" and diagnosis.rule_id == "MR-CONV-105"
    assert diagnosis.params["loss_part"] == "loss_rpn_box"


def test_every_part_nan_or_a_climb_first_stays_a_divergence() -> None:
    from tests.test_failures import diagnose

    every = _detection_log("Epoch: [0]  [ 160/1000]  lr: 0.0020  loss: nan  loss_classifier: "
                           "nan  loss_box_reg: nan  loss_objectness: nan")
    assert diagnose(every).cause == "lr_divergence"
    climbed = _detection_log("Epoch: [0]  [ 160/1000]  lr: 0.0020  loss: nan  "
                             "loss_classifier: 0.5210  loss_box_reg: nan  loss_objectness: "
                             "0.0712", climb=True)
    assert diagnose(climbed).cause == "lr_divergence"


def test_a_nan_loss_at_step_0_is_no_step_too_large() -> None:
    from tests.test_failures import diagnose

    rows = [f"epoch 1 step {s} loss nan lr 0.001" for s in range(0, 500, 50)]
    diagnosis = diagnose("\n".join(rows) + "\n")
    assert diagnosis.cause == "nan_in_data" and diagnosis.rule_id == "MR-CONV-106"
    # the same NaN first logged at step 50 may be a step too large: not this check's
    later = diagnose("\n".join(rows[1:]) + "\n")
    assert later.rule_id != "MR-CONV-106"


def test_a_nan_from_the_first_record_in_the_first_steps_is_no_step_too_large() -> None:
    from tests.test_failures import diagnose

    epochs = "".join(f"Epoch: {e}, Steps: 9 | Train Loss: nan Vali Loss: nan\n"
                     "Updating learning rate to 1e-06\n" for e in range(1, 6))
    diagnosis = diagnose(epochs)
    assert diagnosis.cause == "nan_in_data" and diagnosis.rule_id == "MR-CONV-108"
    # the tail of a long run, first shown at step 1655, may follow a divergence
    tail = "".join(f"step {s} - loss        nan - moving ave loss        nan\n"
                   for s in range(1655, 1665))
    assert diagnose(tail).rule_id != "MR-CONV-108"


@pytest.mark.parametrize(("header", "named"), [
    ("Epoch 0", True),  # the log places the one NaN record in the run's first epoch
    ("Epoch 12", False),  # a later epoch of a resumed run: a divergence may come before it
    ("", False),  # one NaN loss mentioned, no epoch: no run's log
])
def test_one_nan_record_the_log_puts_in_the_first_epoch_is_nan_from_the_start(
        header: str, named: bool) -> None:
    from tests.test_failures import diagnose

    log = (f"2024-07-09 13:31:30.162810: {header}\n" if header else "") + (
        "2024-07-09 13:31:30.168464: Current learning rate: 0.01\n"
        "2024-07-09 13:35:54.727426: train_loss nan\n"
        "2024-07-09 13:35:54.740389: val_loss nan\n")
    assert (diagnose(log).rule_id == "MR-CONV-108") is named


def test_a_summary_printed_on_the_way_out_of_a_crash_is_no_finished_run() -> None:
    """detectron2 prints "Total training time" in its hooks' after_train, crash or not."""
    from tests.test_failures import diagnose

    crash = (
        "ERROR [07/25 13:14:56 d2.engine.train_loop]: Exception during training:\n"
        "Traceback (most recent call last):\n"
        '  File "/env/lib/python3.8/site-packages/detectron2/engine/train_loop.py", line 240, '
        "in _detect_anomaly\n    self.iter, loss_dict\n"
        "FloatingPointError: Loss became infinite or NaN at iteration=2!\n"
        "loss_dict = {'loss_cls': tensor(6.5565), 'loss_box_reg': tensor(0.0876), "
        "'loss_mask': tensor(nan), 'loss_rpn_cls': tensor(0.7022), 'loss_rpn_loc': "
        "tensor(0.0971)}\n")
    ended = "[07/25 13:14:56 d2.engine.hooks]: Total training time: 0:00:01\n"
    diagnosis = diagnose(crash + ended)
    assert diagnosis.cause == "nan_in_data" and diagnosis.confidence >= 0.6


def _transient_nan_log(*, bad_steps: tuple[int, ...], head: str = "") -> str:
    rows = [f"epoch 1 step {step * 10} loss "
            f"{'nan' if step in bad_steps else f'{2.5 * 0.99 ** step + 0.01 * (step % 3):.4f}'}"
            " lr 0.001" for step in range(1, 61)]
    return head + "\n".join(rows) + "\n"


def test_a_loss_nan_on_some_batches_then_finite_again_came_with_those_batches() -> None:
    from tests.test_failures import diagnose

    diagnosis = diagnose(_transient_nan_log(bad_steps=(23, 41)))
    assert diagnosis.cause == "nan_in_data" and diagnosis.rule_id == "MR-CONV-107"
    assert [e.line for e in diagnosis.evidence][:2] == [23, 24]


@pytest.mark.parametrize("log", [
    # NaN from a step on, for good: the weights went NaN (a step too large)
    _transient_nan_log(bad_steps=tuple(range(40, 61))),
    # under mixed precision a batch's overflow is skipped by the scaler: not the data's
    _transient_nan_log(bad_steps=(23, 41),
                       head="Using 16bit native Automatic Mixed Precision (AMP)\n"),
    _transient_nan_log(bad_steps=(23, 41), head="step 0 loss 2.6 loss_scale 65536.0\n"),
])
def test_a_nan_that_stays_or_comes_under_mixed_precision_is_not_a_bad_batch(log: str) -> None:
    from tests.test_failures import diagnose

    assert diagnose(log).rule_id != "MR-CONV-107"


@pytest.mark.parametrize(("accuracy", "found"), [
    # it learned a little, then lost it while the held-out loss climbed: overfitting
    ((44.0, 46.5, 48.0, 49.4, 49.6, 49.2, 48.6, 48.0, 47.1, 46.6, 45.9, 45.5), True),
    # a small task's accuracy: up 4.6 points, then down 1 while the held-out loss climbed
    ((0.717, 0.7588, 0.7628, 0.763, 0.7548, 0.7524, 0.751, 0.749, 0.748, 0.747, 0.745, 0.744),
     True),
    # never moved at all: the held-out metric never fit (labels, the eval set)
    ((10.0, 10.1, 10.0, 9.9, 10.0, 10.1, 10.0, 10.0, 9.9, 10.0, 10.1, 10.0), False),
])
def test_a_held_out_metric_that_rose_then_fell_is_overfitting(accuracy: tuple[float, ...],
                                                               found: bool) -> None:
    rows = []
    for epoch, acc in enumerate(accuracy):
        rows += [{"loss": 2.0 / (epoch + 1), "epoch": epoch},
                 {"eval_loss": 2.0 + 0.12 * max(0, epoch - 3), "eval_accuracy": acc,
                  "epoch": epoch}]
    assert ("overfitting" in curve(rows)) is found


def test_a_line_whose_subject_is_the_test_pass_is_an_evaluation() -> None:
    from minrepro.diagnose.extract.metrics import parse_metrics
    from minrepro.model import Line

    text = "TEST in epoch3, loss = 2.0078, acc = 49.35%"
    record = parse_metrics(text, Line(line=1, text=text))
    assert record is not None and dict(record.values)["eval_loss"] == 2.0078
    text = "TRAIN in epoch 3 , step 50, loss = 0.12"
    record = parse_metrics(text, Line(line=1, text=text))
    assert record is not None and "loss" in dict(record.values)


def test_loss_parts_printed_one_a_line_after_their_total_count_as_one_record() -> None:
    from tests.test_failures import diagnose

    rows = []
    for i, total in enumerate((0.94, 1.23, 0.98, 1.05, 0.91)):
        rows += [f"iter: {20 * i} / 10000, total loss: {total:.4f}",
                 f" >>> rpn_loss_cls: 0.0{6 + i}", f" >>> rpn_loss_box: 0.{80 - i}",
                 f" >>> loss_cls: 0.0{4 + i}", f" >>> loss_box: 0.01{i}", " >>> lr: 0.001000"]
    rows += ["iter: 100 / 10000, total loss: nan", " >>> rpn_loss_cls: 0.682706",
             " >>> rpn_loss_box: nan", " >>> loss_cls: 0.000110", " >>> loss_box: 0.000000"]
    diagnosis = diagnose("\n".join(rows) + "\n")
    assert diagnosis.cause == "nan_in_data" and diagnosis.params["loss_part"] == "rpn_loss_box"


def test_a_short_curve_ending_by_chance_near_ln_of_many_classes_is_no_plateau() -> None:
    """Two epochs of a language model, 2.76 then 6.228 (ln 507 to four decimals, by chance:
    one level in five lies that close to some ln C of about 500): it doubled, no stall."""
    assert "loss_stagnation" not in curve([{"loss": 2.760716}, {"loss": 6.228361}])
    assert "loss_stagnation" not in curve([{"loss": 5.9}, {"loss": 6.228361}])
    assert "loss_stagnation" in curve([{"loss": 2.0794}, {"loss": 2.0794}])  # ln 8: few lie near


def test_a_finite_loss_past_any_real_loss_has_blown_up() -> None:
    """A loss of 3e31, flat from the first epoch (the blow-up came before the first record)."""
    rows = [{"loss": 3.19e31 * (1 + 1e-6 * (i % 3))} for i in range(12)]
    found = curve(rows)
    assert found["lr_divergence"].rule_id == "MR-CONV-102"
    assert "lr_divergence" not in curve([{"loss": 2.5e6 - i * 1e4} for i in range(12)])


def test_a_binary_cross_entropy_flat_at_ln_2_is_chance() -> None:
    """BCE's chance level is ln 2 an output, whatever the task's class count: a loss flat at
    0.687-0.689 of a run whose autograd node is BinaryCrossEntropyBackward is stuck there."""
    values = [0.6868, 0.6876, 0.6883, 0.6887, 0.6896, 0.6870, 0.6880, 0.6876, 0.6872]
    assert curve([{"loss": v} for v in values])["loss_stagnation"].score < 0.5
    analyzer = CurveAnalyzer()
    analyzer.feed(EnvFact(line=1, key="loss_fn", value="binary_cross_entropy"), Line(1, ""))
    for number, value in enumerate(values, 2):
        analyzer.feed(MetricRecord(line=number, values=(("loss", value),)), Line(number, ""))
    found = {f.cause: f for f in analyzer.findings()}["loss_stagnation"]
    assert found.score >= 0.5 and dict(found.params)["num_classes"] == 2


def test_a_frozen_loss_of_a_resumed_run_is_stuck_not_converged() -> None:
    rows = [{"loss": 6.2739, "epoch": float(epoch)} for epoch in range(85, 91)]
    assert curve(rows)["loss_stagnation"].score >= 0.5
    moving = [{"loss": 0.2739 + 0.0003 * (epoch % 3), "epoch": float(epoch)}
              for epoch in range(85, 91)]
    assert curve(moving)["loss_stagnation"].score < 0.5


@pytest.mark.parametrize("count", [1, 63, 64, 65, 600, 2000])
def test_a_series_keeps_its_order_when_a_progress_bar_redraws_on_one_line(count: int) -> None:
    """tqdm's redraws are '\\r' segments of one physical line: every record has the same line
    number; the decimated head and the exact tail still join without losing the head."""
    from minrepro.diagnose.analyze.series import Series

    one_line, many_lines = Series(), Series()
    for i in range(count):
        one_line.add(line=10, value=float(i))
        many_lines.add(line=i + 1, value=float(i))
    values = one_line.values()
    assert values == many_lines.values() and values[0] == 0.0 and values[-1] == count - 1
    assert values == sorted(set(values))


def test_a_noisy_per_batch_bar_that_fell_from_its_first_loss_is_no_divergence(
        tmp_path) -> None:
    """One tqdm bar (one physical line, each step drawn twice): loss 1.31, then noisy between
    0.0003 and 0.5, its last 32 steps low then higher. Judged on the whole bar it fell; its
    last 64 redraws alone would read as a climb from where it began."""
    import minrepro

    noisy = [0.1358, 0.0068, 0.4616, 0.1627, 0.0005, 0.0003, 0.0195, 0.0050, 0.0071, 0.0077]
    low = [0.0038, 0.0019, 0.0036, 0.0010, 0.0017, 0.0013, 0.0038, 0.0008, 0.0004, 0.0009]
    rising = [0.0818, 0.1607, 0.0038, 0.0691, 0.0771, 0.0026, 0.0569, 0.1559, 0.0294, 0.0093,
              0.0183, 0.0112, 0.0613, 0.0159, 0.0081, 0.1613, 0.0065, 0.0106, 0.2451, 0.0150,
              0.0082, 0.2557]
    values = [1.3088] + noisy * 3 + low + rising
    bar = "\r".join(f"Epoch 1:   1%|          | {step}/5049 [00:31<46:26,  1.79it/s, "
                    f"loss={value:.4f}]" for step, value in enumerate(values) for _ in (0, 1))
    log = tmp_path / "train.log"
    log.write_text(bar + "\n")
    assert minrepro.diagnose(log).cause is None


def test_a_binary_classifier_at_its_prior_entropy_has_learned_nothing() -> None:
    """Per-batch loss noisy around 0.68 for the whole run, the held-out accuracy the majority
    share 0.585 at most evaluations: the entropy of 0.585 is 0.679, the loss of predicting
    the class prior. The same loss beside an accuracy that rose is a fit."""
    import random

    rng = random.Random(0)
    losses = [{"loss": 0.679 + rng.uniform(-0.06, 0.06)} for _ in range(400)]
    stuck = [{"eval_accuracy": a} for a in (0.59, 0.641, 0.644, 0.585, 0.585, 0.585, 0.609)]
    assert curve(losses + stuck)["loss_stagnation"].score >= 0.6
    learning = [{"eval_accuracy": a} for a in (0.59, 0.70, 0.78, 0.84, 0.88, 0.90, 0.91)]
    assert "loss_stagnation" not in curve(losses + learning)


def test_a_run_that_finished_with_a_loss_frozen_for_ten_records_trained_nothing() -> None:
    """Megatron's `lm loss: 1.040111E+01` the same fifteen times and then its own "done": the
    finish does not make a loss that never moved in any printed digit healthy."""
    rows = [f"iteration {i:>8}/      15 | lm loss: 1.040111E+01 | grad norm: 0.000" for i in
            range(1, 16)]
    log = "\n".join([*rows, "[after training is done] datetime: 2026-03-27 17:32:31"]) + "\n"
    diagnosis = diagnose(log)
    assert diagnosis.cause == "loss_stagnation" and diagnosis.confidence >= 0.5
    short = "\n".join([*rows[:7], "[after training is done] datetime: 2026-03-27"]) + "\n"
    assert diagnose(short).cause is None  # seven records: a snippet, not a run


def test_a_loss_nan_from_its_first_record_never_turned_nan_after_finite_steps() -> None:
    """Two NaN losses from batch 1 of a run whose start the log shows: nothing finite came
    before, so no step too large made them (too short a curve for MR-CONV-108 either)."""
    log = ("INFO : Starting training pass on device cuda\n"
           "INFO : Train batch 1/23 - loss=nan\nINFO : Train batch 11/23 - loss=nan\n")
    assert diagnose(log).cause is None
    # the same NaN after finite records is the divergence check's
    grown = ("INFO : Train batch 1/23 - loss=0.71\nINFO : Train batch 6/23 - loss=0.69\n"
             "INFO : Train batch 11/23 - loss=nan\nINFO : Train batch 16/23 - loss=nan\n")
    assert diagnose(grown).cause == "lr_divergence"


@pytest.mark.parametrize("epoch, stalled", [(0.04, False), (31.0, True)])
def test_one_loss_record_at_ln_c_is_a_stall_only_past_the_runs_start(epoch: float,
                                                                       stalled: bool) -> None:
    """Every classifier (and DPO against its reference) starts at ln C: a lone first record
    of 0.6931 in epoch 0.04 is the starting loss; the same lone record in epoch 31 is stuck."""
    line = f"{{'loss': 0.6931, 'grad_norm': 24.79, 'learning_rate': 5e-06, 'epoch': {epoch}}}\n"
    assert (diagnose(line).cause == "loss_stagnation") is stalled


def test_an_rl_agents_loss_that_climbs_with_its_returns_is_no_divergence() -> None:
    """PPO's loss is mostly its value loss, the squared error of returns that grow and jump:
    it climbs and spikes while the agent learns. A loss past any real one still blew up."""
    rows = [{"episode_return": -100.0 + 3 * i, "loss": 300.0 + (900.0 if i % 7 == 6 else 40 * i)}
            for i in range(30)]
    assert "lr_divergence" in curve([{"loss": r["loss"]} for r in rows])
    assert "lr_divergence" not in curve(rows)
    blown = [{**r, "loss": 3e16 * (1 + i)} for i, r in enumerate(rows)]
    assert curve(blown)["lr_divergence"].rule_id == "MR-CONV-102"


@pytest.mark.parametrize("key", ["return", "episodic_return", "ep_rew_mean", "episode_reward"])
def test_an_agents_return_is_read_by_its_usual_names(key: str) -> None:
    from minrepro.diagnose.extract.metricnames import normalise

    assert normalise(key) == "episode_return"
