"""The twelve non-core repro scripts, rendered from hand-built diagnoses and RUN on CPU.

Values are the ones the dev corpus logs show (shared/corpus/dev). Scripts that can only fail
on a GPU must exit 125 with a reason here; the others must reproduce (exit 1, last line
`REPRODUCED: <cause>: ...`) and, with --fixed, not (exit 0, `NOT REPRODUCED: ...`).
Runs start together in a small thread pool; a few scripts measure time (data loading versus
compute, a collective timeout), so the pool is no wider than the machine.
"""

from __future__ import annotations

import ast
import os
import sys
from concurrent.futures import Future, ThreadPoolExecutor

import pytest

from minrepro.model import Diagnosis, Evidence
from minrepro.repro.render import (
    has_template,
    imported_modules,
    load_spec,
    render_repro,
    write_script,
)
from minrepro.repro.verify import VerifyResult, verify_script
from minrepro.taxonomy import ALL_CAUSES, CATEGORY_OF, CORE_CAUSES, GPU_ONLY_CAUSES

pytestmark = pytest.mark.slow

#: Each template's `example` (as the dev-corpus logs give the values, some needing clamping).
#: (test_meta requires every cause to have a template; here, those that have one are run.)
PARAMS = {cause: load_spec(cause).example_params() for cause in ALL_CAUSES
          if cause not in CORE_CAUSES and has_template(cause)}
CASES = [(cause, variant) for cause in PARAMS for variant in load_spec(cause).variants]
TIMEOUT = 120.0


def diagnosis(cause: str, variant: str, params: dict | None = None) -> Diagnosis:
    return Diagnosis(
        cause=cause, category=CATEGORY_OF[cause], confidence=0.9,
        params=PARAMS[cause] if params is None else params,
        evidence=(Evidence(7, "RuntimeError: something the log said", 0),),
        fix="apply the recommended fix", rule_id="MR-TEST-002", title=cause, variant=variant,
        source="/home/someone/runs/train.log",
    )


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple, Future]:
    """(cause, variant, mode) -> Future of the run; modes: bug, fixed."""
    folder = tmp_path_factory.mktemp("repro_other")
    pool = ThreadPoolExecutor(max_workers=max(2, min(4, os.cpu_count() or 2)))
    futures: dict[tuple, Future] = {}
    for cause, variant in CASES:
        path = write_script(render_repro(diagnosis(cause, variant)),
                            folder / f"{cause}_{variant}.py")
        for mode in ("bug", "fixed"):
            futures[cause, variant, mode] = pool.submit(
                verify_script, path, fixed=mode == "fixed", timeout=TIMEOUT)
    yield futures
    pool.shutdown(wait=True)


@pytest.fixture(scope="module")
def cuda_here() -> bool:
    import torch  # only here: collecting this module must stay cheap

    return torch.cuda.is_available()


def show(result: VerifyResult) -> str:
    return f"exit {result.exit_code}, {result.seconds:.1f} s:\n{result.output_tail}"


@pytest.mark.parametrize(("cause", "variant"), CASES)
@pytest.mark.parametrize("mode", ["bug", "fixed"])
def test_script_runs_as_contracted(runs: dict, cuda_here: bool, cause: str, variant: str,
                                   mode: str) -> None:
    result = runs[cause, variant, mode].result()
    print(f"{cause}/{variant} {mode}: exit {result.exit_code} in {result.seconds:.1f} s")
    spec = load_spec(cause)
    if variant in spec.cpu_variants:  # a check of this machine, whose GPU it looks for
        want = (0, "NOT REPRODUCED") if cuda_here else (
            (125, "CANNOT TEST") if mode == "fixed" else (1, "REPRODUCED"))
        assert (result.exit_code, result.last_line.split(":")[0]) == want, show(result)
        return
    if spec.needs_gpu(variant) and not cuda_here:
        assert result.exit_code == 125, show(result)
        assert result.last_line.startswith(f"CANNOT TEST: {cause}: "), show(result)
        assert "CUDA" in result.last_line, show(result)
        return
    want = (0, "NOT REPRODUCED") if mode == "fixed" else (1, "REPRODUCED")
    assert result.exit_code == want[0], show(result)
    assert result.last_line.startswith(f"{want[1]}: {cause}: "), show(result)
    if mode == "bug":
        assert len(result.output_tail.strip().splitlines()) >= 2, "the symptom comes first"


@pytest.mark.parametrize(("cause", "variant"), CASES)
def test_script_shape(cause: str, variant: str) -> None:
    text = render_repro(diagnosis(cause, variant))
    assert text == render_repro(diagnosis(cause, variant))  # byte-identical
    assert sum(1 for line in text.splitlines() if line.strip()) <= 40
    assert imported_modules(ast.parse(text)) <= set(sys.stdlib_module_names) | {"torch"}
    assert text.startswith("#!/usr/bin/env python3\n")
    assert "/home/someone" not in text and "train.log" in text
    assert "torch.manual_seed(0)" in text
    assert load_spec(cause).gpu_only == (cause in GPU_ONLY_CAUSES)


@pytest.mark.parametrize("cause", list(PARAMS))
def test_defaults_render_when_the_log_gave_no_values(cause: str) -> None:
    for variant in load_spec(cause).variants:
        ast.parse(render_repro(diagnosis(cause, variant, params={})))


def test_log_values_are_scaled_into_what_runs_here() -> None:
    text = render_repro(diagnosis("nccl_timeout", "default"))
    assert "TIMEOUT_MS, OP = 2000, 'allreduce'" in text
    assert "timeout_ms=2000 (clamped from 600000)" in text
    text = render_repro(diagnosis("lr_divergence", "default"))
    assert "LR = 0.00017682241998246423" in text  # the log's lr itself, not a bigger one


def test_fragmentation_fix_is_set_before_cuda_initialises() -> None:
    text = render_repro(diagnosis("allocator_fragmentation", "default"))
    assert text.index("expandable_segments:True") < text.index("import torch")


def test_cuda_oom_keeps_the_request_above_the_free_memory() -> None:
    text = render_repro(diagnosis("cuda_oom", "default", {"requested_bytes": 10**6,
                                                          "free_bytes": 10**12}))
    literals = text.split("REQUESTED, FREE, ALLOCATED = ")[1].split("  #")[0]
    requested, free, _ = (int(x) for x in literals.split(", "))
    assert requested > free


def test_log_text_never_becomes_code() -> None:
    hostile = {"devices": 'cuda:0"); import shutil; shutil.rmtree("/")  #', "capability": "x\ny"}
    for cause in ("device_mismatch", "cuda_env_mismatch"):
        text = render_repro(diagnosis(cause, "default", hostile))
        assert imported_modules(ast.parse(text)) <= set(sys.stdlib_module_names) | {"torch"}
        assert "shutil" not in {n.id for n in ast.walk(ast.parse(text)) if isinstance(n, ast.Name)}


def test_a_version_check_of_a_call_whose_package_the_log_does_not_name(tmp_path) -> None:  # noqa: ANN001
    """`UnetDecoder.__init__() got an unexpected keyword argument 'center'` names a class, not
    its package: the check says to name it with --package, and checks it once named."""
    import subprocess
    params = {"callable": "JSONDecoder.__init__", "keyword": "center"}
    path = write_script(render_repro(diagnosis("version_incompatibility", "keyword", params)),
                        tmp_path / "check.py")

    def run(*flags: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, str(path), "--device", "cpu", *flags],
                              capture_output=True, text=True, timeout=TIMEOUT)

    unnamed = run()  # torch, where a bare call names no package: no JSONDecoder there
    assert unnamed.returncode == 125 and "--package NAME" in unnamed.stdout
    named = run("--package", "json")
    assert named.returncode == 1 and "REPRODUCED" in named.stdout
    assert run("--package", "json", "--fixed").returncode == 0


def test_a_version_check_named_by_placement_alone_says_the_log_names_no_call(
        tmp_path) -> None:  # noqa: ANN001
    """A version break named from where it was raised (no keyword in the message: `f() takes
    3 positional arguments but 4 were given`) leaves the check no call to look up."""
    import subprocess
    path = write_script(render_repro(diagnosis("version_incompatibility", "keyword", {})),
                        tmp_path / "check.py")
    result = subprocess.run([sys.executable, str(path), "--device", "cpu"],
                            capture_output=True, text=True, timeout=TIMEOUT)
    assert result.returncode == 125
    assert "no call the log names in torch" in result.stdout
