"""Print every workflow table (portal.policy.registered_policies) as Markdown, or write them into docs/lifecycle.md."""

from __future__ import annotations

from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from portal.policy import DOC_END, DOC_START, tables_markdown


def doc_path() -> Path:
    return Path(settings.BASE_DIR) / "docs" / "lifecycle.md"


def doc_with_table(text: str) -> str:
    """docs/lifecycle.md with the generated table put between its markers."""
    if DOC_START not in text or DOC_END not in text:
        raise CommandError(f"docs/lifecycle.md lost its markers {DOC_START!r} ... {DOC_END!r}.")
    before, rest = text.split(DOC_START, 1)
    _, after = rest.split(DOC_END, 1)
    return f"{before}{DOC_START}\n{tables_markdown()}\n{DOC_END}{after}"


class Command(BaseCommand):
    help = "Print every workflow table (Markdown); --write puts them into docs/lifecycle.md."

    def add_arguments(self, parser):
        parser.add_argument("--write", action="store_true", help="update docs/lifecycle.md in place")

    def handle(self, *args, write: bool, **options):
        if not write:
            self.stdout.write(tables_markdown())
            return
        path = doc_path()
        path.write_text(doc_with_table(path.read_text(encoding="utf-8")), encoding="utf-8")
        self.stdout.write(f"wrote {path}")
