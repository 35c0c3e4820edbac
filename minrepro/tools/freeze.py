"""`python -m minrepro.tools.freeze`: parse the built-in rule YAML (checked in full) and
rewrite the frozen copy that start-up reads (minrepro/diagnose/rules/frozen.json)."""

from __future__ import annotations

import sys

from minrepro.diagnose.rules.registry import freeze
from minrepro.errors import MinreproError


def main() -> int:
    try:
        print(freeze())
    except MinreproError as err:
        print(f"freeze: error: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
