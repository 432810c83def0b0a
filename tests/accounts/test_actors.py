"""The owning organisation the shared actors judge by: the row's submission's, never a challenger's or a reviewer's
own organisation, and never through a reverse relation (which would cost a query)."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from accounts.actors import owner_organisation_id
from leaderboard.models import Challenge, Publication
from previews.models import Preview
from review.models import ReviewAssignment, Waiver
from submissions.models import CheckRun, Submission, SubmissionVersion, Upload


@pytest.mark.django_db  # to count queries (none is expected)
def test_every_kind_of_row_is_owned_by_its_submissions_organisation_without_a_query():
    submission = Submission(organisation_id=3)
    version = SubmissionVersion(submission=submission)
    rows = [
        submission,
        Upload(submission=submission),
        CheckRun(version=version),
        Waiver(version=version),
        ReviewAssignment(submission=submission, organisation_id=8),  # the reviewer's organisation
        Challenge(publication=Publication(submission=submission), organisation_id=9),  # the challenger's
    ]
    with CaptureQueriesContext(connection) as queries:
        owners = [owner_organisation_id(row) for row in rows]
    assert owners == [3] * len(rows) and not queries.captured_queries
    assert owner_organisation_id(Preview(organisation_id=4)) == 4
    assert owner_organisation_id(object()) is None
