"""The fast loop's list of sweeps (tests/conftest.py `_SLOW`) names real tests: a sweep renamed or moved would
otherwise drop out of the list silently and slow `make test-fast` down, or a name mistyped would mark nothing."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.conftest import _SLOW

ROOT = Path(__file__).resolve().parent.parent


def test_every_listed_sweep_exists():
    missing = []
    for module, names in _SLOW.items():
        path = ROOT / module
        if not path.exists():
            missing.append(module)
            continue
        defined = {
            node.name
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        }
        missing += [f"{module}::{name}" for name in names if name not in defined]
    assert not missing, "tests/conftest.py _SLOW names tests that are not there:\n" + "\n".join(missing)
