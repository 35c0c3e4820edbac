"""A model that predicts one class: a printed confusion matrix all in one column, a per-class
held-out metric at exactly 0 while accuracy stays high, or one held-out accuracy at every
evaluation while the loss moves (single_class_labels, MR-CONV-109); and the accuracy gap of
a model that memorised its training set (overfitting, MR-PREC-104), which a run that says it
finished needs more than to be named."""

from __future__ import annotations

import pytest

from minrepro.diagnose.extract.confusion import ConfusionExtractor
from minrepro.diagnose.extract.events import RunEndedExtractor
from minrepro.model import Line
from tests.test_failures import diagnose

COLLAPSED = """Train Epoch: 65 [256/316 (81%)] Loss: 1.493753
Training Confusion Matrix for Epoch 65:
 [[    0     0  7917     0     0]
 [    0     0  2748     0     0]
 [    0     0 17009     0     0]
 [    0     0  5407     0     0]
 [    0     0  7271     0     0]]
    epoch          : 65
    loss           : 1.481035739937915
"""

LEARNED = """Confusion matrix:
[[50  2  1]
 [ 3 45  2]
 [ 0  4 48]]
"""


def matrices(text: str) -> list:
    extractor = ConfusionExtractor()
    found = [m for i, t in enumerate(text.splitlines(), 1) for m in extractor.feed(Line(i, t))]
    return found + list(extractor.close())


def test_a_numpy_matrix_under_its_heading_is_read_row_by_row() -> None:
    (matrix,) = matrices(COLLAPSED)
    assert matrix.rows[2] == (0, 0, 17009, 0, 0) and len(matrix.rows) == 5
    assert matrix.line == 3 and matrix.last[0] == 7


def test_a_tensor_and_a_list_of_lists_are_matrices_too() -> None:
    (tensor,) = matrices("confusion: tensor([[12,  0],\n        [ 3,  0]])\n")
    assert tensor.rows == ((12, 0), (3, 0))
    (listed,) = matrices("confusion_matrix = [[5, 1],\n [2, 7]]\nepoch 3\n")
    assert listed.rows == ((5, 1), (2, 7))


def test_rows_without_a_confusion_heading_or_wrapped_by_numpy_are_no_matrix() -> None:
    assert matrices("[[0 0 5]\n [0 0 7]\n [0 0 9]]\n") == []  # a tensor of anything
    wrapped = "Confusion matrix:\n[[0 0 5 0\n  0 0]\n [0 0 7 0\n  0 0]]\n"
    assert matrices(wrapped) == []


LABELLED = """Validation confusion matrix:
           P = 0   P = 1 | Total
    L = 0  {a}   {b} | 0.884
    L = 1  {c}   {d} | 0.116
    Total  1.000   0.000 | 0.884
"""


def test_a_labelled_table_of_shares_is_a_matrix() -> None:
    """A header of predicted classes, rows named by the true class, a total column and row
    (a Data Science Stack Exchange question's binary classifier)."""
    (matrix,) = matrices(LABELLED.format(a="0.884", b="0.000", c="0.116", d="0.000"))
    assert matrix.rows == ((0.884, 0.0), (0.116, 0.0)) and matrix.line == 3
    one_class = diagnose(LABELLED.format(a="0.884", b="0.000", c="0.116", d="0.000"))
    assert one_class.cause == "single_class_labels"
    learned = diagnose(LABELLED.format(a="0.850", b="0.034", c="0.020", d="0.096"))
    assert learned.cause is None
    assert matrices("Confusion matrix:\n  cat dog\n  cat 12 3\n  dog 4 20\n")[0].rows == (
        (12, 3), (4, 20))


def test_an_accuracy_the_same_to_every_digit_while_the_loss_falls_is_one_class() -> None:
    """A fine-tune printing `Accuracy: 66.29629629629629%` at each check while its loss falls
    1.02 -> 0.39: the share of the dominant class, an argmax that never changes. A round
    batch accuracy repeating (87.5 %) or a progress bar redrawn as it was is no such sign."""
    losses = (1.0213, 0.9081, 0.6950, 0.6489, 0.7168, 0.3855)
    accuracies = ("66.17283950617283", *(["66.29629629629629"] * 5))
    rows = [f"Iteration: {i * 1000}. Loss: {loss}. Accuracy: {acc}%"
            for i, (loss, acc) in enumerate(zip(losses, accuracies, strict=True))]
    assert diagnose("\n".join(rows)).cause == "single_class_labels"
    round_share = [row.replace("66.29629629629629", "87.5") for row in rows]
    assert diagnose("\n".join(round_share)).cause is None
    redrawn = rows[:2] + [rows[2]] * 4
    assert diagnose("\n".join(redrawn)).cause != "single_class_labels"


def test_every_sample_predicted_as_one_class_is_single_class_labels() -> None:
    diagnosis = diagnose(COLLAPSED)
    assert diagnosis.cause == "single_class_labels" and diagnosis.rule_id == "MR-CONV-109"
    assert dict(diagnosis.params) == {"num_classes": 5, "predicted_class": 2}


def test_a_matrix_that_learned_or_an_early_collapse_that_recovered_is_no_finding() -> None:
    assert diagnose(LEARNED).cause is None
    early = COLLAPSED.replace("Epoch 65", "Epoch 1") + LEARNED
    assert diagnose(early).cause is None


def test_a_per_class_metric_at_zero_beside_a_high_accuracy_is_one_class() -> None:
    lines = [f"Epoch [{e}/50], Loss: {20 - e:.4f},\n[Validation] Acc: 0.95{e}, SE: 0.0000, "
             f"SP: 0.9997, PC: 0.0000, F1: {0.006 if e == 1 else 0.0:.4f}, JS: 0.0000\n"
             for e in range(1, 7)]
    diagnosis = diagnose("".join(lines))
    assert diagnosis.cause == "single_class_labels" and diagnosis.rule_id == "MR-CONV-109"


def test_one_accuracy_at_every_evaluation_while_the_loss_moves_is_one_class() -> None:
    rows = [(1.3444, 1.2752), (1.2624, 1.2802), (1.2637, 1.2712), (1.2484, 1.2623),
            (1.2401, 1.2588)]
    keras = "".join(f"Epoch {i}/5\n880/880 [====] - 540s - loss: {a} - acc: 0.4750 - "
                    f"val_loss: {b} - val_acc: 0.4455\n" for i, (a, b) in enumerate(rows, 1))
    diagnosis = diagnose(keras)
    assert diagnosis.cause == "single_class_labels" and diagnosis.params["accuracy"] == 0.4455
    moving = keras.replace("val_acc: 0.4455", "val_acc: 0.4{}").format(*"56789")
    assert diagnose(moving).cause != "single_class_labels"


def test_training_accuracy_near_100_far_above_held_out_accuracy_is_overfitting() -> None:
    log = "".join(f"Iter {i}: Training Loss = 0.0{i % 5 + 1}, Accuracy = 1.0000\n"
                  for i in range(20, 100, 20)) + "Iter 120: Testing Accuracy = 0.4336\n"
    diagnosis = diagnose(log)
    assert diagnosis.cause == "overfitting" and diagnosis.rule_id == "MR-PREC-104"
    assert diagnosis.params["eval_accuracy"] == 0.4336


def test_a_hard_tasks_usual_accuracy_gap_is_no_overfitting() -> None:
    """CIFAR-100 trained to 99.9 % with 77 % held out is a healthy run."""
    log = "".join(f"epoch {e} train_acc {min(99.9, 60 + 8 * e):.1f} val_acc "
                  f"{min(77.0, 50 + 5 * e):.1f} loss {2.0 / e:.3f}\n" for e in range(1, 11))
    assert diagnose(log).cause is None


def test_a_zero_shot_evaluation_before_training_is_no_gap() -> None:
    log = ("**** Zero-shot CLIP's test accuracy: 54.53. ****\n"
           + "".join(f"LR: 0.00001, Acc: {min(100.0, 60 + 10 * i):.4f}, Loss: 0.{9 - i}000\n"
                     for i in range(8)))
    assert diagnose(log).cause is None


@pytest.mark.parametrize("line", [
    "2025-09-16 18:56:16,836 - __main__ - INFO - Finetuning completed successfully!",
    "All folds complete. Aggregated accuracy: 0.4966",
    "Experiment finished.",
])
def test_the_runs_own_word_that_it_finished(line: str) -> None:
    (ended,) = RunEndedExtractor().feed(Line(7, line))
    assert ended.line == 7


def test_a_report_of_finished_work_inside_a_sentence_is_no_end() -> None:
    assert RunEndedExtractor().feed(Line(1, "Downloading shards: done")) == ()


def test_a_binary_tasks_four_counts_are_a_matrix() -> None:
    log = ("INFO:__main__:***** Eval results *****\nINFO:__main__:  fn = 0\n"
           "INFO:__main__:  fp = 2529\nINFO:__main__:  mcc = 0.0\nINFO:__main__:  tn = 0\n"
           "INFO:__main__:  tp = 2471\n")
    (matrix,) = matrices(log)
    assert matrix.rows == ((0, 2529), (0, 2471))
    diagnosis = diagnose(log)
    assert diagnosis.cause == "single_class_labels" and diagnosis.params["predicted_class"] == 1
    mixed = log.replace("fn = 0", "fn = 310").replace("tn = 0", "tn = 2219")
    assert diagnose(mixed).cause is None


def test_a_negative_loss_is_no_collapse_to_zero() -> None:
    """nnU-Net's CE - Dice loss goes below 0 on a healthy run."""
    log = "".join(f"epoch: {e}\ntrain loss : {-0.39 + e / 1000:.4f}\nvalidation loss: "
                  f"{-0.40 - e / 1000:.4f}\n" for e in range(162, 166))
    assert diagnose(log).cause is None


def test_a_held_out_accuracy_at_chance_beside_a_rising_training_accuracy_is_overfitting() -> None:
    """The held-out metric never moved, but the training set was learned: it did fit."""
    rows = [(0.4826, 1.3670, 74.9, 52.7), (0.3215, 1.7187, 85.6, 51.1),
            (0.2501, 1.9813, 89.4, 53.0), (0.1943, 2.1985, 92.0, 51.1),
            (0.1545, 2.3306, 93.8, 51.4), (0.1257, 2.5236, 95.1, 50.9),
            (0.1081, 2.6030, 95.8, 51.8)]
    log = "".join(f"Epoch {i} | Train Loss {a} | Valid Loss {b} | Train Acc {c} | Valid Acc {d}\n"
                  for i, (a, b, c, d) in enumerate(rows, 1))
    assert diagnose(log).cause == "overfitting"


def test_two_evaluations_climbing_to_several_times_a_falling_training_loss() -> None:
    log = ("iter 799: loss 0.6466\nstep 800: train loss 0.9795, val loss 3.7535\n"
           "iter 999: loss 0.3390\nstep 1000: train loss 0.6703, val loss 3.8986\n")
    assert diagnose(log).cause == "overfitting"
    close = log.replace("3.7535", "1.2535").replace("3.8986", "1.2786")
    assert diagnose(close).cause is None


def test_a_one_by_one_matrix_and_the_loaders_count_say_one_class() -> None:
    log = ("2025-06-12 09:05:37,522 - leaf_training - INFO - 发现 1 个类别: ['番茄']\n"
           + "".join("  训练损失: 0.0000 | 训练准确率: 1.0000\n"
                     "2025-06-12 09:07:04,032 - leaf_training - INFO - 混淆矩阵:\n[[700]]\n"
                     for _ in range(3)))
    (matrix, *_) = matrices(log)
    assert matrix.rows == ((700,),)
    assert diagnose(log).cause == "single_class_labels"
    assert diagnose("Found 2800 images belonging to 1 classes.\n").cause == "single_class_labels"


def test_a_loss_that_never_moves_a_digit_is_stuck() -> None:
    """Softmax over one output under MSE: no gradient, the very same loss every epoch."""
    log = "".join(f"[ Info: Epoch {e}\nloss : 0.28823234186242325\n" for e in range(1, 11))
    assert diagnose(log).cause == "loss_stagnation"
    rounded = "".join(f"epoch {e} loss : 0.29\n" for e in range(1, 11))  # two decimals: maybe
    assert diagnose(rounded).cause is None


def test_rows_of_different_lengths_leave_no_matrix_behind() -> None:
    log = "Confusion matrix:\n[[1 2]\n [3 4]\n [5 6 7]]\nConfusion matrix:\nnone yet\n"
    assert matrices(log) == []


def test_a_cross_entropy_part_in_the_billions_is_a_divergence() -> None:
    """mmdetection at the 8-GPU learning rate on one GPU: no climb shown, the logits gone."""
    log = ("2021-01-03 10:02:15,629 - mmdet - INFO - Epoch [1][500/58633]   lr: 1.996e-02, "
           "time: 0.434, loss_rpn_cls: 2.5725, loss_rpn_bbox: 0.0047, loss_cls: 2326544033.5461, "
           "acc: 84.1525, loss_bbox: 135189261.4936, loss: 2461733416.8998\n")
    diagnosis = diagnose(log)
    assert diagnosis.cause == "lr_divergence" and diagnosis.rule_id == "MR-CONV-102"
    regression = log.replace("loss_cls: 2326544033.5461", "loss_cls: 0.3461").replace(
        "loss_bbox: 135189261.4936", "loss_bbox: 13518.4936")  # a summed box loss may be large
    assert diagnose(regression).cause != "lr_divergence"


REPORT = """              precision    recall  f1-score   support

           0       0.00      0.00      0.00        42
           1       0.40      1.00      0.57        28

    accuracy                           0.40        70
   macro avg       0.20      0.50      0.29        70
weighted avg       0.16      0.40      0.23        70
"""


def test_a_classification_report_with_every_sample_in_one_class_is_one_class() -> None:
    diagnosis = diagnose(REPORT)
    assert diagnosis.cause == "single_class_labels" and diagnosis.rule_id == "MR-CONV-109"
    assert diagnosis.params["predicted_class"] == 1


def test_a_classification_report_of_a_model_that_tells_classes_apart_is_no_finding() -> None:
    mixed = REPORT.replace("0.00      0.00      0.00        42",
                           "0.81      0.62      0.70        42")
    assert diagnose(mixed).cause is None


def test_a_held_out_loss_nan_beside_a_finite_training_loss_is_the_held_out_datas() -> None:
    """Time-Series-Library's line: the weights are sound, the validation data are not."""
    log = "".join(f"Epoch: {e}, Steps: 35 | Train Loss: {1.03 - e / 100:.7f} Vali Loss: nan "
                  f"Test Loss: 1.4440242\n" for e in range(1, 4))
    diagnosis = diagnose(log)
    assert diagnosis.cause == "nan_in_data" and diagnosis.rule_id == "MR-CONV-110"
    both = log.replace("Train Loss: 1.0", "Train Loss: nan 1.0")  # training NaN too: not this
    assert diagnose(both).rule_id != "MR-CONV-110"


def test_a_held_out_loss_nan_now_and_then_is_no_held_out_data_fault() -> None:
    log = "".join(f"avg. train_loss {26 - e / 10:.3f}\navg. test_loss "
                  f"{'nan' if e % 3 == 0 else 5.43} avg. Accuracy@1 2.041\n" for e in range(1, 10))
    assert diagnose(log).rule_id != "MR-CONV-110"


def test_a_held_out_loss_that_rises_while_its_dice_holds_is_no_overfitting() -> None:
    """Crack segmentation: val loss 0.11 -> 0.125 over 600 epochs, val Dice 0.770 -> 0.773."""
    rows = [(0.10 - e * 0.006, 0.1106 + max(0, e - 3) * 0.0025, 0.770 + (e % 3) * 0.0015)
            for e in range(10)]
    log = "".join(f"Epoch {e}: loss={a:.4f}\nValidate: Val Loss={b:.4f}, Val Dice={c:.3f}\n"
                  for e, (a, b, c) in enumerate(rows))
    assert diagnose(log).cause is None
    worse = "".join(f"Epoch {e}: loss={a:.4f}\nValidate: Val Loss={b:.4f}, Val Dice="
                    f"{0.77 - max(0, e - 3) * 0.02:.3f}\n" for e, (a, b, _) in enumerate(rows))
    assert diagnose(worse).cause == "overfitting"


def test_a_best_so_far_loss_printed_as_inf_is_no_divergence() -> None:
    """A run of 0 epochs prints its initial best (float('inf')), not a loss that blew up."""
    log = ("09-06 15:04:10 - INFO - __main__ - epochs: 0\n"
           "09-06 15:04:16 - INFO - __main__ - Best model found at epoch 0, Val Loss: inf, "
           "AUC: 0.00%, AP: 0.00%\n09-06 15:04:16 - INFO - __main__ - Done.\n")
    assert diagnose(log).cause is None
