"""What submissions/ announces to the layers above it, sent by the check pipeline inside its transaction.

`check_run_ended(check_run)`: a check run reached a final state (passed, failed or error). submissions/ may not
import leaderboard/, and a re-check's report is leaderboard's (leaderboard.publishing.rechecks): it listens and writes the
report of a campaign whose last run this was, after the commit. The signal carries the fact only.

`public_ids_of(submission_ids)`: the public id (EP-...) of the result each published submission made (a result's
first submission, or one of its published extensions). The public id is leaderboard's; the check's
`raw-log-published` rule needs it to name the result, so leaderboard answers this signal."""

from django.dispatch import Signal

check_run_ended = Signal()  # kwargs: check_run

published_as = Signal()  # kwargs: submission_ids; a receiver returns {submission id: public id}


def public_ids_of(submission_ids: list[int]) -> dict[int, str]:
    """What leaderboard answers to `published_as` (empty where nothing listens)."""
    found: dict[int, str] = {}
    if not submission_ids:
        return found
    for _, answer in published_as.send(sender=None, submission_ids=submission_ids):
        found.update(answer or {})
    return found
