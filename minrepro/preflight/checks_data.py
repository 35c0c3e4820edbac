"""Checks of the data sample: labels (one class, imbalance, range), NaN/empty inputs,
train/eval overlap, and that the data paths the config names exist."""

from __future__ import annotations

from minrepro.preflight.inputs import Inputs, Outcome, cannot, failed, passed

#: SageMaker Clarify's class-imbalance concern, as a ratio of the largest to smallest class.
IMBALANCE_RATIO = 10.0
#: Of the eval rows, the share that may also be train rows before the eval says little.
OVERLAP_SHARE = 0.01


def _labels(inputs: Inputs) -> Outcome | None:
    """cannot_check when there is no labelled train sample; None when there is."""
    if inputs.train is None:
        return cannot("no training data sample (--data, or train_file in the config)")
    if not inputs.train.labels:
        return cannot(f"{inputs.train.path}: no label column ({', '.join(('label', 'target'))}"
                      ", ... ) or class folders")
    return None


def check_single_class(inputs: Inputs) -> Outcome:
    missing = _labels(inputs)
    if missing is not None:
        return missing
    assert inputs.train is not None
    labels = inputs.train.labels
    if len(labels) == 1:
        (only, count), = labels.items()
        return failed(f"all {count} train rows have label {only!r}")
    return passed(f"{len(labels)} classes in {inputs.train.rows} train rows")


def check_imbalance(inputs: Inputs) -> Outcome:
    missing = _labels(inputs)
    if missing is not None:
        return missing
    assert inputs.train is not None
    counts = inputs.train.labels.most_common()
    if len(counts) < 2:
        return cannot("one class only (the single-class check says so)")
    (top, most), (bottom, least) = counts[0], counts[-1]
    ratio = most / least
    said = f"largest class {top!r} ({most}) / smallest {bottom!r} ({least}) = {ratio:.1f}x"
    return failed(said + f" > {IMBALANCE_RATIO:g}x") if ratio > IMBALANCE_RATIO else passed(said)


def _num_labels(inputs: Inputs) -> int | None:
    value = inputs.config.number("num_labels")
    if value is None and inputs.model is not None:
        raw = inputs.model.get("num_labels")
        mapping = inputs.model.get("id2label")
        value = float(raw) if isinstance(raw, int) else (
            float(len(mapping)) if isinstance(mapping, dict) and mapping else None)
    return int(value) if value is not None else None


def check_label_range(inputs: Inputs) -> Outcome:
    missing = _labels(inputs)
    if missing is not None:
        return missing
    assert inputs.train is not None
    count = _num_labels(inputs)
    if count is None:
        return cannot("num_labels is set neither in the config nor in the model config")
    as_ints = inputs.train.int_labels
    if as_ints is None:
        distinct = len(inputs.train.labels)
        if distinct > count:
            return failed(f"{distinct} distinct labels > num_labels {count}")
        return passed(f"{distinct} distinct labels <= num_labels {count}")
    outside = sorted(v for v in as_ints if not 0 <= v < count)
    if outside:
        return failed(f"labels {outside[:5]} outside [0, {count - 1}] (num_labels {count})")
    return passed(f"labels within [0, {count - 1}]")


def check_nan_empty(inputs: Inputs) -> Outcome:
    if inputs.train is None and inputs.eval is None:
        return cannot("no data sample (--data, or train_file in the config)")
    bad = []
    for sample in (inputs.train, inputs.eval):
        if sample is None:
            continue
        if sample.nan_count:
            bad.append(f"{sample.path}: {_rows(sample.nan_count)} with NaN/Inf "
                       f"(first {list(sample.nan_rows)})")
        if sample.empty_count:
            bad.append(f"{sample.path}: {_rows(sample.empty_count)} with an empty input "
                       f"(first {list(sample.empty_rows)})")
    return failed("; ".join(bad)) if bad else passed("no NaN, Inf or empty inputs")


def _rows(count: int) -> str:
    return f"{count} row" + ("" if count == 1 else "s")


def check_eval_overlap(inputs: Inputs) -> Outcome:
    if inputs.train is None or inputs.eval is None:
        return cannot("needs both a train sample and an eval file (validation_file)")
    shared = len(inputs.train.hashes & inputs.eval.hashes)
    total = max(len(inputs.eval.hashes), 1)
    said = f"{shared} of {total} distinct eval inputs also in train"
    return failed(said) if shared / total > OVERLAP_SHARE else passed(said)


def check_data_paths(inputs: Inputs) -> Outcome:
    named = [(key, path) for key in ("train_file", "eval_file")
             if (path := inputs.config.path(key)) is not None]
    if not named:
        return cannot("the config names no data path (train_file, validation_file, ...)")
    missing = [f"{key}={path.name}" for key, path in named if not path.exists()]
    if missing:
        return failed("not found: " + ", ".join(missing))
    return passed("found: " + ", ".join(key for key, _ in named))
