"""manage.py seed_demo: demo organisations, users (printed passwords), systems, a submission in every state of
review and audit (review.demo) and published, annotated, retracted and cohort-bound results (leaderboard.demo);
safe to run again."""

from django.conf import settings
from django.core import mail
from django.core.management.base import BaseCommand
from django.db import connection
from django.test.utils import override_settings

from accounts.demo import seed_demo_accounts
from leaderboard.demo import seed_demo_publications
from review.demo import seed_demo_review
from submissions.demo import DEMO_USERS, seed_demo

CONSOLE_BACKEND = "django.core.mail.backends.console.EmailBackend"
LOCMEM_BACKEND = "django.core.mail.backends.locmem.EmailBackend"


class Command(BaseCommand):
    help = (
        "Create (or keep) the demo organisations, users, systems and submissions in every state. Idempotent."
    )

    def handle(self, *args, **options):
        if connection.vendor == "sqlite":
            # The zero-config demo database: a few hundred small commits, each fsynced by default, would be most of
            # the seeding time. A crash mid-seed loses at most a demo database, and seed_demo resumes anyway.
            with connection.cursor() as cursor:
                cursor.execute("PRAGMA synchronous=OFF")
        # The demo prints e-mails to the console; the dozens the seeding sends would bury the logins: count them.
        quiet = settings.EMAIL_BACKEND == CONSOLE_BACKEND
        with override_settings(EMAIL_BACKEND=LOCMEM_BACKEND if quiet else settings.EMAIL_BACKEND):
            sent_before = len(getattr(mail, "outbox", []))
            seed = seed_demo()
            submissions = seed_demo_review(seed)
            submissions.update(seed_demo_publications(seed))
            accounts = seed_demo_accounts(seed.users)
            sent = len(getattr(mail, "outbox", [])) - sent_before
            if quiet and sent:
                del mail.outbox[sent_before:]
        self.stdout.write(
            self.style.SUCCESS(
                f"Demo data ready: {len(seed.organisations)} organisations, {len(seed.users)} users, "
                f"{len(seed.systems)} systems, {len(submissions)} submissions"
                + (f" ({sent} notification e-mails sent while seeding)." if sent else ".")
            )
        )
        for title, submission in submissions.items():
            self.stdout.write(f"  #{submission.pk:<4} {submission.status:<18} {title}")
        self.stdout.write("Demo logins (local demo only):")
        for spec in DEMO_USERS:
            self.stdout.write(f"  {spec.username:<16} password: {spec.password:<22} {spec.description}")
        secrets = [name for name in ("demo-chair", "demo-auditor") if name in accounts]
        if secrets:
            self.stdout.write(
                "Two-factor sign-in (required for the chair and auditors): after the password, type the code of an "
                "authenticator app holding the secret below, or the one `manage.py totp_code USERNAME` prints:"
            )
            for name in secrets:
                self.stdout.write(f"  {name:<16} secret:   {accounts[name]}")
        if "invitation" in accounts:
            site = settings.PORTAL_SITE_URL.rstrip("/")
            self.stdout.write(
                f"Pending invitation (new-member@example.com, AcmeCompute): {site}{accounts['invitation']}"
            )
