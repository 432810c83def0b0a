"""The rule ids documented in docs/*.md, read from their tables, so a finding can link to its rule's text.

A documented rule is a row of a Markdown table whose first header is `rule`; its first cell names one
or more ids in backticks. The docs stay the single source: the rules page renders these rows.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from pathlib import Path

from django.conf import settings
from django.utils.html import escape
from django.utils.safestring import mark_safe

RULE_DOCS = ["rules.md", "input-safety.md", "report-format.md", "power.md", "assembly.md"]
_RULE_ID = re.compile(r"`([a-z0-9]+(?:[-_][a-z0-9]+)+)`")
_CODE = re.compile(r"`([^`]+)`")
_BOLD = re.compile(r"\*\*([^*]+)\*\*")


@dataclass
class RuleEntry:
    """One table row documenting a rule: where it is, and its cells under their headers."""

    doc: str
    section: str
    cells: list[tuple[str, str]]


@dataclass
class RuleDoc:
    rule: str
    entries: list[RuleEntry] = field(default_factory=list)


def _split_row(line: str) -> list[str]:
    # A cell may hold an escaped pipe (\|) inside code; keep it in the cell.
    cells = re.split(r"(?<!\\)\|", line.strip().strip("|"))
    return [cell.strip().replace("\\|", "|") for cell in cells]


def parse_rule_tables(text: str, doc: str) -> list[tuple[list[str], RuleEntry]]:
    """(rule ids, entry) for every row of every `| rule | ...` table of a Markdown document."""
    rows = []
    section = ""
    headers: list[str] | None = None
    lines = text.splitlines()
    for index, line in enumerate(lines):
        if line.startswith("#"):
            section = line.lstrip("#").strip()
            headers = None
            # A heading naming a rule ("The comparison (`raw-log-consistency`)") documents it in its prose.
            heading_ids = _RULE_ID.findall(section)
            if heading_ids:
                prose = []
                for following in lines[index + 1 :]:
                    if following.startswith("#"):
                        break
                    prose.append(following.strip())
                text_cell = " ".join(part for part in prose if part)
                if text_cell:
                    rows.append(
                        (heading_ids, RuleEntry(doc=doc, section=section, cells=[("explanation", text_cell)]))
                    )
            continue
        if not line.startswith("|"):
            headers = None
            continue
        cells = _split_row(line)
        next_line = lines[index + 1] if index + 1 < len(lines) else ""
        if (
            headers is None
            and next_line.startswith("|")
            and set(next_line.replace("|", "").strip()) <= set("-: ")
        ):
            headers = [c.lower() for c in cells] if cells and cells[0].lower() == "rule" else []
            continue
        if not headers or set(line.replace("|", "").strip()) <= set("-: "):
            continue
        ids = _RULE_ID.findall(cells[0])
        if ids:
            pairs = [(headers[i] if i < len(headers) else "", cells[i]) for i in range(1, len(cells))]
            rows.append((ids, RuleEntry(doc=doc, section=section, cells=[p for p in pairs if p[1]])))
    return rows


@functools.cache
def rule_catalog() -> dict[str, RuleDoc]:
    """Every documented rule id -> its rows, in the order of RULE_DOCS (rules.md first)."""
    docs_dir = Path(settings.BASE_DIR) / "docs"
    catalog: dict[str, RuleDoc] = {}
    for doc in RULE_DOCS:
        path = docs_dir / doc
        if not path.is_file():
            continue
        for ids, entry in parse_rule_tables(path.read_text(encoding="utf-8"), doc):
            for rule in ids:
                catalog.setdefault(rule, RuleDoc(rule)).entries.append(entry)
    return dict(sorted(catalog.items()))


def markdown_inline(text: str) -> str:
    """The little inline Markdown the tables use (code, bold) as safe HTML; everything else escaped."""
    html = escape(text)
    html = _CODE.sub(lambda m: f"<code>{m.group(1)}</code>", html)
    return mark_safe(_BOLD.sub(lambda m: f"<strong>{m.group(1)}</strong>", html))  # built from escaped text


# What the rules page calls each documentation section holding rules ((doc, section) -> area title); a section
# not listed is shown under its own heading.
AREA_TITLES = {
    ("input-safety.md", "Rule ids"): "Input safety: archives, names and sizes",
    ("assembly.md", "Conflicts and safety"): "Assembling run archives into a bundle",
    ("report-format.md", "The comparison (`raw-log-consistency`)"): "Recomputation from the raw log",
}


@dataclass
class RuleArea:
    title: str
    slug: str
    rules: list[str] = field(default_factory=list)


def _section_order() -> dict[tuple[str, str], int]:
    """(doc, section) -> its place: the docs in RULE_DOCS order, each doc's headings top to bottom."""
    docs_dir = Path(settings.BASE_DIR) / "docs"
    order: dict[tuple[str, str], int] = {}
    for doc in RULE_DOCS:
        path = docs_dir / doc
        if not path.is_file():
            continue
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.startswith("#"):
                order.setdefault((doc, line.lstrip("#").strip()), len(order))
    return order


@functools.cache
def rule_areas() -> list[RuleArea]:
    """Every documented rule under the area (documentation section) that first documents it, in the docs' order."""
    order = _section_order()
    areas: dict[tuple[str, str], RuleArea] = {}
    for rule, doc in rule_catalog().items():
        first = doc.entries[0]
        key = (first.doc, first.section)
        if key not in areas:
            title = AREA_TITLES.get(key, first.section)
            slug = re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")
            areas[key] = RuleArea(title=title, slug=slug)
        areas[key].rules.append(rule)
    return [areas[key] for key in sorted(areas, key=lambda k: order.get(k, len(order)))]
