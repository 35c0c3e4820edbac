"""The analyzers' checks: stable ids in the rule id space, so that every finding names what
made it and `minrepro rules ID` explains it (the fix is the cause's, from its rule file).

Pattern rules number from 001 in each family; analyzer checks from 101.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class AnalyzerCheck:
    id: str
    cause: str
    title: str
    explanation: str
    source: str  # the analyzer that runs it


OOM_FULL_CARD = AnalyzerCheck(
    "MR-MEM-101", "cuda_oom", "CUDA OOM report: the request does not fit the free memory",
    "The numbers of the first CUDA out-of-memory report: the allocation asked for more than was "
    "free, and the memory PyTorch reserved but had not allocated could not serve it either.",
    "analyze/events.py: OomAnalyzer")
OOM_FRAGMENTED = AnalyzerCheck(
    "MR-MEM-102", "allocator_fragmentation",
    "CUDA OOM report: enough memory reserved but unallocated (fragmented pool)",
    "The first out-of-memory report shows reserved-but-unallocated memory that could serve the "
    "request and is a large share of the pool: the caching allocator holds it in blocks it "
    "cannot use for this size.", "analyze/events.py: OomAnalyzer")
GPU_MEMORY_GROWS = AnalyzerCheck(
    "MR-MEM-103", "undetached_loss_list", "Logged GPU memory grows step after step",
    "The GPU memory a run logs rises at almost every step until the end (1.5x or more): tensors "
    "that keep their graphs alive accumulate.", "analyze/curves.py: memory growth")
HOST_MEMORY_GROWS = AnalyzerCheck(
    "MR-MEM-104", "host_oom_dataloader", "Logged host RAM (RSS) grows step after step",
    "The process's resident memory rises step after step (1.5x or more): DataLoader workers "
    "touching a dataset held in Python objects copy it page by page.",
    "analyze/curves.py: host memory growth")
LOSS_NOT_FINITE = AnalyzerCheck(
    "MR-CONV-101", "lr_divergence", "Loss turned NaN/Inf after finite steps",
    "The training (or evaluation) loss was finite, then became NaN or Inf; most often after it "
    "grew, the step was too large.", "analyze/curves.py: divergence")
LOSS_SPIKES = AnalyzerCheck(
    "MR-CONV-102", "lr_divergence", "Loss (or gradient norm) explodes far above its level",
    "The loss climbed to several times its earlier level and stayed there, or spiked "
    "repeatedly, or the gradient norm exploded.", "analyze/curves.py: divergence")
LOSS_PART_NOT_FINITE = AnalyzerCheck(
    "MR-CONV-105", "nan_in_data", "One part of the loss turned NaN while the others stayed "
    "finite", "A loss summed of parts (box regression, classification, mask ...) has one part "
    "NaN/Inf while the others are still finite, and the loss did not climb before: weights "
    "blown up by a step too large would make every part NaN; one part alone takes the NaN from "
    "its own inputs (a degenerate box, an empty target, a NaN label).",
    "analyze/curves.py: loss parts")
LOSS_NAN_AT_START = AnalyzerCheck(
    "MR-CONV-106", "nan_in_data", "Loss NaN at step 0, before any optimizer step",
    "The first training loss the run logs, at step 0, is already NaN/Inf: it was computed with "
    "the initial weights, so no learning rate made it; the inputs (or the targets) of that "
    "batch hold the NaN.", "analyze/curves.py: loss at step 0")
LOSS_NAN_FIRST_RECORD = AnalyzerCheck(
    "MR-CONV-108", "nan_in_data", "Loss NaN from the first record the run logs",
    "The first training loss the log shows, within the first steps (or with no step), is "
    "already NaN/Inf and never finite before it: a learning rate needs steps to blow the "
    "weights up, so a batch's inputs or targets (or the loss computed on them) hold the NaN. "
    "Weaker than a NaN at step 0: a first record that averages many steps may hide a "
    "divergence.", "analyze/curves.py: loss at start")
LOSS_NAN_TRANSIENT = AnalyzerCheck(
    "MR-CONV-107", "nan_in_data", "Loss NaN on some batches, finite again after",
    "The training loss was NaN/Inf at some steps and finite again at its earlier level after, "
    "in a run without mixed precision: weights blown up by a step too large stay NaN, so the "
    "NaN came with those batches (a NaN or Inf in their inputs or targets, an empty or "
    "degenerate sample) and the loop went on past them.", "analyze/curves.py: transient NaN")
EVAL_LOSS_NOT_FINITE = AnalyzerCheck(
    "MR-CONV-110", "nan_in_data", "Held-out loss NaN while the training loss stays finite",
    "The evaluation loss is NaN/Inf while the training loss printed beside it stays finite: the "
    "weights are sound, so the held-out data (or their preprocessing: a normalisation by a "
    "zero spread, a missing value) hold the NaN.", "analyze/heldout.py: held-out NaN")
LOSS_PLATEAU = AnalyzerCheck(
    "MR-CONV-103", "loss_stagnation", "Loss flat on a plateau (at ln C: uniform guessing)",
    "The loss stays in a narrow band for the whole run; at ln(C) for C classes the model "
    "predicts every class alike.", "analyze/curves.py: stagnation")
LOSS_COLLAPSE = AnalyzerCheck(
    "MR-CONV-104", "single_class_labels", "Training loss collapses to zero while evaluation "
    "sits at chance", "A training loss near zero (or accuracy 100 %) while held-out accuracy is "
    "at 1/C: the training labels hold a single class.", "analyze/curves.py: collapse")
ONE_CLASS_PREDICTED = AnalyzerCheck(
    "MR-CONV-109", "single_class_labels", "The model predicts one class for every sample",
    "A per-class held-out metric (F1, recall, IoU) is exactly 0 at the last evaluations while "
    "accuracy stays high, or held-out accuracy is the very same number at every evaluation "
    "while the loss moves: the predictions never leave one class, and the accuracy is that "
    "class's share. The labels (or their weights) leave the other classes too rare to learn, "
    "or the targets do not reach the loss as classes.", "analyze/heldout.py: one class")
LOSS_SCALE_COLLAPSE = AnalyzerCheck(
    "MR-PREC-101", "fp16_overflow", "fp16 loss scale keeps falling (to its minimum)",
    "The dynamic loss scale was reduced again and again, below 1 or to its floor: every step "
    "overflows in fp16.", "analyze/events.py: LossScaleAnalyzer")
EVAL_LOSS_RISES = AnalyzerCheck(
    "MR-PREC-102", "overfitting", "Validation loss rises while training loss falls",
    "After its best evaluation the held-out loss climbs while the training loss keeps falling.",
    "analyze/curves.py: overfitting")
GENERALISATION_GAP = AnalyzerCheck(
    "MR-PREC-103", "overfitting", "Validation loss far above the training loss",
    "Few evaluations, but the held-out loss is an order of magnitude above a small training "
    "loss, or climbs to several times a training loss that keeps falling.",
    "analyze/heldout.py: overfitting")
ACCURACY_GAP = AnalyzerCheck(
    "MR-PREC-104", "overfitting", "Training accuracy near 100 % far above held-out accuracy",
    "The training set is classified almost perfectly while held-out accuracy stays 35 points "
    "or more below: the model memorised its training samples.", "analyze/heldout.py: overfitting")
DATA_TIME_SHARE = AnalyzerCheck(
    "MR-SPD-101", "dataloader_bottleneck", "Most of each step spent waiting for data",
    "The logged data-loading time is most of the step time: the GPU waits for the input "
    "pipeline.", "analyze/curves.py: data share")
NCCL_WATCHDOG = AnalyzerCheck(
    "MR-SPD-102", "nccl_timeout", "NCCL watchdog timeout: a rank never "
    "joined the collective", "The first watchdog timeout, with its operation, timeout and rank; "
    "when another rank crashed first this is its cascade.", "analyze/events.py: NcclAnalyzer")

CHECKS: tuple[AnalyzerCheck, ...] = (
    OOM_FULL_CARD, OOM_FRAGMENTED, GPU_MEMORY_GROWS, HOST_MEMORY_GROWS, LOSS_NOT_FINITE,
    LOSS_SPIKES, LOSS_PART_NOT_FINITE, LOSS_NAN_AT_START, LOSS_NAN_FIRST_RECORD,
    LOSS_NAN_TRANSIENT, EVAL_LOSS_NOT_FINITE, LOSS_PLATEAU, LOSS_COLLAPSE, ONE_CLASS_PREDICTED,
    LOSS_SCALE_COLLAPSE, EVAL_LOSS_RISES, GENERALISATION_GAP, ACCURACY_GAP, DATA_TIME_SHARE,
    NCCL_WATCHDOG,
)
