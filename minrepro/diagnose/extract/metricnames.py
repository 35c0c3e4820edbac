"""Metric names as logs print them -> the normalised names the curves use.

    loss           loss, losses, train_loss, training_loss, total_loss, loss_total, closs,
                   lm_loss, tr_loss, reduced_train_loss, train_loss_step, avg_loss, loss_avg,
                   batch_loss, iter_loss, step_loss, running_loss, epoch_loss, mean_loss,
                   average_loss, average_train_loss, avg_train_loss, mean_train_loss,
                   main/loss (Chainer)
    eval_loss      eval_loss, val_loss, valid_loss, validation_loss, test_loss, loss_val
                   (mmdet), total_val_loss, val. loss, validation/main/loss (Chainer)
    learning_rate  lr, learning_rate, current_lr, cur_lr, lr_adam, lr_adamw, lr_sgd
    grad_norm      grad_norm, gnorm, gradient_norm, total_norm
    accuracy       acc, accuracy, train_acc, acc1, acc@1, accuracy@1, prec@1, top1, top1_acc
    eval_*         eval_X / val_X / valid_X / validation_X / test_X, and X_val / X_valid /
                   X_test (mmdet) -> 'eval_' + normalised X
    quality        held-out quality metrics, higher is better (accuracy, mAP, mIoU, BLEU,
                   ROUGE, F1, AUC, recall@k, PSNR, Dice ...) or lower is better (EPE, WER,
                   CER, perplexity, FID): `quality_direction` tells which
    data_time, batch_time, memory_mb (GPU), rss_mb (host), loss_scale, epoch
    other names containing 'loss' pass through unchanged (cls_loss, loss_bbox, kl_loss,
                   discriminator_loss, generator_loss: parts of a loss, or adversarial ones),
                   but not a loss's settings (loss_weight, lambda_loss, kl_loss_coef)
    loss_<name>    a detector's loss parts printed by their short names (rpn_cls, rcnn_box,
                   YOLO's box / obj / cls): loss_rpn_cls, loss_box ...
"""

from __future__ import annotations

from minrepro.patterns import lazy

ALIASES: dict[str, str] = {
    **dict.fromkeys(("loss", "losses", "total_losses", "cost", "train_cost", "train_loss",
                     "training_loss", "total_loss", "loss_total", "closs", "lm_loss", "tr_loss",
                     "reduced_train_loss", "train_loss_step", "avg_loss", "loss_avg",
                     "train_lm_loss", "iter_loss",
                     "batch_loss", "step_loss", "running_loss", "epoch_loss", "mean_loss",
                     "average_loss", "average_train_loss", "avg_train_loss", "mean_train_loss",
                     "train_epoch_loss", "training_batch_loss", "train_batch_loss",
                     "main_loss",  # Chainer's reporter: main/loss
                     "trnloss", "trn_loss", "trainloss",  # `TrnLoss=3.901 ValLoss=3.912`
                     # a cross-entropy printed by its name (OpenNMT-py's `xent: 4.01`)
                     "xent", "xentropy", "cross_entropy", "crossentropy"), "loss"),
    **dict.fromkeys(("lr", "learning_rate", "current_lr", "cur_lr", "lr_adam", "lr_adamw",
                     "lr_sgd"), "learning_rate"),
    **dict.fromkeys(("grad_norm", "gnorm", "gradient_norm", "total_norm"), "grad_norm"),
    **dict.fromkeys(("acc", "accuracy", "train_acc", "train_accuracy", "training_acc",
                     "training_accuracy", "acc1", "acc@1",
                     "accuracy@1", "prec@1", "top1", "top1_acc", "iter_acc", "batch_acc",
                     "top_1_accuracy", "top1_accuracy", "main_accuracy", "trnacc", "trn_acc",
                     "trainacc"), "accuracy"),
    **dict.fromkeys(("valloss", "validloss", "testloss", "evalloss"), "eval_loss"),
    **dict.fromkeys(("valacc", "validacc", "testacc", "evalacc"), "eval_accuracy"),
    "epoch": "epoch",
    **dict.fromkeys(("data", "data_time", "dataloadingtime", "data_loading_time",
                     "load_data_time", "data_load_time", "dataload_time"), "data_time"),
    **dict.fromkeys(("time", "batch_time", "iter_time", "step_time"), "batch_time"),
    **dict.fromkeys(("max_mem", "mem", "memory", "max_memory", "allocated_memory",
                     "memory_allocated", "mem_alloc", "mem_allocated", "gpu_mem", "cuda_mem",
                     "gpu_memory", "cuda_memory", "max_memory_allocated"), "memory_mb"),
    **dict.fromkeys(("rss", "host_rss", "rss_mem", "ram_used", "ram", "used_ram", "cpu_mem",
                     "host_mem", "ram_usage", "mem_rss"), "rss_mb"),
    "loss_scale": "loss_scale",
    # a reinforcement-learning agent's return (CleanRL, SB3's ep_rew_mean, RLlib): its value
    # loss grows with the returns it learns to reach
    **dict.fromkeys(("return", "episode_return", "episodic_return", "mean_return",
                     "avg_return", "average_return", "ep_rew_mean", "episode_reward",
                     "episode_reward_mean", "mean_reward", "avg_reward", "reward"),
                    "episode_return"),
    **dict.fromkeys(("skipped", "skipped_steps", "skipped_iters", "num_skipped"),
                    "skipped_steps"),  # DeepSpeed's step=N, skipped=M: steps lost to overflow
}
_BARE_PHASE = {"train": "loss", "training": "loss", "val": "eval_loss", "valid": "eval_loss",
               "validation": "eval_loss"}
_NAMES_A_METRIC = lazy(r"(?i)loss|acc|auc|f1|dice|iou|error|score|map\b|prec|recall|ppl")
STEP_KEYS = frozenset(("step", "global_step", "iter", "iteration", "it", "num_updates",
                       "train_global_step", "trainer_global_step"))
_EVAL_PREFIXES = ("eval_", "val_", "vali_", "valid_", "validation_", "test_", "testing_")
_EVAL_SUFFIXES = ("_val", "_valid", "_test", "_eval")
_LOSS_SETTING = lazy(r"_(?:weights?|coef|coeff|coefficient|factor|lambda|alpha|beta|type|fn|"
                     r"func|name|start|warmup|every|freq)$|^lambda_")
#: A detector's loss parts as some print them, without the word loss: faster-rcnn.pytorch's
#: `rpn_cls: 0.17, rpn_box: 0.05, rcnn_cls: 0.94, rcnn_box 0.04`, YOLO's `box obj cls`.
_SHORT_PART = lazy(r"(?:(?:rpn|rcnn|roi)_)?(?:cls|box|bbox|reg|obj|objectness|dfl)")
_LOSS_SUMMARY = lazy(r"(?:initial|final|best|min|lowest)_")
#: What follows `eval_` in a config dump: when and how much to evaluate (`eval_every: 137`,
#: `eval_tokens: 82293973`, `eval_batch_size: 8`), settings printed once, not measurements
_EVAL_SETTING = lazy(r"(?:every|steps?|interval|freq(?:uency)?|period|tokens|batch_size|bs|"
                     r"iters?|epochs?|samples|size|strategy|delay|start|accumulation_steps)")
_TOTAL_EVAL_LOSS = lazy(r"(?:total_)?(?:val|valid|validation|eval|test)_(?:total_)?loss")

#: Held-out quality: higher is better. Matched on the normalised name without `eval_`.
_QUALITY_UP = lazy(
    r"(?:top_?[15]_?)?acc(?:uracy)?(?:@\d|_?top\d|_?\d)?|top[15]|prec@\d|(?:bbox_|segm_)?m?ap"
    r"(?:50|75|_50|_75|@0\.5|_0\.5)?|m?iou|mean_iou|dice|bleu(?:_?\d)?|rouge\w*|f1(?:_\w+)?"
    r"|auc|roc_auc|r@\d+|recall(?:@\d+)?|precision|psnr|ssim|exact_match|em|pix_?acc|mcc"
    r"|matthews_correlation|spearmanr|pearson|ndcg\w*|hit@\d+|score")
#: Held-out quality: lower is better.
_QUALITY_DOWN = lazy(r"epe|wer|cer|ppl|perplexity|fid|error|err|mae|rmse|ter")


def clean(key: str) -> str:
    return ("_".join(key.lower().replace(". ", " ").split()).replace("/", "_")
            .replace("-", "_"))


def normalise(key: str) -> str | None:
    """A printed metric name -> its normalised name, or None when it is not a metric we keep."""
    name = clean(key)
    if name in ALIASES:
        return ALIASES[name]
    if _TOTAL_EVAL_LOSS.fullmatch(name):
        return "eval_loss"  # "total_val_loss", "val_total_loss"
    for prefix in _EVAL_PREFIXES:
        if name.startswith(prefix) and len(name) > len(prefix):
            if _EVAL_SETTING.fullmatch(name[len(prefix):]):
                return None
            return "eval_" + _base(name[len(prefix):])
    for suffix in _EVAL_SUFFIXES:
        if name.endswith(suffix) and len(name) > len(suffix) and (
                "loss" in name or quality_direction(name[: -len(suffix)])):
            return "eval_" + _base(name[: -len(suffix)])
    if name in ("train_step_time", "trainsteptime", "compute_time"):
        return "batch_time"
    if "loss" in name:
        # a loss's weight in the objective is a setting (`BG_CLS_LOSS_WEIGHT: 0.2` in a
        # config dump, `loss_weight=1.0`), not a measurement; loss_scale is fp16's reading;
        # an initial, final or best loss sums something up (a layer's reconstruction before
        # and after, a run's best): no point of the curve
        if _LOSS_SETTING.search(name) or _LOSS_SUMMARY.match(name):
            return None
        return name
    if quality_direction(name):
        return ALIASES.get(name, name)
    if _SHORT_PART.fullmatch(name):
        return f"loss_{name}"
    return None


def _base(name: str) -> str:
    return ALIASES.get(name, name)


def quality_direction(name: str) -> int:
    """+1 for a higher-is-better quality metric, -1 for lower-is-better, 0 for neither."""
    name = name.removeprefix("eval_")
    if _QUALITY_UP.fullmatch(name):
        return 1
    if _QUALITY_DOWN.fullmatch(name):
        return -1
    return 0


def bare_phase(name: str, value: str, text: str) -> str | None:
    """`Epoch [3/30] Train: 0.0548 | Val: 0.0499`: a phase named alone before a decimal, on a
    line that names no metric, is that phase's loss (not `Train 3,` a count, nor `Acc ->
    Train: 0.93, Val: 0.91`, the splits of a metric named before them)."""
    if "." not in value or _NAMES_A_METRIC.search(text):
        return None
    return _BARE_PHASE.get(name)
