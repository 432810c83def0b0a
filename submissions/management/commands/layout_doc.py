"""Rewrite the docs generated from the code (docs/portal.md's import contracts, docs/modules.md)."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from portal.docs_generated import generated_pages


class Command(BaseCommand):
    help = "Check the docs generated from the code (import contracts, the module map); --write rewrites them."

    def add_arguments(self, parser):
        parser.add_argument("--write", action="store_true", help="rewrite the pages in place")

    def handle(self, *args, write: bool, **options):
        try:
            pages = generated_pages()
        except ValueError as exc:
            raise CommandError(str(exc)) from exc
        for path, text in pages.items():
            if write:
                path.write_text(text, encoding="utf-8")
                self.stdout.write(f"wrote {path}")
            elif path.read_text(encoding="utf-8") != text:
                raise CommandError(f"{path} is out of date: run manage.py layout_doc --write")
        if not write:
            self.stdout.write("the generated docs are up to date")
