"""Repro: a `Diagnosis` in, a standalone repro script out, and the run that judges it.

    spec      templates/<cause>.yaml: typed params, bounds, relations, the expected error
    render    the one Jinja2 environment, the `py` and `comment` filters, the checks
              (ast.parse, stdlib + torch imports only, at most 40 non-blank lines)
    verify    run a script in a subprocess; judge it by exit status, last line and the
              expected error text

Hands on: Python source text (a script), and `VerifyResult`.
"""
