"""A new version goes to a draft, or to a submission the reviewers sent back for changes; nowhere else."""

import pytest

from portal.errors import ConflictError
from submissions.uploads import upload_start
from tests.factories import SubmissionFactory, submitter_of

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    "status, allowed",
    [("draft", True), ("changes_requested", True), ("in_review", False), ("peer_reviewed", False)],
)
def test_uploads_open_for_drafts_and_changes_requested_only(status, allowed, storage_dir):
    submission = SubmissionFactory(status=status)
    start = dict(
        actor=submitter_of(submission.organisation),
        submission=submission,
        filename="v2.tar.gz",
        size=10,
        sha256="ab" * 32,
    )
    if allowed:
        assert upload_start(**start).submission_id == submission.pk
    else:
        with pytest.raises(ConflictError) as refused:
            upload_start(**start)
        assert refused.value.code == "submission-not-draft"
