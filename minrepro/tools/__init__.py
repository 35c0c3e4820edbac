"""Developer tools, not library: nothing under minrepro imports them.

    scoring   `python -m minrepro.scoring DIR`: accuracy on a labelled folder of logs
    freeze    `python -m minrepro.tools.freeze`: rewrite the frozen copy of the built-in rules
"""
