"""Render every repro template and run it on CUDA, bug and --fixed: one table row per script.

    python scripts/gpu_check.py [--device cuda] [--timeout 180] [--out DIR]

Needs the repo importable (jinja2, pyyaml, torch with CUDA) and no network. Expected on a
GPU: exit 1 for the bug and 0 with --fixed for every cause (nccl_timeout uses nccl only on
two or more GPUs, gloo otherwise), except cuda_env_mismatch, which on a working install
finds no mismatch (0 and 0). Exits 1 when any row differs from that.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from minrepro.model import Diagnosis, Evidence  # noqa: E402
from minrepro.repro.render import has_template, load_spec, render_repro, write_script  # noqa: E402
from minrepro.repro.verify import verify_script  # noqa: E402
from minrepro.taxonomy import ALL_CAUSES, CATEGORY_OF  # noqa: E402

#: (bug exit, fixed exit) where it is not (1, 0): a working CUDA install has no env mismatch
EXPECTED = {"cuda_env_mismatch": (0, 0)}


def diagnosis(cause: str, variant: str) -> Diagnosis:
    return Diagnosis(cause=cause, category=CATEGORY_OF[cause], confidence=0.9,
                     params=load_spec(cause).example_params(), evidence=(Evidence(1, "gpu check"),),
                     fix="-", rule_id="MR-GPU-CHECK", title=cause, variant=variant,
                     source="gpu_check.log")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--timeout", type=float, default=180.0)
    parser.add_argument("--out", help="keep the rendered scripts here")
    args = parser.parse_args()
    folder = Path(args.out or tempfile.mkdtemp(prefix="minrepro-gpu-check-"))
    folder.mkdir(parents=True, exist_ok=True)
    print(f"{'cause':26} {'variant':16} {'bug':>4} {'fixed':>6} {'seconds':>8}  last line (bug)")
    failures = 0
    for cause in ALL_CAUSES:
        if not has_template(cause):
            print(f"{cause:26} {'-':16} no template")
            failures += 1
            continue
        for variant in load_spec(cause).variants:
            path = write_script(render_repro(diagnosis(cause, variant)),
                                folder / f"{cause}_{variant}.py", force=True)
            bug = verify_script(path, device=args.device, timeout=args.timeout)
            fixed = verify_script(path, fixed=True, device=args.device, timeout=args.timeout)
            ok = (bug.exit_code, fixed.exit_code) == EXPECTED.get(cause, (1, 0))
            failures += not ok
            seconds = bug.seconds + fixed.seconds
            print(f"{cause:26} {variant:16} {bug.exit_code!s:>4} {fixed.exit_code!s:>6} "
                  f"{seconds:8.1f}  {'' if ok else 'FAIL '}{bug.last_line[:90]}", flush=True)
            if not ok:
                print("    bug:  " + bug.output_tail[-1500:].replace("\n", "\n    "))
                print("    fixed: " + fixed.output_tail[-1500:].replace("\n", "\n    "))
    print(f"{failures} failing row(s); scripts in {folder}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
