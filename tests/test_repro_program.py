"""The program-error repro scripts keep the log's relation where clamping would lose it, and
take the log's text (shapes, op and parameter names) only as data.

Rendered from hand-built diagnoses with the extreme values real logs give, then RUN on CPU:
each must still reproduce (exit 1, `REPRODUCED: <cause>: ...`) and not with --fixed.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

from minrepro.model import Diagnosis, Evidence
from minrepro.repro.render import imported_modules, render_repro, write_script
from minrepro.repro.verify import verify_script
from minrepro.taxonomy import CATEGORY_OF

pytestmark = pytest.mark.slow

HOSTILE = 'x"); import shutil; shutil.rmtree("/")  #'

#: values whose clamped forms would meet (2048 vs 4096 both become 64 or 4096), or that the
#: script must bound (a huge tensor, the largest versions, a negative label)
CLAMPED = [
    ("label_out_of_range", "default", {"target": -1}),
    ("label_out_of_range", "default", {"target": 3, "num_classes": 3}),
    ("shape_mismatch", "linear", {"actual": 8192, "expected": 5000, "rows": 10**6}),
    ("shape_mismatch", "batchnorm", {"actual": 38, "expected": 36}),
    ("shape_mismatch", "layernorm", {"actual": 768, "expected": 384, "rows": 32}),
    ("shape_mismatch", "layernorm", {"actual": 9000, "expected": 8999}),
    ("shape_mismatch", "cat", {"actual": 401, "expected": 402}),
    ("shape_mismatch", "batch", {"actual": 511, "expected": 23}),
    ("shape_mismatch", "batch", {"actual": 9000, "expected": 8999}),
    ("shape_mismatch", "broadcast", {"actual": 128, "expected": 1024}),
    ("shape_mismatch", "broadcast", {"actual": 1, "expected": 2}),  # a size 1 broadcasts
    ("state_dict_mismatch", "size", {"param": "fc.weight", "checkpoint_shape": "1000, 2048",
                                     "model_shape": "512, 2048"}),
    ("inplace_autograd", "default", {"shape": "100000, 100000", "node": "SigmoidBackward0",
                                     "version": 9, "expected_version": 8}),
]


def diagnosis(cause: str, variant: str, params: dict) -> Diagnosis:
    return Diagnosis(cause=cause, category=CATEGORY_OF[cause], confidence=0.9, params=params,
                     evidence=(Evidence(3, "RuntimeError: from the log", None),), fix="the fix",
                     rule_id="MR-TEST-015", title=cause, variant=variant, source="run.log")


@pytest.mark.parametrize(("cause", "variant", "params"), CLAMPED,
                         ids=[f"{c}-{v}-{i}" for i, (c, v, _) in enumerate(CLAMPED)])
def test_clamped_values_still_reproduce(tmp_path: Path, cause: str, variant: str,
                                        params: dict) -> None:
    path = write_script(render_repro(diagnosis(cause, variant, params)), tmp_path / "r.py")
    bug = verify_script(path, timeout=120.0)
    assert bug.exit_code == 1 and bug.last_line.startswith(f"REPRODUCED: {cause}: "), \
        bug.output_tail
    fixed = verify_script(path, fixed=True, timeout=120.0)
    assert fixed.exit_code == 0 and fixed.last_line.startswith(f"NOT REPRODUCED: {cause}: "), \
        fixed.output_tail


@pytest.mark.parametrize(("cause", "names"), [
    ("inplace_autograd", ("shape", "node")),
    ("state_dict_mismatch", ("param", "checkpoint_shape", "model_shape")),
])
def test_log_text_stays_a_literal(cause: str, names: tuple[str, ...]) -> None:
    text = render_repro(diagnosis(cause, "default", dict.fromkeys(names, HOSTILE)))
    tree = ast.parse(text)
    assert imported_modules(tree) <= set(sys.stdlib_module_names) | {"torch"}
    assert "shutil" not in {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    assert repr(HOSTILE[:60]) in text or repr(HOSTILE) in text


def test_a_log_naming_only_the_class_count_gets_a_label_of_that_count() -> None:
    """transformers' CTC heads say only "Label values must be <= vocab_size: 29"."""
    text = render_repro(diagnosis("label_out_of_range", "default", {"num_classes": 29}))
    assert "TARGET, NUM_CLASSES = 29, 29" in text
    text = render_repro(diagnosis("label_out_of_range", "default", {"target": 7}))
    assert "TARGET, NUM_CLASSES = 7, 10" in text


def test_an_unknown_worker_exception_falls_back_to_the_default() -> None:
    text = render_repro(diagnosis("dataloader_worker_error", "default",
                                  {"exc_type": "SystemExit"}))
    assert "NAME, BAD = 'KeyError', 5" in text
