"""Read a sample of the training data: a JSON-lines file, a CSV, or a folder of class
subfolders (ImageFolder). What preflight needs of it: the label distribution, inputs that
are NaN or empty, and a hash of each input (to find eval rows that are also train rows).

Bounded: at most `limit` rows (or files) are read, so a check of a large set stays quick.
"""

from __future__ import annotations

import csv
import hashlib
import json
import math
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from minrepro.errors import BadInputError, shown_path

LABEL_KEYS = ("label", "labels", "target", "targets", "class", "y", "category", "answer_label")
_NAN_TEXTS = frozenset({"nan", "inf", "-inf", "+inf", "infinity", "-infinity"})
_LIMIT = 200_000


@dataclass(frozen=True)
class DataSample:
    """What one split's sample shows."""

    path: str
    rows: int
    labels: Counter[str] = field(default_factory=Counter)  # label -> count ("" if none)
    label_key: str | None = None
    nan_rows: tuple[int, ...] = ()  # 1-based row numbers with a NaN/Inf input (first few)
    empty_rows: tuple[int, ...] = ()  # rows with no input at all, or an empty one
    hashes: frozenset[str] = frozenset()  # of each row's inputs (label left out)
    nan_count: int = 0
    empty_count: int = 0

    @property
    def int_labels(self) -> list[int] | None:
        """The labels as integers, or None when any is not one."""
        try:
            return [int(label) for label in self.labels]
        except ValueError:
            return None


def _is_nan(value: Any) -> bool:
    if isinstance(value, float):
        return math.isnan(value) or math.isinf(value)
    if isinstance(value, str):
        return value.strip().lower() in _NAN_TEXTS
    if isinstance(value, list):
        return any(_is_nan(v) for v in value)
    return False


def _label_text(label: Any) -> str:
    return str(int(label)) if isinstance(label, float) and label.is_integer() else str(label)


def _is_empty(value: Any) -> bool:
    return value is None or (isinstance(value, (str, list, dict)) and not value) or (
        isinstance(value, str) and not value.strip())


def _digest(inputs: dict[str, Any]) -> str:
    text = json.dumps(inputs, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(" ".join(text.split()).encode("utf-8")).hexdigest()[:32]


class _Tally:
    """Accumulates rows into a DataSample."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.rows = 0
        self.labels: Counter[str] = Counter()
        self.label_key: str | None = None
        self.nan: list[int] = []
        self.empty: list[int] = []
        self.hashes: set[str] = set()

    def add(self, row: dict[str, Any]) -> None:
        self.rows += 1
        key = self.label_key or next((k for k in LABEL_KEYS if k in row), None)
        if key is not None and key in row:
            self.label_key = key
            label = row[key]
            # token or multi-label rows: each label counts; -100 is the loss's ignore index
            for item in label if isinstance(label, list) else [label]:
                if item != -100:
                    self.labels[_label_text(item)] += 1
        inputs = {k: v for k, v in row.items() if k != key}
        if any(_is_nan(v) for v in inputs.values()):
            self.nan.append(self.rows)
        if not inputs or any(_is_empty(v) for v in inputs.values()):
            self.empty.append(self.rows)
        self.hashes.add(_digest(inputs))

    def sample(self) -> DataSample:
        return DataSample(path=self.path.name, rows=self.rows, labels=self.labels,
                          label_key=self.label_key, nan_rows=tuple(self.nan[:5]),
                          empty_rows=tuple(self.empty[:5]), hashes=frozenset(self.hashes),
                          nan_count=len(self.nan), empty_count=len(self.empty))


def _read_jsonl(path: Path, tally: _Tally, limit: int) -> None:
    with path.open(encoding="utf-8", errors="replace") as handle:
        for number, line in enumerate(handle, 1):
            if tally.rows >= limit:
                break
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except ValueError:
                raise BadInputError(f"{shown_path(path)}:{number}: not a JSON line") from None
            tally.add(row if isinstance(row, dict) else {"input": row})


def _read_json(path: Path, tally: _Tally, limit: int) -> None:
    try:
        data = json.loads(path.read_text(encoding="utf-8", errors="replace"))
    except ValueError:
        _read_jsonl(path, tally, limit)  # many ".json" datasets are JSON lines
        return
    rows = data.get("data", data) if isinstance(data, dict) else data
    if not isinstance(rows, list):
        raise BadInputError(f"{shown_path(path)}: expected a list of records")
    for row in rows[:limit]:
        tally.add(row if isinstance(row, dict) else {"input": row})


def _read_csv(path: Path, tally: _Tally, limit: int) -> None:
    delimiter = "\t" if path.suffix.lower() == ".tsv" else ","
    with path.open(encoding="utf-8", errors="replace", newline="") as handle:
        for row in csv.DictReader(handle, delimiter=delimiter):
            if tally.rows >= limit:
                break
            tally.add({k: v for k, v in row.items() if k is not None})


def _file_digest(path: Path) -> str:
    with path.open("rb") as handle:
        return hashlib.sha256(handle.read(1 << 20)).hexdigest()[:32]


def _read_folder(path: Path, tally: _Tally, limit: int) -> None:
    """ImageFolder layout: root/<class>/<file>; the class is the label, the file the input."""
    classes = sorted(p for p in path.iterdir() if p.is_dir() and not p.name.startswith("."))
    if not classes:
        raise BadInputError(f"{shown_path(path)}: a data folder needs one subfolder per class")
    tally.label_key = "folder"
    for folder in classes:
        for file in sorted(f for f in folder.rglob("*") if f.is_file()):
            if tally.rows >= limit:
                return
            tally.rows += 1
            tally.labels[folder.name] += 1
            if file.stat().st_size == 0:
                tally.empty.append(tally.rows)
            tally.hashes.add(_file_digest(file))


def read_sample(path: str | Path, limit: int = _LIMIT) -> DataSample:
    """Read up to `limit` rows of a jsonl/json/csv/tsv file or a class-folder tree."""
    path = Path(path)
    if not path.exists():
        raise BadInputError(f"{shown_path(path)}: no such file or folder")
    tally = _Tally(path)
    suffix = path.suffix.lower()
    try:
        if path.is_dir():
            _read_folder(path, tally, limit)
        elif suffix in (".jsonl", ".ndjson"):
            _read_jsonl(path, tally, limit)
        elif suffix == ".json":
            _read_json(path, tally, limit)
        elif suffix in (".csv", ".tsv"):
            _read_csv(path, tally, limit)
        else:
            raise BadInputError(f"{shown_path(path)}: data must be .jsonl, .json, .csv, .tsv "
                                "or a folder of class subfolders")
    except (OSError, csv.Error) as err:
        raise BadInputError(f"{shown_path(path)}: cannot read: {type(err).__name__}") from None
    return tally.sample()
