"""Every rule id the code can emit is documented, so a submitter can look up what it means and how to fix it."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).parents[2]
RULE_ID = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)+")
EMITTERS = {"error", "warning", "info", "add", "_finding"}


def emitted_rule_ids() -> dict[str, str]:
    """Rule ids passed as a literal first argument to a findings call, with where they are."""
    found: dict[str, str] = {}
    for path in sorted([*ROOT.glob("checker/**/*.py"), *ROOT.glob("submissions/**/*.py")]):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in EMITTERS
                and node.args
                and isinstance(node.args[0], ast.Constant)
                and isinstance(node.args[0].value, str)
                and RULE_ID.fullmatch(node.args[0].value)
            ):
                found.setdefault(node.args[0].value, f"{path.relative_to(ROOT)}:{node.lineno}")
    return found


def test_every_emitted_rule_id_is_documented():
    docs = "\n".join(p.read_text(encoding="utf-8") for p in (ROOT / "docs").glob("*.md"))
    emitted = emitted_rule_ids()
    assert len(emitted) > 100  # the scan really sees the rule suite
    undocumented = {rule: where for rule, where in emitted.items() if f"`{rule}`" not in docs}
    assert not undocumented, f"rule ids without documentation in docs/: {undocumented}"
