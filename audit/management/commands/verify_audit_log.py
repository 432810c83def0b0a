"""manage.py verify_audit_log: walk the hash chain; exit 1 naming the first broken event."""

import re

from django.core.management.base import BaseCommand, CommandError

from audit.selectors import audit_chain_head, audit_chain_verify

HEAD_RE = re.compile(r"^(\d+):([0-9a-f]{64})$")


class Command(BaseCommand):
    help = (
        "Verify the audit log's hash chain; exits non-zero naming the first altered, removed or reordered "
        "event. --print-head prints SEQUENCE:HASH of the newest event to publish elsewhere; "
        "--expect-head SEQUENCE:HASH also detects removed newest events."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--expect-head",
            metavar="SEQUENCE:HASH",
            help="a head printed earlier by --print-head (published outside the database)",
        )
        parser.add_argument(
            "--print-head", action="store_true", help="print SEQUENCE:HASH of the newest event"
        )

    def handle(self, *args, **options):
        expect = None
        if options["expect_head"]:
            match = HEAD_RE.match(options["expect_head"].strip())
            if match is None:
                raise CommandError(
                    "--expect-head must be SEQUENCE:HASH as printed by --print-head", returncode=2
                )
            expect = (int(match.group(1)), match.group(2))
        result = audit_chain_verify(expect_head=expect)
        if not result.ok:
            raise CommandError(f"Audit log chain is BROKEN at {result.first_break}", returncode=1)
        if options["print_head"]:
            sequence, digest = audit_chain_head()
            self.stdout.write(f"{sequence}:{digest}")
            return
        self.stdout.write(self.style.SUCCESS(f"Audit log chain OK: {result.checked} events verified."))
