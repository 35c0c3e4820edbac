"""`minrepro env`: probes are injected so one CPU box can play a GPU box, a torch-less box, ..."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from minrepro.report.envreport import (
    NOT_FOUND,
    NOT_INSTALLED,
    NOT_SET,
    NVCC_VERSION,
    NVIDIA_SMI_LIST,
    NVIDIA_SMI_QUERY,
    EnvReport,
    collect_env,
    default_run,
    env_to_json,
    format_env_text,
    strip_uuids,
)

UUID = "GPU-8f6b2f3a-1c2d-4e5f-9a0b-123456789abc"
SMI_QUERY_OUT = (
    "NVIDIA H100 80GB HBM3, 550.54.15, 81559 MiB\n"
    "NVIDIA H100 80GB HBM3, 550.54.15, 81559 MiB\n"
)
NVCC_OUT = ("nvcc: NVIDIA (R) Cuda compiler driver\n"
            "Cuda compilation tools, release 12.4, V12.4.131\n")


def fake_run(outputs: dict[tuple[str, ...], str | None]):
    """A runner answering from a table; argv not in the table 'is not installed'."""
    calls: list[tuple[list[str], float]] = []

    def run(argv: list[str], timeout: float) -> str | None:
        calls.append((argv, timeout))
        return outputs.get(tuple(argv))

    run.calls = calls  # type: ignore[attr-defined]
    return run


def fake_cuda_torch(names: tuple[str, ...] = ("NVIDIA H100 80GB HBM3", "NVIDIA A100-SXM4-40GB")):
    capabilities = {0: (9, 0), 1: (8, 0)}
    cuda = SimpleNamespace(
        is_available=lambda: True,
        device_count=lambda: len(names),
        get_device_name=lambda i: names[i],
        get_device_capability=lambda i: capabilities[i],
    )
    return SimpleNamespace(
        __version__="2.5.1+cu124",
        version=SimpleNamespace(debug=False, cuda="12.4", hip=None),
        backends=SimpleNamespace(cudnn=SimpleNamespace(version=lambda: 90100)),
        cuda=cuda,
    )


def importer(modules: dict[str, object]):
    def import_module(name: str) -> object:
        if name not in modules:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return modules[name]

    return import_module


def no_torch(name: str) -> object:
    raise ModuleNotFoundError(f"No module named {name!r}", name=name)


GPU_RUN = {tuple(NVIDIA_SMI_QUERY): SMI_QUERY_OUT, tuple(NVCC_VERSION): NVCC_OUT}


def test_torch_with_fake_cuda_reports_build_and_devices() -> None:
    report = collect_env(
        run=fake_run(GPU_RUN), import_module=importer({"torch": fake_cuda_torch()}), environ={}
    )
    torch = env_to_json(report)["torch"]
    assert torch["version"] == "2.5.1+cu124"
    assert torch["debug_build"] is False  # JSON types, not the strings of the text report
    assert torch["cuda_built"] == "12.4"
    assert torch["hip_built"] is None
    assert torch["cudnn"] == 90100
    assert torch["cuda_available"] is True
    assert torch["device_count"] == 2
    assert torch["gpu0"] == "NVIDIA H100 80GB HBM3 (compute capability 9.0)"
    assert torch["gpu1"] == "NVIDIA A100-SXM4-40GB (compute capability 8.0)"


def test_nvidia_smi_query_and_nvcc_are_parsed() -> None:
    run = fake_run(GPU_RUN)
    nvidia = env_to_json(collect_env(run=run, import_module=no_torch, environ={}))["nvidia"]
    assert nvidia == {
        "driver": "550.54.15",
        "gpu0": "NVIDIA H100 80GB HBM3, 81559 MiB",
        "gpu1": "NVIDIA H100 80GB HBM3, 81559 MiB",
        "nvcc": "12.4 (V12.4.131)",
    }
    assert all(timeout == 5.0 for _, timeout in run.calls)
    assert NVIDIA_SMI_LIST not in [argv for argv, _ in run.calls]  # fallback not needed


def test_one_broken_torch_probe_is_not_found_and_the_rest_still_report() -> None:
    torch = fake_cuda_torch()
    torch.cuda.get_device_capability = lambda i: 1 / 0  # type: ignore[attr-defined]
    del torch.backends
    report = collect_env(run=fake_run({}), import_module=importer({"torch": torch}), environ={})
    assert report.value("torch", "cudnn") == NOT_FOUND
    assert report.value("torch", "gpu0") == NOT_FOUND
    assert report.value("torch", "version") == "2.5.1+cu124"


def test_no_torch_installed_says_not_installed_and_does_not_raise() -> None:
    report = collect_env(run=fake_run({}), import_module=no_torch, environ={})
    torch = report.section("torch")
    assert {f.value for f in torch.fields} == {NOT_INSTALLED}
    assert "PyTorch version:" in format_env_text(report)
    assert "not installed" in format_env_text(report)


@pytest.mark.parametrize(
    "error",
    [ImportError("libcudart.so.12: cannot open shared object file"), OSError("bad ELF header")],
)
def test_broken_torch_install_is_reported_with_the_error(error: Exception) -> None:
    def import_module(name: str) -> object:
        raise error

    report = collect_env(run=fake_run({}), import_module=import_module, environ={})
    version = report.value("torch", "version")
    assert version.startswith(f"import failed: {type(error).__name__}:")
    assert str(error) in version


def test_nvidia_smi_missing_is_not_found() -> None:
    report = collect_env(run=fake_run({}), import_module=no_torch, environ={})
    nvidia = env_to_json(report)["nvidia"]
    assert nvidia == {"driver": NOT_FOUND, "gpus": NOT_FOUND, "nvcc": NOT_FOUND}


def test_a_runner_that_raises_or_times_out_is_not_found() -> None:
    def run(argv: list[str], timeout: float) -> str | None:
        raise subprocess.TimeoutExpired(argv, timeout)

    nvidia = env_to_json(collect_env(run=run, import_module=no_torch, environ={}))["nvidia"]
    assert set(nvidia.values()) == {NOT_FOUND}


def test_default_run_returns_none_for_missing_binary_timeout_and_failure() -> None:
    assert default_run(["minrepro-no-such-binary-xyz"], 1.0) is None
    assert default_run([sys.executable, "-c", "import time; time.sleep(10)"], 0.3) is None
    assert default_run([sys.executable, "-c", "raise SystemExit(3)"], 5.0) is None
    assert default_run([sys.executable, "-c", "print('ok')"], 5.0) == "ok\n"


def test_uuid_in_nvidia_smi_list_output_is_stripped() -> None:
    listing = f"GPU 0: NVIDIA H100 80GB HBM3 (UUID: {UUID})\nGPU 1: NVIDIA H100 (UUID: {UUID})\n"
    run = fake_run({tuple(NVIDIA_SMI_LIST): listing})  # the CSV query fails: -L fallback
    report = collect_env(run=run, import_module=no_torch, environ={})
    nvidia = env_to_json(report)["nvidia"]
    assert nvidia["gpu0"] == "GPU 0: NVIDIA H100 80GB HBM3"
    assert nvidia["gpu1"] == "GPU 1: NVIDIA H100"
    assert "UUID" not in format_env_text(report)
    assert "8f6b2f3a" not in json.dumps(env_to_json(report))


def test_bare_uuids_are_stripped_from_smi_output_and_env_vars() -> None:
    run = fake_run({tuple(NVIDIA_SMI_QUERY): f"NVIDIA A10 {UUID}, 535.1, 24564 MiB\n"})
    environ = {"CUDA_VISIBLE_DEVICES": f"{UUID},MIG-{UUID[4:]}"}
    report = collect_env(run=run, import_module=no_torch, environ=environ)
    assert "8f6b2f3a" not in format_env_text(report)
    assert report.value("env", "CUDA_VISIBLE_DEVICES") == "<uuid>,<uuid>"
    assert strip_uuids("GPU 0: A100 (UUID: GPU-x)") == "GPU 0: A100"


def test_env_vars_fixed_ones_then_every_nccl_one_in_order() -> None:
    environ = {
        "NCCL_DEBUG": "INFO",
        "TORCH_NCCL_BLOCKING_WAIT": "1",
        "NCCL_ASYNC_ERROR_HANDLING": "1",
        "CUDA_LAUNCH_BLOCKING": "1",
        "HOME": "/root",
        "AWS_SECRET_ACCESS_KEY": "do-not-report",
    }
    env = env_to_json(collect_env(run=fake_run({}), import_module=no_torch, environ=environ))["env"]
    assert list(env) == [
        "PYTORCH_CUDA_ALLOC_CONF",
        "CUDA_VISIBLE_DEVICES",
        "CUDA_LAUNCH_BLOCKING",
        "TORCH_USE_CUDA_DSA",
        "NCCL_ASYNC_ERROR_HANDLING",
        "NCCL_DEBUG",
        "TORCH_NCCL_BLOCKING_WAIT",
        "OMP_NUM_THREADS",
    ]
    assert env["CUDA_LAUNCH_BLOCKING"] == "1"
    assert env["PYTORCH_CUDA_ALLOC_CONF"] == NOT_SET
    assert env["NCCL_DEBUG"] == "INFO"


def test_text_is_aligned_key_value_lines_under_headings() -> None:
    report = collect_env(run=fake_run(GPU_RUN), import_module=no_torch, environ={})
    text = format_env_text(report)
    blocks = text.strip("\n").split("\n\n")
    assert [b.splitlines()[0] for b in blocks] == [s.title for s in report.sections]
    for block in blocks:
        rows = block.splitlines()[1:]
        value_columns = {len(row) - len(row.split(": ", 1)[1].lstrip()) for row in rows}
        assert len(value_columns) == 1, block  # values start in one column per section


def test_json_shape_is_sections_of_json_typed_fields() -> None:
    report = collect_env(run=fake_run({}), import_module=no_torch, environ={})
    data = env_to_json(report)
    assert list(data) == ["system", "torch", "nvidia", "env", "packages"]
    assert all(isinstance(v, str | int | bool | type(None))
               for section in data.values() for v in section.values())
    assert isinstance(data["system"]["cpu_count"], int)
    assert data["system"]["minrepro"] == "0.1.0"
    assert json.loads(json.dumps(data)) == data


def test_report_is_frozen() -> None:
    report = collect_env(run=fake_run({}), import_module=no_torch, environ={})
    assert isinstance(report, EnvReport)
    with pytest.raises(AttributeError):
        report.sections = ()  # type: ignore[misc]


def test_real_default_collect_env_on_this_cpu_machine() -> None:
    torch = pytest.importorskip("torch")
    report = collect_env()
    assert report.value("torch", "version") == torch.__version__
    assert report.value("torch", "version").startswith("2.13")
    assert report.value("torch", "cuda_available") == "False"
    assert report.value("packages", "torch") == torch.__version__
    assert "CUDA available:" in format_env_text(report)


def test_importing_envreport_does_not_import_torch() -> None:
    code = "import minrepro.report.envreport, sys; assert 'torch' not in sys.modules"
    repo_root = Path(__file__).resolve().parents[1]
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60, cwd=repo_root)
