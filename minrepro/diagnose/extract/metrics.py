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
The current value is taken as the value; the running average printed in parentheses is kept
beside it (data_time_avg, loss_avg ...): a log printed every 200 steps shows one step's times,
the average covers all of them, and an eval pass printed batch by batch ends in its mean.

Names are normalised by metricnames.py (`normalise`); a loss qualified by a known word is one
name ("Batch loss" -> loss, "Discriminator Loss" -> discriminator_loss: an adversarial loss,
not the training loss). A record also carries its `series`: the line's shape with the numbers
masked, so that per-batch lines, epoch summaries and eval passes that share a metric name stay
apart. A value followed by its running average in parentheses keeps that as `<name>_avg`.
Lines marked as evaluation (`Validate:`, `Epoch(val)`, `Test set:` ... before the first value)
report `eval_` names.
  tables         a header of metric names (`| epoch | train loss | val loss |`, or columns set
                 apart by tabs or 2+ spaces), then rows of numbers, one record a row
  step (MetricRecord.step, not a value): step, global_step, iter, iteration, it, num_updates,
                 or else tqdm's count (`| 40/1849 [`), or else the first 'N/M' that is not an
                 epoch counter ([1480/1504], 1875/1875).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

from minrepro.diagnose.extract import tables
from minrepro.diagnose.extract.metricnames import STEP_KEYS, bare_phase, normalise
from minrepro.diagnose.extract.objects import ObjectLines
from minrepro.diagnose.extract.progress import training_rate
from minrepro.diagnose.extract.units import FLOAT, is_finite
from minrepro.diagnose.literals import any_of
from minrepro.model import Line, MetricRecord
from minrepro.patterns import lazy

#: Values that alone do not make a metric line (an args dump prints `learning_rate=5e-05`).
_SECONDARY = frozenset(("epoch", "data_time", "batch_time", "memory_mb", "learning_rate",
                        "loss_scale", "skipped_steps"))
_MAX_VALUES = 48

_VALUE = rf"(?:tensor\()?(?P<val>{FLOAT})"
_MULTIWORD = ("max mem|lm loss|learning rate|grad norm|loss scale|val loss|eval loss|train loss"
              "|valid loss|total loss|test loss|val acc|data time|batch time|ram used|ram usage"
              "|time cost|cost time")  # "time cost: 12.3s" is a duration, not a cost function
#: Words that qualify a loss or an accuracy as one name: "Batch loss", "Average Train Loss",
#: "Discriminator Loss", "G Loss" / "D Loss" (a GAN's: not the training loss).
_QUALIFIED = ("(?:(?:batch|epoch|step|iter|train|training|val|vali|valid|validation|test"
              "|testing|eval"
              "|initial|final|best|min|lowest"
              "|average|avg|mean|running|total|discriminator|generator|critic|actor|g|d"
              "|reconstruction|adversarial|content|style|perceptual|contrastive)\\.?\\s{1,3})+"
              "(?:loss|acc|accuracy)")
#: `key: value`, `key=value`, `key value`; the value must end the token (not `0.23.ckpt`,
#: `1:52:15`, `4846/12331`, `2017-06`). `(?:\s*[:=]\s*|\s+)`, not `\s*(?:[:=]\s*|\s+)`: the
#: latter tries every split of a run of blanks, quadratic on `lr` + 8,000 spaces.
_PAIR = lazy(
    rf"(?:^|(?<=[\s,|{{(\[\];，。、>`]))(?P<key>(?i:{_QUALIFIED})|(?i:{_MULTIWORD})"
    rf"|[A-Za-z][\w@/\-]*?)"
    rf"(?:\s\((?:total|avg|average|mean|sum|all|overall|global)\)(?=\s*[:=]))?"  # `Acc (total):`
    rf"(?:\s*[:=：]\s*|\s+)(?:\[(?![^\]]{{0,40}}?,))?{_VALUE}"  # `[0.5]`, not `[1, 100]`
    rf"(?:\s?(?P<unit>ms|MiB|MB|GiB|GB)\b|(?P<letter>[smMG%]))?"
    r"(?!\.?[\w/\-]|:\d)")
_DICT_PAIR = lazy(rf"['\"](?P<key>[^'\"]{{1,60}})['\"]\s*[:：]\s*['\"]?{_VALUE}['\"]?")
_TIME_AFTER = lazy(r"\s+\d{1,2}:\d\d")
_FRACTION = lazy(r"(?<![\d/.:])(\d+)/\s*(\d+)(?![\d/.:])")
#: The PyTorch CIFAR tutorial: `[2,  2400] loss: 1.209` is [epoch, batch].
_EPOCH_BATCH = lazy(r"\s*\[(\d+),\s+(\d+)\]")
#: `Accuracy: 9891/10000 (99%)` (pytorch/examples' MNIST test line), `Error: 44996/50000`:
#: samples right (or wrong) of all, kept as the accuracy in percent.
_COUNTED = (r"(?i)\b(?:(?P<right>acc(?:uracy)?|correct)|(?P<wrong>errors?|err|wrong|incorrect"
            r"|misclassified))\s*[:=]?\s*")
_COUNTED_BEFORE = lazy(_COUNTED + r"$")
_COUNTED_SHARE = lazy(_COUNTED + r"(?P<part>\d+)\s*/\s*(?P<whole>\d+)(?![\d/.])")
_TQDM_COUNT = lazy(r"\|\s*(\d+)/(?:\d+|\?)\s*\[")
_EPOCH_BEFORE = lazy(r"[Ee]poch\s*[:=]?\s*\[?\s*$")
#: (`Ep 4:`, `Ep. 4`, the abbreviation some loops print, capitalised as a word of its own)
_EPOCH = lazy(r"(?:[Ee]poch|\bEp\.?(?=\s*\d))\s*[:=]?\s*\[?\s*(\d+)(?:\s*/\s*\d+)?\]?")
_ASSIGNMENT = lazy(r"\s+[A-Za-z_][\w.]*\s*[-+*/]?=\s*\S+\s*$")
#: `Data 0.001 (11.761)`, `Loss 0.8037 (2.5720)`: after a value, its running average.
_AVERAGE_AFTER = lazy(rf"\s*\(\s*(?P<avg>{FLOAT})\s*\)")
#: An evaluation record, marked before its first value (or at the line's start).
_EVAL_MARK = lazy(
    r"(?:^|[\s\]\[|(>-])(?:test set|validation set|validate|validation|valid|val"
    r"|eval(?:uation|uating)?|test(?:ing)?)\s*[:\]]|Epoch\(val\)|\[(?:valid|val|eval)\]"
    r"|^\s*\*\s+(?:acc|prec|top|loss|map|miou)"  # pytorch/examples, DeiT, DINO: " * Acc@1 .."
    # a line whose subject is the evaluation: "TEST in epoch3, loss = 2.2", "Valid epoch 3 .."
    r"|^\s*(?:test(?:ing)?|val(?:id(?:ation)?)?|eval(?:uation)?)\s+(?:in|on|at|after|of|epoch|"
    r"set|results?|step|iter)\b",
    re.IGNORECASE)
#: Words of a training record, which end an evaluation block.
_TRAIN_QUALITY = lazy(r"(?i)\btrain(?:ing)?[_ ]?(?:acc|accuracy|top-?1|prec)")
_TRAIN_MARK = lazy(r"(?i)\b(?:train\w*|epoch|iter\w*|step)\b|\d+%\|")
EVAL_BLOCK_LINES = 20
#: What a series key masks: numbers, durations and progress bars vary from line to line.
_SERIES_MASKS = (re.compile(r"\d+%\|[^|]*\|"),
                 re.compile(r"(?i:\bnan\b|\binf\b)|[-+]?\d[\d.,:eE+\-]*"))
_SERIES_CHARS = 120
_NOT_METRICS = ("Namespace(", "Arguments(", "Config(", "argparse")


#: A line holding none of these is no metric line.
TRIGGERS = ("loss", "Loss", "LOSS", "cost", "Cost", "acc", "Acc", "Prec", "it/s", "s/it", "lr",
            "learning", "val", "norm", "top1", "RAM", "rss", "data_time", "rpn_", "rcnn_",
            "Epoch", "epoch", "EPOCH")
#: A line that only announces an epoch (`[2022-06-26 21:44:04,162]Epoch: 0002`, `Epoch 3/100`,
#: `==== epoch 5 ====`): the records under it that print no epoch of their own are of it.
#: A phase word before it (ST-GCN's `Training epoch: 5` ... `Eval epoch: 4`) says which pass
#: the records under it are of.
_EPOCH_HEADER = lazy(r"^[\W\d_]*?(?:\[[^\]]*\]\s*)*(?i:(?:train(?:ing)?|(?P<held_out>"
                     r"eval(?:uat(?:e|ing|ion))?|val(?:id(?:ation|ating)?)?|test(?:ing)?))\s+)?"
                     r"(?i:epoch)\s*[:#=]?\s*\[?(?P<epoch>\d+)\s*(?:/\s*\d+)?\]?\W*$")
_may_hold_metrics = any_of(TRIGGERS)


@dataclass(frozen=True, slots=True)
class EpochHeader:
    """A line that only announces an epoch, of training or of an evaluation."""

    epoch: float
    held_out: bool = False


class MetricExtractor:
    """Metric lines of the formats in the module docstring -> MetricRecord."""

    TRIGGERS = TRIGGERS
    # a NaN loss anywhere in a big log, as Python, torch and numpy print it (an all-caps INF
    # is left out: looking for it at every INFO of a log costs more than its rare use)
    WHOLE_WORDS = ("nan", "NaN", "NAN", "inf", "Inf", "-inf", "-Inf", "infinity", "Infinity")

    def __init__(self) -> None:
        self._columns: list[str | None] | None = None  # inside a table: its column names
        self._epoch: float | None = None  # the last epoch a header line announced
        self._eval_until = 0  # lines up to this one continue an evaluation block
        self._object = ObjectLines()  # a JSON object printed one key a line

    @property
    def idle(self) -> bool:
        """False inside a table (its rows hold numbers only, none of the TRIGGERS) or a JSON
        object printed one key a line (its closing brace holds none either)."""
        return self._columns is None and not self._object.open

    def feed(self, line: Line) -> Sequence[MetricRecord]:
        text = line.text
        if self._object.open or text.lstrip().startswith('"'):
            whole = self._object.feed(text, line.line)
            if whole is not None:
                record = parse_metrics(whole, Line(self._object.first_line, whole, line.rank))
                return (record,) if record is not None else ()
            if self._object.open:
                return ()
        if self._columns is not None:
            row = _table_row(text, self._columns, line)
            if row is not None:
                return row
            self._columns = None  # the table ended
        parsed = _PARSED.get(text)
        if parsed is None:
            parsed = _parse_line(text)
            if len(_PARSED) >= _PARSED_LINES:
                _PARSED.clear()
            _PARSED[text] = parsed
        if isinstance(parsed, list):
            self._columns = parsed
            return ()
        if isinstance(parsed, EpochHeader):  # the records under it are of its epoch (pass)
            self._epoch = parsed.epoch
            self._eval_until = line.line + EVAL_BLOCK_LINES if parsed.held_out else 0
            return ()
        if parsed is _NO_RECORD:
            return ()
        assert isinstance(parsed, MetricRecord)
        values = parsed.values
        if self._epoch is not None and all(name != "epoch" for name, _ in values):
            values = (*values, ("epoch", self._epoch))
        record = MetricRecord(line=line.line, values=values, step=parsed.step,
                              rank=line.rank, series=parsed.series)
        return (self._in_block(record, text, line),)

    def _in_block(self, record: MetricRecord, text: str, line: Line) -> MetricRecord:
        """An evaluation prints a block: `Test: [240/242] ... Loss` then `Prec@1 ...` lines
        with no marker of their own. Lines close after an eval record continue its block
        until one names training (train, epoch, iter, step) or holds a progress bar."""
        if any(name.startswith("eval_") for name, _ in record.values):
            self._eval_until = line.line + EVAL_BLOCK_LINES
        elif line.line <= self._eval_until:
            if _TRAIN_MARK.search(text):
                self._eval_until = 0
            else:
                return _as_eval(record)
        return record

    def close(self) -> Sequence[MetricRecord]:
        return ()


#: DeepSpeed's and Megatron's dump of settings at start-up, one a line behind a dot leader
#: (`float16_config ....... enabled=False loss_scale=0.0`, `lr ........ 0.00015`): values
#: the run was given, not measured (a loss_scale of 0 there means "dynamic").
_SETTINGS_DUMP = lazy(r"^\s*(?:\[[^\]]*\]\s*)*[A-Za-z_][\w.-]* \.{4,} \S")
_NO_RECORD = object()
#: What a line's text alone says (a table's header, a record, an epoch header, or nothing), by
#: text: progress bars and repeated lines are parsed once per process (a triage worker sees
#: many logs).
_PARSED: dict[str, object] = {}
_PARSED_LINES = 8192
_NO_LINE = Line(line=0, text="")


def _parse_line(text: str) -> object:
    """A table's column names, a MetricRecord (line 0, no rank), an EpochHeader or
    _NO_RECORD."""
    if not _may_hold_metrics(text) or _SETTINGS_DUMP.search(text):
        return _NO_RECORD
    columns = tables.header(text, _MAX_VALUES)
    if columns is not None:
        return columns
    record = parse_metrics(text, _NO_LINE)
    if record is not None:
        return record
    header = _EPOCH_HEADER.match(text) if "poch" in text or "POCH" in text else None
    if header is None:
        return _NO_RECORD
    return EpochHeader(float(header["epoch"]), held_out=header["held_out"] is not None)


def _table_row(text: str, columns: list[str | None], line: Line
               ) -> Sequence[MetricRecord] | None:
    """Records for a row of numbers under a table's header, () for a markdown rule or a row
    of no metric, None when the line is neither (the table has ended)."""
    found = tables.row(text, columns)
    if found is None:
        return None
    values, step = found
    if not _is_record(values, step):
        return ()
    return (MetricRecord(line=line.line, values=tuple(values.items()), step=step,
                         rank=line.rank),)


def _as_eval(record: MetricRecord) -> MetricRecord:
    """Lines like "Test set: Average loss: 2.9, Accuracy: ..." report evaluation, not training."""
    values = tuple((name if name.startswith("eval_") or name.removesuffix("_avg") in _SECONDARY
                    else f"eval_{name}", value) for name, value in record.values)
    return replace(record, values=values)


def _is_eval(record: MetricRecord, text: str, first_value: int) -> bool:
    """Marked as evaluation before its first value, or only held-out values besides a
    metric (`avg. test_loss 5.45 avg. Accuracy@1 2.92`: the accuracy is the test set's)."""
    if _EVAL_MARK.search(text, 0, first_value + 1):
        return True
    names = [name for name, _ in record.values if name.removesuffix("_avg") not in _SECONDARY]
    return any(n.startswith("eval_") for n in names) and not any(
        "loss" in n and not n.startswith("eval_") for n in names) and not _TRAIN_QUALITY.search(
        text, first_value)  # `train_acc=0.299, val_acc=0.494`: the first is the training's


def parse_metrics(text: str, line: Line) -> MetricRecord | None:
    """One line -> a MetricRecord, or None when the line holds no training metric."""
    if text.startswith(_NOT_METRICS) or any(marker in text for marker in _NOT_METRICS):
        return None
    if text.lstrip().startswith("wandb:"):
        return None  # W&B's run history / summary, printed at exit: crashed runs print it too
    if _ASSIGNMENT.match(text):
        return None  # an indented `loss = 0.0` is code, not a log record
    values: dict[str, float] = {}
    step: int | None = None
    is_dict = "{" in text and ("'" in text or '"' in text)
    first_value = len(text)
    for match in (_DICT_PAIR if is_dict else _PAIR).finditer(text):
        before = len(values)
        step = _take_pair(match, values, step, text)
        if len(values) > before:
            first_value = min(first_value, match.start())
        if len(values) >= _MAX_VALUES:
            break
    if is_dict and "train_runtime" in text:
        values.pop("loss", None)  # the Trainer's end-of-run summary averages the whole run
    rate = training_rate(text)
    if rate is not None:
        values.setdefault("throughput", rate)
    if "epoch" not in values and ("poch" in text or "Ep" in text):
        epoch = _EPOCH.search(text)
        if epoch:
            values["epoch"] = float(epoch[1])
    if step is None:
        step = _fraction_step(text)
    if "/" in text and "accuracy" not in values:
        _take_counted_share(text, values)
    if not _is_record(values, step):
        return None
    record = MetricRecord(line=line.line, values=tuple(values.items()), step=step,
                          rank=line.rank, series=series_key(text[first_value:]))
    return _as_eval(record) if _is_eval(record, text, first_value) else record


def series_key(text: str) -> str:
    """The shape of a metric line from its first value on (what comes before, a timestamp
    or a note, says nothing of the series): numbers and progress bars masked."""
    for mask in _SERIES_MASKS:
        text = mask.sub("#", text)
    return " ".join(text.lower().split())[:_SERIES_CHARS]


def _take_pair(match: re.Match[str], values: dict[str, float], step: int | None,
               text: str) -> int | None:
    key = match["key"]
    name = key.strip().lower().replace(" ", "_").replace("/", "_")
    try:
        value = float(match["val"])
    except ValueError:
        return step
    if name in STEP_KEYS:
        if text.startswith("%", match.end("val")):
            return step  # `Current iteration:  70%|███`: a progress bar's share, no step
        return step if step is not None or not is_finite(value) else int(value)
    groups = match.groupdict()
    unit = groups.get("unit") or groups.get("letter")
    normalised = normalise(key) or (bare_phase(name, match["val"], text) if unit is None
                                    else None)
    if normalised is None or normalised in values:
        return step
    values[normalised] = _in_base_unit(normalised, value, unit)
    average = _AVERAGE_AFTER.match(text, match.end())
    if average:
        running = _in_base_unit(normalised, float(average["avg"]), unit)
        values.setdefault(f"{normalised}_avg", running)
    return step


def _in_base_unit(name: str, value: float, unit: str | None) -> float:
    if unit == "ms" and name in ("batch_time", "data_time"):
        return value / 1000.0
    if name in ("memory_mb", "rss_mb") and unit in ("G", "GB", "GiB"):
        return value * 1024.0
    return value


def _take_counted_share(text: str, values: dict[str, float]) -> None:
    """`Accuracy: 9891/10000 (99%)` -> accuracy 99; `Error: 44996/50000` -> accuracy 10.01:
    a count of misclassified samples is the complement of the accuracy, in percent."""
    counted = _COUNTED_SHARE.search(text)
    if counted is None:
        return
    part, whole = int(counted["part"]), int(counted["whole"])
    if whole == 0 or part > whole:
        return
    share = 100.0 * part / whole
    values["accuracy"] = round(share if counted["right"] else 100.0 - share, 4)
    if counted["wrong"]:
        values.pop("error", None)  # the same count, kept once (as the accuracy)


def _fraction_step(text: str) -> int | None:
    if "/" not in text:
        pair = _EPOCH_BATCH.match(text)
        return int(pair[2]) if pair else None
    tqdm = _TQDM_COUNT.search(text)
    if tqdm:
        return int(tqdm[1])
    for match in _FRACTION.finditer(text):
        if _TIME_AFTER.match(text, match.end()):
            continue  # a date before a time (mmengine's `08/03 22:09:24`), not a step
        if _COUNTED_BEFORE.search(text, 0, match.start()):
            continue  # `Accuracy: 9891/10000 (99%)`: samples right of all, not a step
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
