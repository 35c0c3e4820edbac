"""Package versions from the formats real logs print them in -> EnvFact("package:<name>")."""

from __future__ import annotations

from minrepro.diagnose.extract.packages import PackageExtractor
from minrepro.diagnose.pipeline import diagnose_lines
from minrepro.model import Line, package_versions
from minrepro.output.contract import diagnosis_to_json
from minrepro.report.markdown import package_row


def packages(text: str) -> dict[str, str]:
    extractor = PackageExtractor()
    found: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), 1):
        for fact in extractor.feed(Line(line=number, text=line)):
            found[fact.key] = fact.value
    return package_versions(found)


def test_collect_env_pip_and_conda_rows() -> None:
    text = """Versions of relevant libraries:
[pip3] numpy==1.24.1
[pip3] pytorch-lightning==1.9.0
[pip3] torch==2.0.1+cu117
[pip3] triton==2.0.0
[conda] numpy                     1.24.1                   pypi_0    pypi
[conda] torchvision               0.15.2               py310_cu117    pytorch"""
    assert packages(text) == {"numpy": "1.24.1", "pytorch-lightning": "1.9.0",
                              "triton": "2.0.0", "torchvision": "0.15.2"}


def test_banners_of_transformers_cli_env_and_llamafactory() -> None:
    text = """- `transformers` version: 4.35.2
- Platform: Linux-4.18.0-477.27.1.el8_8.x86_64-x86_64-with-glibc2.28
- Python version: 3.10.13
- Huggingface_hub version: 0.19.4
- PyTorch version (GPU?): 2.1.1+cu121 (True)
- Flax version (CPU?/GPU?/TPU?): not installed (NA)
- Datasets version: 2.21.0
- DeepSpeed version: 0.15.1+unknown
Pytorch Ignite version: 0.3.0"""
    assert packages(text) == {"transformers": "4.35.2", "huggingface-hub": "0.19.4",
                              "datasets": "2.21.0", "deepspeed": "0.15.1+unknown",
                              "pytorch-ignite": "0.3.0"}


def test_paths_pip_output_and_a_pin_said_in_prose() -> None:
    egg = "/home/u/venv/lib/python3.6/site-packages/opennre-0.1-py3.6.egg/opennre/encoder/base.py"
    text = f"""  File "{egg}", line 56, in __init__
/usr/lib/python3.8/site-packages/pytorch_lightning-1.9.0.dist-info/METADATA
Successfully installed peft-0.4.0 tokenizers-0.15.0 huggingface-hub-0.16.4
Requirement already satisfied: einops in ./venv/lib/python3.10/site-packages (0.6.1)
I use transformers=4.41.2, but this raises the above issue."""
    assert packages(text) == {"opennre": "0.1", "pytorch-lightning": "1.9.0", "peft": "0.4.0",
                              "tokenizers": "0.15.0", "huggingface-hub": "0.16.4",
                              "einops": "0.6.1", "transformers": "4.41.2"}


def test_what_is_not_a_package_version() -> None:
    text = """PyTorch version: 2.0.1+cu117
CUDA used to build PyTorch: 11.7
GCC version: (Ubuntu 9.4.0-1ubuntu1~20.04.1) 9.4.0
CMake version: version 3.27.5
Nvidia driver version: 525.116.04
Python version: 3.9.16 (main, Dec  7 2022, 01:11:51)  [GCC 9.4.0] (64-bit runtime)
{'loss': 2.1034, 'grad_norm': 1.873, 'learning_rate': 1.98e-05, 'epoch': 0.1}
Epoch 3: loss=0.412 lr=1.0e-4 step=1.2.3
torch==2.0.1"""
    assert packages(text) == {}


def test_first_version_seen_wins() -> None:
    assert packages("transformers==4.30.2\ntransformers version: 4.36.2") == {
        "transformers": "4.30.2"}


def test_versions_reach_the_json_the_report_and_the_params() -> None:
    log = """transformers==4.30.2
accelerate==0.21.0
Traceback (most recent call last):
  File "/opt/conda/lib/python3.10/site-packages/transformers/modeling_utils.py", line 1489, in x
    model = cls(config, *model_args, **model_kwargs)
TypeError: __init__() got an unexpected keyword argument 'attn_implementation'"""
    diagnosis = diagnose_lines([Line(line=n, text=t) for n, t in enumerate(log.splitlines(), 1)])
    assert diagnosis.cause == "version_incompatibility"
    assert diagnosis.params["package"] == "transformers"
    assert diagnosis.params["logged_version"] == "4.30.2"
    env = diagnosis_to_json(diagnosis)["env"]
    assert env["packages"] == {"transformers": "4.30.2", "accelerate": "0.21.0"}
    assert not any(key.startswith("package:") for key in env)
    assert package_row(env["packages"]) == [
        "- Packages: `transformers 4.30.2`, `accelerate 0.21.0`"]
    assert package_row({f"p{i}": "1.0" for i in range(33)}, limit=30)[0].endswith("(+3 more)")
