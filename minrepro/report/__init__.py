"""Report: what a maintainer reads. A Markdown bug report and this machine's environment.

    bugreport  `minrepro report`: diagnosis, evidence with context, repro, environment
    envreport  `minrepro env`: OS, Python, torch, CUDA, GPUs (never fails, works without torch)
    markdown   untrusted text that cannot break out of its block, sparklines

Hands on: Markdown text, `EnvReport`.
"""
