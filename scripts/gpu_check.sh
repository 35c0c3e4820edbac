#!/usr/bin/env bash
# Render every repro template and run each on CUDA (bug and --fixed); prints a table
# cause | variant | bug exit | fixed exit | seconds. Needs no network. Run on a GPU machine:
#   scripts/gpu_check.sh [--timeout 180] [--out DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
export PYTHONUNBUFFERED=1
python -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' \
  || { echo "gpu_check: no CUDA device here" >&2; exit 125; }
exec python scripts/gpu_check.py --device cuda "$@"
