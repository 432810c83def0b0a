"""The public MLPerf Endpoints rules as checks on a layout and its recomputed points (docs/rules.md).

Rule ids are the official checker's where the rule is the same; parameters come from the ruleset
file. Every descriptor is hostile: a wrong type, a missing key, NaN or a huge number becomes a
finding, never an exception. One module per area (structure, disclosure, load_pattern, metrics,
accuracy, power), each a set of `check_*` functions over the shared RuleRun state (state.py);
run.py calls them in a fixed order.
"""

from checker.judge.rules.run import run_rules

__all__ = ["run_rules"]
