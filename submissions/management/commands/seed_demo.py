"""manage.py seed_demo: demo organisations, users (printed passwords), systems, a submission in every state of
review and audit (review.demo) and published, annotated, retracted and cohort-bound results (leaderboard.demo).

Run again, it never stops on a demo someone used: the audit log records when seeding started and finished and
which demo data it was (DEMO_DATA_VERSION).

- finished, same data: the database is reused as it is (what you did in the demo is kept); nothing is seeded;
- started, never finished (interrupted): seeding resumes where it stopped (every step is skipped once taken);
- made by an older demo (another data version, or no record at all), or `--reset`: the zero-config SQLite demo
  database under var/ is rebuilt (deleted with its uploads, migrated, seeded). Any other database is left alone
  and the command says what to do.

It prints a short summary (logins, two-factor secrets, links on PORTAL_SITE_URL), not the workers' log lines.
"""

from __future__ import annotations

import logging
import shutil
from contextlib import contextmanager
from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core import mail
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError
from django.db import connection, transaction
from django.test.utils import override_settings
from django.urls import reverse

from accounts.demo import seed_demo_accounts
from audit.models import AuditEvent
from audit.services import audit_event_record
from leaderboard.demo import seed_demo_publications
from leaderboard.models import EvidencePack
from leaderboard.publishing.evidence import public_keys
from review.demo import Z9_TITLE, seed_demo_review, seed_demo_z9
from spotchecks.demo import seed_demo_spotcheck
from submissions.demo import DEMO_USERS, seed_demo
from submissions.models import Submission

CONSOLE_BACKEND = "django.core.mail.backends.console.EmailBackend"
LOCMEM_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
# Bump when the demo's data or story changes: a database seeded with another version is rebuilt.
DEMO_DATA_VERSION = "2026-12-02 real extension runs, Nimbus NB-2, preview rule set, Z9 seeded last, r48 label, NB-2 spot-check, per-point evidence"
STARTED, FINISHED = "demo.seeding_started", "demo.seeding_finished"


def demo_seed_state() -> str:
    """'new' (no demo yet), 'finished', 'interrupted' (this version's seeding started, never finished) or
    'older' (seeded by another demo data version, or by a portal that kept no record)."""
    events = AuditEvent.objects.filter(action__in=(STARTED, FINISHED)).order_by("-pk")
    latest = {}
    for event in events:
        latest.setdefault(event.action, event)
    started = latest.get(STARTED)
    if started is None:
        has_demo = get_user_model().objects.filter(username__in=[u.username for u in DEMO_USERS]).exists()
        return "older" if has_demo else "new"
    if (started.data or {}).get("data_version") != DEMO_DATA_VERSION:
        return "older"
    finished = latest.get(FINISHED)
    return "finished" if finished is not None and finished.pk > started.pk else "interrupted"


def _record(action: str) -> None:
    with transaction.atomic():
        audit_event_record(actor=None, action=action, data={"data_version": DEMO_DATA_VERSION})


@contextmanager
def _quiet_logs(verbosity: int):
    """The in-process checks log a few lines per task (about a hundred while seeding): hide INFO unless -v 2."""
    if verbosity > 1:
        yield
        return
    # kombu warns once that the in-process broker has no host name: nothing for a demo's user to act on.
    quiet = {
        "": logging.WARNING,
        "celery": logging.WARNING,
        "celery.app.trace": logging.WARNING,
        "kombu": logging.ERROR,
    }
    loggers = [logging.getLogger(name) for name in quiet]
    levels = [logger.level for logger in loggers]
    for logger, level in zip(loggers, quiet.values(), strict=True):
        logger.setLevel(level)
    try:
        yield
    finally:
        for logger, level in zip(loggers, levels, strict=True):
            logger.setLevel(level)


def _demo_database_file() -> Path | None:
    """The SQLite file of the zero-config demo (under PORTAL_VAR_DIR), or None for any other database."""
    if connection.vendor != "sqlite":
        return None
    name = Path(str(connection.settings_dict["NAME"]))
    return name if name.is_relative_to(Path(settings.VAR_DIR)) else None


class Command(BaseCommand):
    help = (
        "Create the demo organisations, users, systems and submissions in every state; run again, reuse the "
        "seeded demo (or resume an interrupted seeding, or rebuild one an older demo made). --reset rebuilds it."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--reset",
            action="store_true",
            help="Delete the SQLite demo database under var/ (and its uploads) and seed a new one.",
        )

    def handle(self, *args, **options):
        verbosity = options["verbosity"]
        state = "older" if options["reset"] else demo_seed_state()
        if state == "older":
            self._rebuild(reason="--reset" if options["reset"] else "it was seeded by an older demo")
            state = "new"
        if state == "finished":
            self.stdout.write(
                "Demo database reused as it is (already seeded; what was done in it is kept). "
                "To start afresh: DEMO_RESET=1 make demo (manage.py seed_demo --reset)."
            )
            seed = None
        else:
            if state == "interrupted":
                self.stdout.write("Resuming the demo seeding that was interrupted.")
            seed = self._seed(verbosity)
        self._summary(seed)

    def _rebuild(self, *, reason: str) -> None:
        database = _demo_database_file()
        if database is None:
            raise CommandError(
                f"This database holds demo data that cannot be reused ({reason}), and it is not the zero-config "
                "demo database under var/, so seed_demo does not delete it: drop and re-create it, migrate, then "
                "run seed_demo again."
            )
        shown = (
            database.relative_to(settings.BASE_DIR)
            if database.is_relative_to(settings.BASE_DIR)
            else database
        )
        if database.exists():
            self.stdout.write(f"Rebuilding the demo database {shown} ({reason}).")
        connection.close()
        for path in (database, Path(f"{database}-wal"), Path(f"{database}-shm"), Path(f"{database}-journal")):
            path.unlink(missing_ok=True)
        # Uploads, cached checks and audit checkpoints belong to the deleted database.
        for folder in (settings.MEDIA_ROOT, settings.PORTAL_CHECK_CACHE_DIR, _checkpoint_dir()):
            if folder and Path(folder).is_relative_to(Path(settings.VAR_DIR)):
                shutil.rmtree(folder, ignore_errors=True)
        call_command("migrate", interactive=False, verbosity=0)

    def _seed(self, verbosity: int):
        if connection.vendor == "sqlite":
            # The zero-config demo database: a few hundred small commits, each fsynced by default, would be most of
            # the seeding time. A crash mid-seed loses at most a demo database, and seed_demo resumes anyway.
            with connection.cursor() as cursor:
                cursor.execute("PRAGMA synchronous=OFF")
        _record(STARTED)
        # The demo prints e-mails to the console; the dozens the seeding sends would bury the logins: count them.
        quiet = settings.EMAIL_BACKEND == CONSOLE_BACKEND
        with (
            override_settings(EMAIL_BACKEND=LOCMEM_BACKEND if quiet else settings.EMAIL_BACKEND),
            _quiet_logs(verbosity),
        ):
            sent_before = len(getattr(mail, "outbox", []))
            seed = seed_demo()
            submissions = seed_demo_review(seed)
            submissions.update(seed_demo_publications(seed))
            seed_demo_spotcheck(seed.users)  # NB-2's endpoint and a finished spot-check of its c2 point
            # Last: its stand-in runs must not make any published result's check say raw-log-reused.
            submissions[Z9_TITLE] = seed_demo_z9(seed)
            seed.accounts = seed_demo_accounts(seed.users)
            sent = len(getattr(mail, "outbox", [])) - sent_before
            if quiet and sent:
                del mail.outbox[sent_before:]
        _record(FINISHED)
        self.stdout.write(
            self.style.SUCCESS(
                f"Demo data ready: {len(seed.organisations)} organisations, {len(seed.users)} users, "
                f"{len(seed.systems)} systems, {len(submissions)} submissions"
                + (f" ({sent} notification e-mails sent while seeding)." if sent else ".")
            )
        )
        return seed

    def _summary(self, seed) -> None:
        site = settings.PORTAL_SITE_URL.rstrip("/")
        users = {
            u.username: u
            for u in get_user_model().objects.filter(username__in=[s.username for s in DEMO_USERS])
        }
        accounts = seed.accounts if seed is not None else seed_demo_accounts(users)
        demo = Submission.objects.filter(title__startswith="Demo: ").order_by("pk")
        self.stdout.write("Demo submissions (every state of the process):")
        for submission in list(demo) + list(Submission.objects.filter(system__name="Unreleased-Z9")):
            link = site + reverse("submissions:detail", args=[submission.pk])
            self.stdout.write(f"  {submission.status:<18} {link:<44} {submission.title}")
        self.stdout.write(f"Public leaderboard: {site}{reverse('leaderboard:index')}")
        self._evidence_summary(site)
        self.stdout.write("Demo logins (local demo only):")
        for spec in DEMO_USERS:
            self.stdout.write(f"  {spec.username:<16} password: {spec.password:<22} {spec.description}")
        secrets = [name for name in ("demo-chair", "demo-auditor") if name in accounts]
        if secrets:
            self.stdout.write(
                "Two-factor code for the chair and the auditor: an authenticator app with the secret below, or "
                "`manage.py totp_code USERNAME`:"
            )
            for name in secrets:
                self.stdout.write(f"  {name:<16} secret:   {accounts[name]}")
        self.stdout.write(f"API tokens for `portal submit`: sign in, then {site}{reverse('accounts:tokens')}")
        if "invitation" in accounts:
            self.stdout.write(
                f"Pending invitation (new-member@example.com, AcmeCompute): {site}{accounts['invitation']}"
            )

    def _evidence_summary(self, site: str) -> None:
        """Where the demo's evidence packs and public log are, and the key that signs them (docs/evidence.md)."""
        pack = EvidencePack.objects.filter(revision__isnull=False).order_by("leaf__index").first()
        key_source = (
            "PORTAL_EVIDENCE_KEY" if settings.PORTAL_EVIDENCE_KEY else str(settings.PORTAL_EVIDENCE_KEY_PATH)
        )
        self.stdout.write(f"Evidence packs signed by {public_keys()[0]} (private key: {key_source})")
        self.stdout.write(f"  public log: {site}/log/checkpoint, keys: {site}/log/keys")
        if pack is not None:
            self.stdout.write(
                f"  a pack: {site}/results/{pack.publication.public_id}/revisions/{pack.revision.number}/"
                "evidence-pack/ (check it with `portal verify PACK --key KEY`)"
            )


def _checkpoint_dir():
    """The folder of the file-system audit checkpoints (None when they go to S3)."""
    options = settings.STORAGES.get("audit_checkpoints", {}).get("OPTIONS", {})
    return options.get("location")
