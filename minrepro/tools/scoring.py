"""Score the classifier on a labelled corpus folder (labels.yaml + logs).

    python -m minrepro.tools.scoring ../shared/corpus/dev [--verbose] [--min-accuracy 0.95]

A case is right when the diagnosed cause equals the label's cause; for `category: none`
cases (healthy runs, unrelated errors) it is right when no cause is named. Labelled params
are compared too (reported, not counted in accuracy), and so are, where a case labels them,
its root class (`root`), the first failure's exception type (`exc_type`) and rank
(`first_rank`); a healthy case must get no root class.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path

import yaml

from minrepro.diagnose.pipeline import diagnose_log
from minrepro.diagnose.rules.registry import load_rules
from minrepro.errors import MinreproError


@dataclass(frozen=True)
class CaseResult:
    file: str
    expected: str | None
    got: str | None
    confidence: float
    params_wrong: tuple[str, ...] = ()
    root: tuple[str | None, str | None] | None = None  # (labelled, got) where labelled
    exc_type: tuple[str, str | None] | None = None
    healthy: bool = False
    first_rank: tuple[int, int | None] | None = None  # (labelled, got) where labelled

    @property
    def right(self) -> bool:
        return self.expected == self.got

    @property
    def misses(self) -> tuple[str, ...]:
        """What the case got wrong beside its cause: of "root", "exc", "rank", where labelled
        (a root class labelled null is not scored; a healthy case must get none)."""
        root = (self.root is not None and bool(self.root[0] or self.healthy)
                and self.root[0] != self.root[1])
        exc = self.exc_type is not None and not same_type(*self.exc_type)
        rank = self.first_rank is not None and self.first_rank[0] != self.first_rank[1]
        return tuple(name for name, wrong in (("root", root), ("exc", exc), ("rank", rank))
                     if wrong)


def load_labels(folder: Path) -> list[dict]:
    labels = yaml.safe_load((folder / "labels.yaml").read_text(encoding="utf-8"))
    if not isinstance(labels, list):
        raise MinreproError(f"{folder / 'labels.yaml'}: should be a list of cases")
    return labels


def score_case(folder: Path, case: dict) -> CaseResult:
    expected = None if case.get("category") == "none" else case["cause"]
    diagnosis = diagnose_log(folder / case["file"], rule_dirs=())
    wrong = tuple(name for name, value in (case.get("params") or {}).items()
                  if diagnosis.params.get(name) != value)
    failure = diagnosis.failure
    got_root = diagnosis.root.value if diagnosis.root else None
    healthy = case.get("cause") == "healthy"
    return CaseResult(
        case["file"], expected, diagnosis.cause, diagnosis.confidence, wrong,
        root=(case.get("root"), got_root) if "root" in case or healthy else None,
        exc_type=(case["exc_type"], failure.exc_type if failure else None)
        if case.get("exc_type") else None, healthy=healthy,
        first_rank=(case["first_rank"], failure.rank if failure else None)
        if case.get("first_rank") is not None else None)


def score_folder(folder: Path) -> list[CaseResult]:
    load_rules()  # fail early, with the rule file named, before reading any log
    return [score_case(folder, case) for case in load_labels(folder)]


def summary(results: list[CaseResult]) -> str:
    positives = [r for r in results if r.expected is not None]
    negatives = [r for r in results if r.expected is None]
    right = sum(r.right for r in positives)
    alarms = sum(not r.right for r in negatives)
    with_params = [r for r in positives if r.right]
    params_ok = sum(not r.params_wrong for r in with_params)
    line = (f"cause right: {right}/{len(positives)} ({100 * right / max(len(positives), 1):.1f}%)"
            f"  false alarms on none: {alarms}/{len(negatives)}"
            f"  all cases right: {sum(r.right for r in results)}/{len(results)}"
            f"  labelled params right: {params_ok}/{len(with_params)}")
    roots = [r.root for r in results if r.root is not None and not r.healthy and r.root[0]]
    if roots:
        line += f"  root right: {sum(a == b for a, b in roots)}/{len(roots)}"
    types = [r.exc_type for r in results if r.exc_type is not None]
    if types:
        line += f"  first exception type right: {sum(same_type(*t) for t in types)}/{len(types)}"
    ranks = [r.first_rank for r in results if r.first_rank is not None]
    if ranks:
        line += f"  first rank right: {sum(a == b for a, b in ranks)}/{len(ranks)}"
    healthy = [r for r in results if r.healthy]
    if healthy:
        rooted = sum(r.root is not None and r.root[1] is not None for r in healthy)
        line += f"  healthy given a root: {rooted}/{len(healthy)}"
    return line


def case_line(r: CaseResult) -> str:
    """One line a case: the cause, then the root class and exception type where labelled."""
    mark = "ok  " if r.right else "MISS"
    line = f"{mark} {r.file:<45} expected={r.expected} got={r.got} ({r.confidence:.2f})"
    if r.params_wrong:
        line += f"  params differ: {', '.join(r.params_wrong)}"
    misses = r.misses
    if r.root is not None and (r.root[0] or r.healthy):
        line += f"  root {r.root[0] or 'none'}:{r.root[1] or 'none'}"
        line += " (wrong)" if "root" in misses else ""
    if r.exc_type is not None:
        line += f"  exc {r.exc_type[0]}:{r.exc_type[1]}"
        line += " (wrong)" if "exc" in misses else ""
    if r.first_rank is not None:
        line += f"  rank {r.first_rank[0]}:{r.first_rank[1]}"
        line += " (wrong)" if "rank" in misses else ""
    return line


def same_type(labelled: str, got: str | None) -> bool:
    """The same exception type, qualified or not (torch.OutOfMemoryError = OutOfMemoryError)."""
    return got is not None and labelled.rsplit(".", 1)[-1] == got.rsplit(".", 1)[-1]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m minrepro.tools.scoring", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("folder", type=Path)
    parser.add_argument("--verbose", "-v", action="store_true", help="one line per case")
    parser.add_argument("--min-accuracy", type=float, default=0.0,
                        help="exit 1 when the share of right causes is below this")
    args = parser.parse_args(argv)
    try:
        results = score_folder(args.folder)
    except (MinreproError, OSError, yaml.YAMLError) as err:
        print(f"scoring: error: {err}", file=sys.stderr)
        return 2
    for r in results:
        if args.verbose or not r.right or r.params_wrong or r.misses:
            print(case_line(r))
    print(summary(results))
    positives = [r for r in results if r.expected is not None]
    accuracy = sum(r.right for r in positives) / max(len(positives), 1)
    return 0 if accuracy >= args.min_accuracy else 1


if __name__ == "__main__":
    sys.exit(main())
