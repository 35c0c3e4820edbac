"""End to end: log -> `minrepro repro` -> run the script (bug and --fixed), for real logs.

Every sample and every corpus log of the core four that diagnoses right must reproduce on CPU
(exit 1, `REPRODUCED: <cause>:` last) and pass with --fixed (exit 0); for the other causes one
sample each. GPU-only causes must say they cannot be tested here (exit 125) on a CPU machine.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from minrepro.diagnose.pipeline import diagnose_log
from minrepro.repro.render import load_spec, render_repro
from minrepro.repro.verify import verify_script
from minrepro.taxonomy import ALL_CAUSES, CHECK_CAUSES, CORE_CAUSES, GPU_ONLY_CAUSES

ROOT = Path(__file__).resolve().parents[1]
CORPUS = Path(os.environ.get("MINREPRO_CORPUS", ROOT.parent / "shared" / "corpus" / "dev"))


def _labelled(folder: Path) -> list[tuple[Path, str]]:
    if not (folder / "labels.yaml").exists():
        return []
    cases = yaml.safe_load((folder / "labels.yaml").read_text(encoding="utf-8"))
    return [(folder / c["file"], c["cause"]) for c in cases if c["category"] != "none"]


def _cases() -> list[tuple[Path, str]]:
    samples, corpus = _labelled(ROOT / "samples"), _labelled(CORPUS)
    chosen = [(p, c) for p, c in samples + corpus if c in CORE_CAUSES]
    seen: set[str] = set()
    for path, cause in samples:  # one sample of every other cause
        if cause not in CORE_CAUSES and cause not in seen:
            seen.add(cause)
            chosen.append((path, cause))
    return chosen


CASES = _cases()


def test_cases_cover_the_core_four_in_samples_and_corpus() -> None:
    causes = {cause for _, cause in CASES}
    assert set(CORE_CAUSES) <= causes and causes == set(ALL_CAUSES)


def _check(path: Path, cause: str, workdir: Path) -> str | None:
    diagnosis = diagnose_log(path)
    if diagnosis.cause != cause:
        return None  # misdiagnosed logs are the classifier's tests' business
    script = workdir / f"{path.stem}.py"
    result = subprocess.run([sys.executable, "-m", "minrepro", "repro", str(path), "-o",
                             str(script)], capture_output=True, timeout=60)
    assert result.returncode == 0, result.stderr.decode()
    text = script.read_text(encoding="utf-8")
    assert text == render_repro(diagnosis), "the CLI writes what the library renders"
    ast.parse(text)
    assert sum(1 for line in text.splitlines() if line.strip()) <= 40
    bug = verify_script(script, timeout=120)
    # --fixed runs for the core four here; for the others, with each template's values, in
    # test_repro_other (running them twice cost a minute of CI)
    fixed = verify_script(script, fixed=True, timeout=120) if cause in CORE_CAUSES else None
    if cause in CHECK_CAUSES and cause not in GPU_ONLY_CAUSES:
        # a check of this machine: which answer is right depends on what is installed here
        assert bug.outcome in ("reproduced", "not_reproduced", "cannot_test"), bug.output_tail
        assert bug.last_line.split(": ")[:2][-1] == cause, bug.last_line
        return bug.last_line
    if load_spec(cause).needs_gpu(diagnosis.variant or "") and not _has_cuda():
        assert bug.outcome == "cannot_test", bug.output_tail
        return bug.last_line
    assert bug.outcome == "reproduced", f"{path.name}: {bug.output_tail}"
    assert bug.last_line.startswith(f"REPRODUCED: {cause}:")
    if fixed is not None:
        assert fixed.outcome == "not_reproduced", f"{path.name} --fixed: {fixed.output_tail}"
    return bug.last_line


def _has_cuda() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


@pytest.mark.slow
@pytest.mark.parametrize(("path", "cause"), CASES, ids=[p.stem for p, _ in CASES])
def test_case_reproduces(tmp_path: Path, path: Path, cause: str) -> None:
    """One case a test, so that the workers share them out."""
    assert _check(path, cause, tmp_path) is not None, f"{path.name}: not diagnosed {cause}"
