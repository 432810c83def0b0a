"""The docs written from the code, not by hand: docs/portal.md's table of import contracts (pyproject.toml's
import-linter section) and docs/modules.md, the map of every app's modules (each module's own docstring, first
sentence). Written between markers by `manage.py layout_doc --write`; tests/portal/test_generated_docs.py fails
when a page and the code drift apart (docs/lifecycle.md's tables are generated the same way, by `lifecycle_doc`)."""

from __future__ import annotations

import ast
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
SKIPPED = {"migrations", "management", "templatetags", "tests", "__pycache__"}


@dataclass(frozen=True)
class Block:
    doc: str  # the page under docs/
    name: str
    render: object  # () -> str

    @property
    def start(self) -> str:
        return f"<!-- generated:{self.name}:start (manage.py layout_doc --write) -->"

    @property
    def end(self) -> str:
        return f"<!-- generated:{self.name}:end -->"


def _pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def _code(names) -> str:
    return ", ".join(f"`{name}`" for name in names)


def contracts_markdown() -> str:
    """One row per import-linter contract: what it promises and the modules it names."""
    linter = _pyproject()["tool"]["importlinter"]
    rows = ["| contract | kind | promise | modules |", "|---|---|---|---|"]
    for contract in linter["contracts"]:
        kind = contract["type"]
        if kind == "layers":
            inside = f" inside {_code(contract['containers'])}" if contract.get("containers") else ""
            modules = " -> ".join(f"`{layer}`" for layer in contract["layers"]) + inside
        elif kind == "forbidden":
            modules = (
                f"{_code(contract['source_modules'])} never import {_code(contract['forbidden_modules'])}"
            )
        elif kind == "independence":
            modules = f"{_code(contract['modules'])} import none of each other"
        else:
            modules = ", ".join(
                f"{key}: {value}" for key, value in contract.items() if key not in ("id", "name", "type")
            )
        rows.append(f"| `{contract['id']}` | {kind} | {contract['name']} | {modules} |")
    return "\n".join(rows)


def _first_sentence(path: Path) -> str:
    try:
        doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"), str(path))) or ""
    except SyntaxError:
        return ""
    text = " ".join(doc.split())
    match = re.match(r"(.+?[.:;])(\s|$)", text)
    sentence = (match.group(1) if match else text).rstrip(":;")
    return sentence.replace("|", "\\|")


def _entries(folder: Path, prefix: str):
    """(dotted name, path of its docstring) of each module and subpackage of `folder`, subpackages walked."""
    for path in sorted(folder.iterdir()):
        if path.name in SKIPPED or path.name.startswith((".", "_")) and path.name != "__init__.py":
            continue
        if path.is_dir() and (path / "__init__.py").exists():
            yield f"{prefix}.{path.name}", path / "__init__.py"
            yield from _entries(path, f"{prefix}.{path.name}")
        elif path.suffix == ".py" and path.name != "__init__.py":
            yield f"{prefix}.{path.stem}", path


def modules_markdown() -> str:
    """Every app's modules and subpackages, with what each holds in its own words."""
    apps = _pyproject()["tool"]["importlinter"]["root_packages"]
    out = []
    for app in apps:
        folder = ROOT / app
        rows = [f"#### `{app}/`", "", f"{_first_sentence(folder / '__init__.py') or '—'}", ""]
        rows += ["| module | what it holds |", "|---|---|"]
        for dotted, path in _entries(folder, app):
            rows.append(f"| `{dotted}` | {_first_sentence(path) or '—'} |")
        out.append("\n".join(rows))
    return "\n\n".join(out)


BLOCKS = (
    Block("portal.md", "contracts", contracts_markdown),
    Block("modules.md", "modules", modules_markdown),
)


def doc_generated(doc: str, text: str) -> str:
    """The page `doc` with each of its generated blocks rewritten from the code; ValueError naming a lost marker."""
    for block in BLOCKS:
        if block.doc != doc:
            continue
        if block.start not in text or block.end not in text:
            raise ValueError(f"docs/{doc} lost the markers of its generated {block.name!r} block.")
        before, rest = text.split(block.start, 1)
        _, after = rest.split(block.end, 1)
        text = f"{before}{block.start}\n{block.render()}\n{block.end}{after}"
    return text


def generated_pages() -> dict[Path, str]:
    """Every page with generated blocks, as the code writes it now."""
    pages = sorted({block.doc for block in BLOCKS})
    return {DOCS / doc: doc_generated(doc, (DOCS / doc).read_text(encoding="utf-8")) for doc in pages}
