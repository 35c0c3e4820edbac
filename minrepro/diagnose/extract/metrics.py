"""Training metrics printed by common loops -> MetricRecord with normalised names.

Formats (sources cited in tests/test_extract_metrics.py):
  HF Trainer dict     {'loss': 2.3026, 'grad_norm': 1.2, 'learning_rate': 5e-05, 'epoch': 0.5}
                      (also JSON / fairseq with string values, full-width '：' and '，')
  MetricLogger        Epoch: [1]  [1480/1504]  lr: 0.000012  closs: 0.9233 (0.9531) ...
                      max mem: 51710
  pytorch/examples    Epoch: [0][1760/5005]  Time 1.599 (2.648)  Data 1.296 (2.388)
                      Loss 5.6502 (6.3792)
  tqdm / Lightning    Epoch 1:  39%|...| 4846/12331 [05:59<09:15, 13.47it/s, loss=0.0136, v_num=1]
  Keras-like          1875/1875 - 5s - loss: 0.3 - accuracy: 0.9 - val_loss: 0.4
  plain step lines    step 100 | loss 2.31 | lr 1e-4,  iter 1: loss 11.0666, time: 13381.00ms,
                      epoch 3 loss = 2.30,  Megatron "iteration 1/ 2500 | lm loss: 1.06E+01 | ..."
The current value is taken, never the running average printed in parentheses, except for the
data and batch times, whose averages are kept too (data_time_avg, batch_time_avg): a log printed
every 200 steps shows one step's times, the average covers all of them.

Name normalisation (lower-cased, ' ', '/', '-' -> '_'):
  loss           loss, train_loss, training_loss, total_loss, loss_total, closs, lm_loss, tr_loss,
                 reduced_train_loss, train_loss_step, avg_loss, loss_avg, train_lm_loss,
                 iter_loss, batch_loss, step_loss, running_loss
  eval_loss      eval_loss, val_loss, valid_loss, validation_loss, test_loss
  learning_rate  lr, learning_rate, current_lr, cur_lr, lr_adam, lr_adamw, lr_sgd
  grad_norm      grad_norm, gnorm, gradient_norm, total_norm
  accuracy       acc, accuracy, train_acc, train_accuracy, acc1, acc@1, prec@1, top1, top1_acc,
                 iter_acc, batch_acc
  eval_*         eval_X / val_X / valid_X / validation_X / test_X -> 'eval_' + normalised X
  epoch          epoch;   throughput  tqdm it/s (s/it -> 1/x)
  data_time      data, data_time;   batch_time  time, batch_time, iter_time, step_time (ms -> s)
  memory_mb      GPU memory: max mem, max_mem, mem, memory, max_memory, allocated_memory,
                 memory_allocated, mem_alloc, gpu_mem, cuda_mem, gpu_memory, ... (G/GiB -> x1024)
  rss_mb         host memory: rss, host_rss (G/GiB -> x1024)
  loss_scale     loss_scale, loss scale
  other names containing 'loss' pass through unchanged (cls_loss, loss_bbox, kl_loss).
  tables         a header of metric names (`| epoch | train loss | val loss |`, or columns set
                 apart by tabs or 2+ spaces), then rows of numbers, one record a row
  step (MetricRecord.step, not a value): step, global_step, iter, iteration, it, num_updates,
                 or else tqdm's count (`| 40/1849 [`), or else the first 'N/M' that is not an
                 epoch counter ([1480/1504], 1875/1875).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from minrepro.diagnose.extract.units import FLOAT, is_finite
from minrepro.diagnose.literals import any_of
from minrepro.model import Line, MetricRecord

_ALIASES: dict[str, str] = {
    **dict.fromkeys(("loss", "cost", "train_cost", "train_loss", "training_loss", "total_loss",
                     "loss_total", "closs",
                     "lm_loss", "tr_loss", "reduced_train_loss", "train_loss_step", "avg_loss",
                     "loss_avg", "train_lm_loss", "iter_loss", "batch_loss", "step_loss",
                     "running_loss"), "loss"),
    **dict.fromkeys(("lr", "learning_rate", "current_lr", "cur_lr", "lr_adam", "lr_adamw",
                     "lr_sgd"), "learning_rate"),
    **dict.fromkeys(("grad_norm", "gnorm", "gradient_norm", "total_norm"), "grad_norm"),
    **dict.fromkeys(("acc", "accuracy", "train_acc", "train_accuracy", "acc1", "acc@1",
                     "prec@1", "top1", "top1_acc", "iter_acc", "batch_acc"), "accuracy"),
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
}
_STEP_KEYS = frozenset(("step", "global_step", "iter", "iteration", "it", "num_updates",
                        "train_global_step", "trainer_global_step"))
_EVAL_PREFIXES = ("eval_", "val_", "valid_", "validation_", "test_")
#: Values that alone do not make a metric line (an args dump prints `learning_rate=5e-05`).
_SECONDARY = frozenset(("epoch", "data_time", "batch_time", "memory_mb", "learning_rate",
                        "loss_scale"))
_MAX_VALUES = 48

_VALUE = rf"(?:tensor\()?(?P<val>{FLOAT})"
_MULTIWORD = ("max mem|lm loss|learning rate|grad norm|loss scale|val loss|eval loss|train loss"
              "|valid loss|total loss|test loss|val acc|data time|batch time|ram used|ram usage")
#: `key: value`, `key=value`, `key value`; the value must end the token (not `0.23.ckpt`,
#: `1:52:15`, `4846/12331`, `2017-06`).
_PAIR = re.compile(
    rf"(?:^|(?<=[\s,|{{(\[;，。、>]))(?P<key>(?i:{_MULTIWORD})|[A-Za-z][\w@/\-]*?)"
    rf"\s*(?:[:=：]\s*|\s+)\[?{_VALUE}(?:\s?(?P<unit>ms|MiB|MB|GiB|GB)\b|(?P<letter>[smMG%]))?"
    r"(?!\.?[\w/\-]|:\d)")
_DICT_PAIR = re.compile(rf"['\"](?P<key>[^'\"]{{1,60}})['\"]\s*[:：]\s*['\"]?{_VALUE}['\"]?")
_THROUGHPUT = re.compile(r"(\d+(?:\.\d+)?)\s?(it/s|s/it)")
_FRACTION = re.compile(r"(?<![\d/.:])(\d+)/\s*(\d+)(?![\d/.:])")
#: The PyTorch CIFAR tutorial: `[2,  2400] loss: 1.209` is [epoch, batch].
_EPOCH_BATCH = re.compile(r"\s*\[(\d+),\s+(\d+)\]")
_TQDM_COUNT = re.compile(r"\|\s*(\d+)/(?:\d+|\?)\s*\[")
_EPOCH_BEFORE = re.compile(r"[Ee]poch\s*[:=]?\s*\[?\s*$")
_EPOCH = re.compile(r"[Ee]poch\s*[:=]?\s*\[?\s*(\d+)(?:\s*/\s*\d+)?\]?")
_ASSIGNMENT = re.compile(r"\s+[A-Za-z_][\w.]*\s*[-+*/]?=\s*\S+\s*$")
#: `Data 0.001 (11.761)`, `data: 0.4030 (0.4299)`: the value, then the running average.
_TIME_AVERAGE = re.compile(rf"(?i)\b(?P<key>data|data_time|time|batch_time)\s*[:=]?\s*{FLOAT}"
                           rf"\s*\((?P<avg>{FLOAT})\)")
_TOTAL_EVAL_LOSS = re.compile(r"(?:total_)?(?:val|valid|validation|eval|test)_(?:total_)?loss")
_NOT_METRICS = ("Namespace(", "Arguments(", "Config(", "argparse")
#: Tables (`| epoch | train loss | val loss |` then rows of numbers): cells and their values.
_COLUMN_GAP = re.compile(r"\t+|\s{2,}")
_NUMBER_TOKEN = re.compile(rf"(?<![\w.]){FLOAT}(?![\w.])")
_CELL_NUMBER = re.compile(rf"({FLOAT})\s*%?")
_RULE_CELL = re.compile(r":?-{2,}:?")


def normalise(key: str) -> str | None:
    """A printed metric name -> its normalised name, or None when it is not a metric we keep."""
    name = key.strip().lower().replace(" ", "_").replace("/", "_").replace("-", "_")
    if name in _ALIASES:
        return _ALIASES[name]
    if _TOTAL_EVAL_LOSS.fullmatch(name):
        return "eval_loss"  # "total_val_loss", "val_total_loss"
    for prefix in _EVAL_PREFIXES:
        if name.startswith(prefix) and len(name) > len(prefix):
            rest = name[len(prefix):]
            return "eval_" + _ALIASES.get(rest, rest)
    if name in ("train_step_time", "trainsteptime", "compute_time"):
        return "batch_time"
    if "loss" in name:
        return name
    return None


#: A line holding none of these is no metric line.
TRIGGERS = ("loss", "Loss", "LOSS", "acc", "Acc", "Prec", "it/s", "s/it", "lr", "learning",
            "val", "norm", "top1", "RAM", "rss", "data_time")
_may_hold_metrics = any_of(TRIGGERS)


class MetricExtractor:
    """Metric lines of the formats in the module docstring -> MetricRecord."""

    TRIGGERS = TRIGGERS
    WHOLE_WORDS = ("nan", "inf", "-inf", "infinity")  # a NaN loss anywhere in a big log

    def __init__(self) -> None:
        self._columns: list[str | None] | None = None  # inside a table: its column names

    @property
    def idle(self) -> bool:
        """False inside a table: its rows hold numbers only, none of the TRIGGERS."""
        return self._columns is None

    def feed(self, line: Line) -> Sequence[MetricRecord]:
        text = line.text
        if self._columns is not None:
            row = _table_row(text, self._columns, line)
            if row is not None:
                return row
            self._columns = None  # the table ended
        if not _may_hold_metrics(text):
            return ()
        columns = _table_header(text)
        if columns is not None:
            self._columns = columns
            return ()
        record = parse_metrics(text, line)
        return () if record is None else (record,)

    def close(self) -> Sequence[MetricRecord]:
        return ()


def _cells(text: str) -> list[str]:
    text = text.strip()
    if "|" in text:
        return [cell.strip() for cell in text.strip("|").split("|")]
    return [cell for cell in _COLUMN_GAP.split(text) if cell]


def _table_header(text: str) -> list[str | None] | None:
    """Column names -> normalised metric names (None for other columns), when `text` is the
    header of a table: two or more named columns, no numbers, at least one a metric."""
    if _NUMBER_TOKEN.search(text):  # every metric line has numbers: no split for those
        return None
    cells = _cells(text)
    if len(cells) < 2 or len(cells) > _MAX_VALUES:
        return None
    names = [_column_name(cell) for cell in cells]
    known = [name for name in names if name is not None]
    if len(known) < 2 or not any(name not in ("step", "epoch") for name in known):
        return None
    return names


def _column_name(cell: str) -> str | None:
    key = cell.strip().lower().replace(" ", "_")
    if key in _STEP_KEYS:
        return "step"
    return normalise(cell) if cell else None


def _table_row(text: str, columns: list[str | None], line: Line
               ) -> Sequence[MetricRecord] | None:
    """() for a markdown rule (|---|---|), records for a row of numbers under the header,
    None when the line is neither (the table has ended)."""
    cells = _cells(text)
    if cells and all(_RULE_CELL.fullmatch(cell) for cell in cells):
        return ()
    if len(cells) != len(columns):
        return None
    values: dict[str, float] = {}
    step = None
    for name, cell in zip(columns, cells, strict=True):
        number = _CELL_NUMBER.fullmatch(cell)
        if number is None:
            return None
        if name == "step":
            step = int(float(number[1]))
        elif name is not None:
            values.setdefault(name, float(number[1]))
    if not _is_record(values, step):
        return ()
    return (MetricRecord(line=line.line, values=tuple(values.items()), step=step,
                         rank=line.rank),)


_EVAL_LINE = re.compile(r"^\W*(?:test set|validation set|val(?:idation)?|eval(?:uation)?|test)\b",
                        re.IGNORECASE)


def _as_eval(record: MetricRecord) -> MetricRecord:
    """Lines like "Test set: Average loss: 2.9, Accuracy: ..." report evaluation, not training."""
    values = tuple((name if name.startswith("eval_") or name in _SECONDARY else f"eval_{name}",
                    value) for name, value in record.values)
    return MetricRecord(line=record.line, values=values, step=record.step, rank=record.rank)


def parse_metrics(text: str, line: Line) -> MetricRecord | None:
    record = _parse_metrics(text, line)
    if record is not None and _EVAL_LINE.match(text):
        return _as_eval(record)
    return record


def _parse_metrics(text: str, line: Line) -> MetricRecord | None:
    """One line -> a MetricRecord, or None when the line holds no training metric."""
    if text.startswith(_NOT_METRICS) or any(marker in text for marker in _NOT_METRICS):
        return None
    if _ASSIGNMENT.match(text):
        return None  # an indented `loss = 0.0` is code, not a log record
    values: dict[str, float] = {}
    step: int | None = None
    is_dict = "{" in text and ("'" in text or '"' in text)
    pairs = _DICT_PAIR.finditer(text) if is_dict else _PAIR.finditer(text)
    for match in pairs:
        step = _take_pair(match, values, step)
        if len(values) >= _MAX_VALUES:
            break
    if is_dict and "train_runtime" in text:
        values.pop("loss", None)  # the Trainer's end-of-run summary averages the whole run
    _take_throughput(text, values)
    if "(" in text:
        for match in _TIME_AVERAGE.finditer(text):
            values.setdefault(f"{normalise(match['key'])}_avg", float(match["avg"]))
    if "epoch" not in values and ("poch" in text):
        epoch = _EPOCH.search(text)
        if epoch:
            values["epoch"] = float(epoch[1])
    if step is None:
        step = _fraction_step(text)
    if not _is_record(values, step):
        return None
    return MetricRecord(line=line.line, values=tuple(values.items()), step=step,
                        rank=line.rank)


def _take_pair(match: re.Match[str], values: dict[str, float], step: int | None) -> int | None:
    key = match["key"]
    name = key.strip().lower().replace(" ", "_").replace("/", "_")
    try:
        value = float(match["val"])
    except ValueError:
        return step
    if name in _STEP_KEYS:
        return step if step is not None or not is_finite(value) else int(value)
    normalised = normalise(key)
    if normalised is None or normalised in values:
        return step
    groups = match.groupdict()
    unit = groups.get("unit") or groups.get("letter")
    values[normalised] = _in_base_unit(normalised, value, unit)
    return step


def _in_base_unit(name: str, value: float, unit: str | None) -> float:
    if unit == "ms" and name in ("batch_time", "data_time"):
        return value / 1000.0
    if name in ("memory_mb", "rss_mb") and unit in ("G", "GB", "GiB"):
        return value * 1024.0
    return value


def _take_throughput(text: str, values: dict[str, float]) -> None:
    if "it/s" not in text and "s/it" not in text:
        return
    match = _THROUGHPUT.search(text)
    if match is None:
        return
    rate = float(match[1])
    if match[2] == "s/it":
        rate = 1.0 / rate if rate else float("inf")
    values.setdefault("throughput", rate)


def _fraction_step(text: str) -> int | None:
    if "/" not in text:
        pair = _EPOCH_BATCH.match(text)
        return int(pair[2]) if pair else None
    tqdm = _TQDM_COUNT.search(text)
    if tqdm:
        return int(tqdm[1])
    for match in _FRACTION.finditer(text):
        if not _EPOCH_BEFORE.search(text, 0, match.start()):
            return int(match[1])
    return None


def _is_record(values: dict[str, float], step: int | None) -> bool:
    if any(name not in _SECONDARY for name in values):
        return True
    if "data_time" in values and "batch_time" in values:
        return True  # a timing line: `load_data_time: 19.6173, train_step_time: 0.686`
    counted = step is not None or "epoch" in values
    return counted and ("learning_rate" in values or "rss_mb" in values or "memory_mb" in values)
