"""EnvExtractor: versions, GPU and precision facts, each key/value once."""

from __future__ import annotations

import pytest

from minrepro.diagnose.extract.env import EnvExtractor
from minrepro.model import Line


def facts(*rows: str) -> set[tuple[str, str]]:
    extractor = EnvExtractor()
    out = set()
    for number, text in enumerate(rows, start=1):
        out.update((e.key, e.value) for e in extractor.feed(Line(line=number, text=text)))
    return out


CASES = [
    ("loss tensor(0.6868, device='cuda:0', grad_fn=<BinaryCrossEntropyBackward>)",
     {("loss_fn", "binary_cross_entropy")}),
    ("criterion = nn.BCEWithLogitsLoss()", {("loss_fn", "binary_cross_entropy")}),
    ("loss = F.cross_entropy(logits, y)", set()),
    ("# torch==2.11.0+cu128",  # corpus softmax_overflow__07.log
     {("torch_version", "2.11.0+cu128"), ("cuda_version", "12.8")}),
    ("PyTorch version: 2.1.0+cu121", {("torch_version", "2.1.0+cu121"), ("cuda_version", "12.1")}),
    ("torch                     1.13.1", {("torch_version", "1.13.1")}),  # pip list
    ("[pip3] torch==1.9.0", {("torch_version", "1.9.0")}),  # collect_env (pytorch/pytorch#64720)
    ("[pip3] torchvision==0.10.0", set()),
    ("CUDA used to build PyTorch: 11.8", {("cuda_version", "11.8")}),
    ("Is CUDA available: False", {("cuda_available", "False")}),
    ("CUDA runtime version: 12.1.105", {("cuda_runtime_version", "12.1.105")}),
    ("Nvidia driver version: 461.37", {("driver_version", "461.37")}),
    ("| NVIDIA-SMI 535.104.05             Driver Version: 535.104.05   CUDA Version: 12.2     |",
     {("driver_version", "535.104.05"), ("driver_cuda_version", "12.2")}),
    ("|   0  NVIDIA A100-SXM4-80GB          On  | 00000000:07:00.0 Off |                    0 |",
     {("gpu_name", "NVIDIA A100-SXM4-80GB")}),
    ("|   0  Tesla T4            Off  | 00000000:00:04.0 Off |                    0 |",
     {("gpu_name", "Tesla T4")}),
    ("GPU 0: NVIDIA GeForce RTX 3080 (UUID: GPU-1234abcd-0000)",
     {("gpu_name", "NVIDIA GeForce RTX 3080")}),
    # corpus cuda_env_mismatch__01.log
    ("NVIDIA GeForce RTX 3060 Laptop GPU with CUDA capability sm_86 is not compatible with the "
     "current PyTorch installation.",
     {("gpu_name", "NVIDIA GeForce RTX 3060 Laptop GPU"), ("compute_capability", "sm_86")}),
    ("The current PyTorch install supports CUDA capabilities sm_37 sm_50 sm_60 sm_70.",
     {("supported_archs", "sm_37 sm_50 sm_60 sm_70")}),
    ("Found GPU0 NVIDIA GeForce GTX 770 which is of cuda capability 3.0.",
     {("gpu_name", "NVIDIA GeForce GTX 770"), ("compute_capability", "sm_30")}),
    # corpus cuda_env_mismatch__04.log
    ("The NVIDIA driver on your system is too old (found version 9000).",
     {("driver_cuda_version", "9.0")}),
    ('  File "/opt/conda/lib/python3.8/site-packages/torch/nn/functional.py", line 1680, in x',
     {("python_version", "3.8")}),
    ("Python version: 3.10.12 (main, Jun 11 2023, 05:26:28) [GCC 11.4.0] (64-bit runtime)",
     {("python_version", "3.10.12")}),
    ("python train.py --fp16 --batch_size 8", {("dtype", "fp16")}),
    ("model = AutoModel.from_pretrained(name, torch_dtype=torch.bfloat16)", {("dtype", "bf16")}),
    ("Using 16bit native Automatic Mixed Precision (AMP)", {("dtype", "fp16")}),
    ("INFO: Using bfloat16 Automatic Mixed Precision (AMP)", {("dtype", "bf16")}),
    ("I trained on a single A100-SXM4-80GB box", {("gpu_name", "A100-SXM4-80GB")}),
    ("2023-01-01 INFO loaded 100 examples", set()),
]


@pytest.mark.parametrize("text, expected", CASES)
def test_env_facts(text: str, expected: set[tuple[str, str]]) -> None:
    assert facts(text) == expected


def test_each_fact_once() -> None:
    row = '  File "/usr/lib/python3.8/site-packages/x.py", line 1, in f'
    extractor = EnvExtractor()
    events = [e for n in range(1, 50) for e in extractor.feed(Line(line=n, text=row))]
    assert [(e.line, e.key, e.value) for e in events] == [(1, "python_version", "3.8")]
