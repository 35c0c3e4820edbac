"""`python -m minrepro.scoring DIR`: the documented entry point of the scoring tool, which
lives in minrepro.tools.scoring (a developer tool, not library)."""

from __future__ import annotations

import sys

from minrepro.tools.scoring import CaseResult, load_labels, main, score_case, score_folder

__all__ = ["CaseResult", "load_labels", "main", "score_case", "score_folder"]

if __name__ == "__main__":
    sys.exit(main())
