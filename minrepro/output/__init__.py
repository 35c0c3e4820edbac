"""Output: how results leave minrepro for a person or a program.

    contract  `diagnose --json`: the JSON object of the contract
    text      the plain-text diagnosis
    redact    masks for what identifies a person or a machine (home paths, hosts, IPs)
    progress  a progress line on stderr for big inputs on a terminal

Pure functions of model dataclasses; nothing here reads a log.
"""
