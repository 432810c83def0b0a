"""manage.py backfill_point_samples: keep the per-sample arrays of published points checked before they were kept."""

from django.core.management.base import BaseCommand

from leaderboard.board.goodput.samples import published_check_runs


class Command(BaseCommand):
    help = (
        "Replay the raw logs of every published result's points that have no per-sample arrays yet (checked "
        "before the portal kept them), store the arrays (.npz) and link them to the points, so the SLO finder "
        "can answer per-request targets for them. Metrics and findings are not changed; safe to run again."
    )

    def add_arguments(self, parser):
        parser.add_argument("--dry-run", action="store_true", help="list the check runs that lack arrays")

    def handle(self, *args, **options):
        from submissions.checks.samples import point_samples_backfill
        from submissions.models import PointMetric

        runs = published_check_runs()
        stored = 0
        for check_run in runs:
            lacking = PointMetric.objects.filter(
                check_run=check_run, samples_key="", recomputed__isnull=False
            ).count()
            if not lacking:
                continue
            if options["dry_run"]:
                self.stdout.write(f"check run #{check_run.pk}: {lacking} point(s) without per-sample arrays")
                continue
            got = point_samples_backfill(check_run=check_run)
            stored += got
            self.stdout.write(f"check run #{check_run.pk}: stored the arrays of {got} of {lacking} point(s)")
        self.stdout.write(f"{stored} point(s) got per-sample arrays ({len(runs)} published check runs).")
        if stored:
            from leaderboard.board.cache import public_cache_bump

            public_cache_bump()
