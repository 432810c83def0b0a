"""App config for the leaderboard."""

from django.apps import AppConfig


class LeaderboardConfig(AppConfig):
    name = "leaderboard"
    verbose_name = "Leaderboard"

    def ready(self) -> None:
        # A re-check's report is written when its last run ends (submissions.signals says why this is a signal).
        from leaderboard.rechecks import recheck_run_ended
        from submissions.signals import check_run_ended

        check_run_ended.connect(recheck_run_ended, dispatch_uid="leaderboard-recheck-report-on-run-end")
        # The check's raw-log-published rule names the result by its public id (submissions.signals says why).
        from leaderboard.selectors import public_ids_of_submissions
        from submissions.signals import published_as

        published_as.connect(public_ids_of_submissions, dispatch_uid="leaderboard-public-ids")
