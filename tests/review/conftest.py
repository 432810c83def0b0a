"""A submission in review with real run archives stored, and one user per actor of the review pages."""

from __future__ import annotations

import pytest

from review.models import Comment, ReviewAssignment
from tests.factories import (
    CommentFactory,
    ConflictFactory,
    MembershipFactory,
    OrganisationFactory,
    ReviewAssignmentFactory,
    SubmissionFactory,
    SystemFactory,
    UserFactory,
)

HIDDEN_NAME = "Unreleased-Z9"


@pytest.fixture
def review_world(role_users, storage_dir):
    """acme's `Unreleased-Z9` in review (frozen version: the sample run archives), its thread at every
    visibility level with an open objection, and a user per actor."""
    acme = role_users["organisations"]["acme"]
    nimbus = role_users["organisations"]["nimbus"]
    submission = SubmissionFactory(
        in_review=True,
        system=SystemFactory(organisation=acme, name=HIDDEN_NAME),
        frozen_version__sample_run_archives=True,
    )
    assigned = role_users["reviewer"]
    assignment = ReviewAssignmentFactory(
        submission=submission, reviewer=assigned, organisation=nimbus, accepted=True
    )
    third = OrganisationFactory(name="ThirdOrg", slug="thirdorg")
    unassigned = UserFactory(username="unassigned")
    MembershipFactory(user=unassigned, organisation=third, role="reviewer")
    rival = OrganisationFactory(name="RivalCorp", slug="rivalcorp")
    conflicted = UserFactory(username="conflicted")
    MembershipFactory(user=conflicted, organisation=rival, role="reviewer")
    ConflictFactory(organisation=acme, other=rival)
    # assigned before the conflict was declared: the conflict hides the submission at once
    ReviewAssignment.objects.create(
        submission=submission, reviewer=conflicted, organisation=rival, due_at=assignment.due_at
    )
    other_member = UserFactory(username="other-member")
    MembershipFactory(user=other_member, organisation=nimbus, role="submitter")
    version = submission.submitted_version
    everyone = CommentFactory(submission=submission, version=version, author=assigned, body="Comment for all")
    reviewers_only = CommentFactory(
        submission=submission,
        version=version,
        author=assigned,
        visibility=Comment.Visibility.REVIEWERS,
        body="Between reviewers only",
    )
    auditors_only = CommentFactory(
        submission=submission,
        version=version,
        author=role_users["auditor"],
        visibility=Comment.Visibility.AUDITORS,
        body="Auditors only note",
    )
    objection = CommentFactory(
        submission=submission,
        version=version,
        author=assigned,
        objection=True,
        body="The c16 warm-up looks too short",
        file="AX-8000_c16.tar.gz:c16/events.jsonl",
        line=12,
    )
    return {
        **role_users,
        "submission": submission,
        "version": version,
        "assignment": assignment,
        "assigned": assigned,
        "unassigned": unassigned,
        "conflicted": conflicted,
        "other_member": other_member,
        "comments": {
            "all": everyone,
            "reviewers": reviewers_only,
            "auditors": auditors_only,
            "objection": objection,
        },
    }
