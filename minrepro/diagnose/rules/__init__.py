"""Rules: the YAML rule packs (data, one file per cause, in the category folders here) and
the registry of every rule id.

    files     reading rule YAML safely; the frozen copy start-up reads instead
    pack      the rule schema: `Rule`, `Signal`, `Case`, checked when loaded
    registry  `RuleSet`: built-in rules, analyzer checks and user packs in one id space

Hands on: a `RuleSet`, to the matcher (its pattern rules) and to decide (titles and fixes).
"""
