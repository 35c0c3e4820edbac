"""Rewrite `minrepro/diagnose/tensor_api.txt`, the public attributes of torch.Tensor that root
rule MR-ROOT-096 reads (diagnose itself never imports torch):

    python -m minrepro.tools.tensorapi
"""

from __future__ import annotations

import sys

from minrepro.diagnose.rootrule import API_DIR

_HEADER = """\
# Public attributes of torch.Tensor (and nn.Parameter) in torch {version}: code that asks a tensor
# for one of these, on a torch that says it has no such attribute, was written for a newer
# torch (MR-ROOT-096). Regenerate: python -m minrepro.tools.tensorapi
"""


def main() -> int:
    import torch

    names = sorted({name for kind in (torch.Tensor, torch.nn.Parameter) for name in dir(kind)
                    if not name.startswith("_")})
    path = API_DIR / "tensor_api.txt"
    version = torch.__version__.split("+")[0]
    path.write_text(_HEADER.format(version=version) + "\n".join(names) + "\n",
                    encoding="utf-8")
    print(f"{path}: {len(names)} names")
    return 0


if __name__ == "__main__":
    sys.exit(main())
