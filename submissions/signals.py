"""What submissions/ announces to the layers above it, sent by the check pipeline inside its transaction.

`check_run_ended(check_run)`: a check run reached a final state (passed, failed or error). submissions/ may not
import leaderboard/, and a re-check's report is leaderboard's (leaderboard.publishing.rechecks): it listens and writes the
report of a campaign whose last run this was, after the commit. The signal carries the fact only."""

from django.dispatch import Signal

check_run_ended = Signal()  # kwargs: check_run
