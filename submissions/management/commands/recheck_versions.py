"""manage.py recheck_versions: the chair re-checks versions after a checker or rule-set change."""

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from accounts.selectors import user_is_chair
from checker.version import __version__ as checker_version
from portal.errors import NotAllowedError
from submissions.checks.queue import check_run_requeue
from submissions.models import CheckRun, Submission, SubmissionVersion


class Command(BaseCommand):
    help = (
        "Queue a new check run (history kept) for the latest version of every submission whose latest "
        "run was made by another checker version or rule set. Acts as the given chair (audited)."
    )

    def add_arguments(self, parser):
        parser.add_argument("--as", dest="chair", required=True, metavar="USERNAME", help="the chair acting")
        parser.add_argument(
            "--status",
            action="append",
            default=[],
            metavar="STATUS",
            help="only submissions in this state (repeatable; default: every state but withdrawn)",
        )
        parser.add_argument(
            "--all",
            action="store_true",
            help="re-check even versions already checked by "
            "this checker version with their benchmark's current rule set",
        )
        parser.add_argument("--dry-run", action="store_true", help="list what would be re-checked")

    def handle(self, *args, **options):

        try:
            chair = get_user_model().objects.get(username=options["chair"])
        except get_user_model().DoesNotExist:
            raise CommandError(f"no user {options['chair']!r}", returncode=2) from None
        if not user_is_chair(chair):
            raise CommandError(
                f"{chair.username} is not the chair; only the chair re-checks versions", returncode=2
            )
        valid = {s.value for s in Submission.Status}
        wanted = set(options["status"]) or valid - {Submission.Status.WITHDRAWN}
        unknown = wanted - valid
        if unknown:
            raise CommandError(
                f"unknown state(s): {', '.join(sorted(unknown))}; use {', '.join(sorted(valid))}",
                returncode=2,
            )
        queued = 0
        for submission in (
            Submission.objects.filter(Submission.states.q_any(wanted))
            .select_related("benchmark")
            .order_by("pk")
        ):
            version = SubmissionVersion.objects.filter(submission=submission).order_by("-number").first()
            if version is None:
                continue
            latest = (
                CheckRun.objects.filter(version=version, purpose=CheckRun.Purpose.SUBMISSION)
                .order_by("-pk")
                .first()
            )
            current = (
                latest is not None
                and latest.checker_version == checker_version
                and latest.ruleset == submission.benchmark.ruleset_version
            )
            if current and not options["all"]:
                continue
            was = f"{latest.checker_version or '?'} / {latest.ruleset}" if latest else "never checked"
            self.stdout.write(
                f"submission #{submission.pk} v{version.number}: {was} -> {checker_version} / "
                f"{submission.benchmark.ruleset_version}"
            )
            if not options["dry_run"]:
                try:
                    check_run_requeue(version=version, actor=chair)
                except NotAllowedError as exc:
                    raise CommandError(str(exc), returncode=2) from None
            queued += 1
        verb = "would re-check" if options["dry_run"] else "queued re-checks for"
        self.stdout.write(self.style.SUCCESS(f"{verb} {queued} version(s)."))
