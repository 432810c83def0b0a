"""manage.py verify_audit_log: walk the hash chain; exit 1 naming the first broken event."""

from django.core.management.base import BaseCommand, CommandError

from audit.selectors import audit_chain_verify


class Command(BaseCommand):
    help = "Verify the audit log's hash chain; exits non-zero naming the first altered, removed or reordered event."

    def handle(self, *args, **options):
        result = audit_chain_verify()
        if not result.ok:
            raise CommandError(f"Audit log chain is BROKEN at {result.first_break}", returncode=1)
        self.stdout.write(self.style.SUCCESS(f"Audit log chain OK: {result.checked} events verified."))
