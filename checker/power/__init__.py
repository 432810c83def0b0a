"""Power analysis (docs/power.md): provisioned power from system_power.json and measured power traces.

Plain figures and problems only; the power rules that turn them into findings are checker.judge.rules.power.
"""
