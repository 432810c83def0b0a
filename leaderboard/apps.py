"""App config for the leaderboard."""

from django.apps import AppConfig


class LeaderboardConfig(AppConfig):
    name = "leaderboard"
    verbose_name = "Leaderboard"

    def ready(self) -> None:
        # A re-check's report is written when its last run ends (submissions.signals says why this is a signal).
        from leaderboard.publishing.rechecks import recheck_run_ended
        from submissions.signals import check_run_ended

        check_run_ended.connect(recheck_run_ended, dispatch_uid="leaderboard-recheck-report-on-run-end")
        # The workflow tells the board what the public sees changed (leaderboard.publishing.signals says why this
        # is a signal): a new cache generation first, then the goodput tables of the new snapshot.
        from leaderboard.board.cache import public_changed_received
        from leaderboard.publishing.signals import public_changed
        from leaderboard.tasks import goodput_tables_schedule

        public_changed.connect(public_changed_received, dispatch_uid="leaderboard-public-cache-bump")
        public_changed.connect(goodput_tables_schedule, dispatch_uid="leaderboard-goodput-tables-schedule")

        # The check's raw-log-published rule names the result by its public id (submissions.signals says why).
        from leaderboard.board.selectors import public_ids_of_submissions
        from submissions.signals import published_as

        published_as.connect(public_ids_of_submissions, dispatch_uid="leaderboard-public-ids")
