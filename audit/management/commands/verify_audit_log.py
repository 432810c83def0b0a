"""manage.py verify_audit_log: walk the hash chain, check every event's HMAC and that the chain still reaches
the newest signed checkpoint; exit 1 naming the first broken event."""

import re

from django.core.management.base import BaseCommand, CommandError

from audit.checkpoints import CheckpointError, checkpoint_latest, checkpoint_write
from audit.selectors import audit_chain_head, audit_chain_verify

HEAD_RE = re.compile(r"^(\d+):([0-9a-f]{64})$")


class Command(BaseCommand):
    help = (
        "Verify the audit log: every event's hash and HMAC, the links between them, and (by default) that the "
        "chain still reaches the newest signed checkpoint; exits 1 naming the first altered, forged, removed or "
        "reordered event, or a truncated log. --print-head prints SEQUENCE:HASH of the newest event to publish "
        "elsewhere; --expect-head SEQUENCE:HASH also checks against such a head; --write-checkpoint writes a "
        "signed checkpoint of the verified head."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--expect-head",
            metavar="SEQUENCE:HASH",
            help="a head printed earlier by --print-head or read from /audit/head (published outside the database)",
        )
        parser.add_argument(
            "--print-head", action="store_true", help="print SEQUENCE:HASH of the newest event"
        )
        parser.add_argument(
            "--no-checkpoint",
            action="store_true",
            help="do not compare with the newest signed checkpoint (audit_checkpoints storage)",
        )
        parser.add_argument(
            "--write-checkpoint",
            action="store_true",
            help="after a successful verification, write a signed checkpoint of the head (as the daily task does)",
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
        checkpoint = None
        if not options["no_checkpoint"]:
            try:
                checkpoint = checkpoint_latest()
            except CheckpointError as exc:
                raise CommandError(f"Audit log cannot be verified: {exc}", returncode=1) from None
        result = audit_chain_verify(
            expect_head=expect,
            checkpoint_head=checkpoint.head if checkpoint else None,
            checkpoint_label=str(checkpoint) if checkpoint else "",
        )
        if not result.ok:
            raise CommandError(f"Audit log chain is BROKEN at {result.first_break}", returncode=1)
        if options["print_head"]:
            sequence, digest = audit_chain_head()
            self.stdout.write(f"{sequence}:{digest}")
            return
        message = f"Audit log chain OK: {result.checked} events verified."
        if checkpoint is not None:
            message += f" It reaches the {checkpoint}."
        elif not options["no_checkpoint"]:
            message += " No signed checkpoint yet (written daily by beat, or with --write-checkpoint)."
        self.stdout.write(self.style.SUCCESS(message))
        if options["write_checkpoint"]:
            written = checkpoint_write()
            self.stdout.write(f"Wrote {written}.")
