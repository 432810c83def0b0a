"""The uploads package keeps its shape: both protocols offer every step the services call, and code outside the
package (views, API, tasks, other apps, tests) reaches the protocols only through the package's services, never a
protocol module or a private name. The import direction itself is import-linter's (pyproject.toml)."""

import ast
from pathlib import Path

import pytest

from submissions.uploads import direct, proxied
from submissions.uploads.common import PROTOCOL_STEPS

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = "submissions.uploads"
PROTOCOL_MODULES = (f"{PACKAGE}.proxied", f"{PACKAGE}.direct")


@pytest.mark.parametrize("protocol", [proxied, direct], ids=lambda module: module.__name__)
@pytest.mark.parametrize("step", PROTOCOL_STEPS)
def test_each_protocol_offers_every_step(protocol, step):
    assert callable(getattr(protocol, step, None)), f"{protocol.__name__} lacks the step {step}"


def _imports(path: Path):
    """(module imported from, names) for every `from X import ...` and `import X` in a file."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.module, [alias.name for alias in node.names]
        elif isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, []


def _project_files():
    for path in sorted(ROOT.rglob("*.py")):
        parts = path.relative_to(ROOT).parts
        if (
            parts[0].startswith((".venv", ".git", "var"))
            or parts[0] == "node_modules"
            or "migrations" in parts
        ):
            continue
        yield path


def test_no_module_takes_a_private_name_of_the_uploads_package():
    offenders = [
        f"{path.relative_to(ROOT)}: {module}.{name}"
        for path in _project_files()
        for module, names in _imports(path)
        if module == PACKAGE or module.startswith(f"{PACKAGE}.")
        for name in names
        if name.startswith("_")
    ]
    assert not offenders, f"private names of {PACKAGE} imported elsewhere: {offenders}"


def test_only_the_package_reaches_a_protocol_module():
    package_dir = ROOT / "submissions" / "uploads"
    offenders = []
    for path in _project_files():
        if path.parent == package_dir or path == Path(__file__):
            continue
        for module, names in _imports(path):
            if module in PROTOCOL_MODULES or (module == PACKAGE and {"proxied", "direct"} & set(names)):
                offenders.append(f"{path.relative_to(ROOT)}: {module} {names}")
    assert not offenders, f"call the services of {PACKAGE} instead: {offenders}"
