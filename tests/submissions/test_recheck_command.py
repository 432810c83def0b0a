"""The chair's bulk re-check after a checker or rule-set change."""

from __future__ import annotations

import pytest
from django.core.management import CommandError, call_command

from audit.models import AuditEvent
from checker.version import __version__ as checker_version
from submissions.models import CheckRun, Submission, SubmissionVersion
from tests.states import put
from tests.submissions.support import make_catalog

pytestmark = pytest.mark.django_db


@pytest.fixture
def catalog(role_users):
    return make_catalog(role_users["organisations"]["acme"])


def _submission_with_run(
    role_users, catalog, *, checker: str, status: str = "submitted"
) -> SubmissionVersion:
    acme = role_users["organisations"]["acme"]
    benchmark, system = catalog
    submission = Submission.objects.create(
        organisation=acme, system=system, benchmark=benchmark, created_by=role_users["submitter"]
    )
    put(Submission.objects.filter(pk=submission.pk), status)
    version = SubmissionVersion.objects.create(
        submission=submission,
        number=1,
        kind="bundle",
        size_bytes=1,
        sha256="ab" * 32,
        uploader=role_users["submitter"],
    )
    put(
        CheckRun.objects.create(version=version, checker_version=checker, ruleset=benchmark.ruleset_version),
        CheckRun.Status.PASSED,
    )
    return version


def test_only_versions_checked_by_another_checker_are_requeued(
    role_users, catalog, django_capture_on_commit_callbacks
):
    old = _submission_with_run(role_users, catalog, checker="0.0.1")
    fresh = _submission_with_run(role_users, catalog, checker=checker_version)
    with django_capture_on_commit_callbacks(execute=False):
        call_command("recheck_versions", "--as", "chair")
    assert (
        old.check_runs.count() == 2
        and old.check_runs.order_by("-pk").first().status == CheckRun.Status.QUEUED
    )
    assert fresh.check_runs.count() == 1
    assert AuditEvent.objects.filter(action="check.requeued").count() == 1


def test_dry_run_changes_nothing_and_only_the_chair_may_run_it(role_users, catalog, capsys):
    version = _submission_with_run(role_users, catalog, checker="0.0.1")
    call_command("recheck_versions", "--as", "chair", "--dry-run")
    assert "would re-check 1 version(s)" in capsys.readouterr().out
    assert version.check_runs.count() == 1
    with pytest.raises(CommandError, match="not the chair"):
        call_command("recheck_versions", "--as", "submitter")
    with pytest.raises(CommandError, match="unknown state"):
        call_command("recheck_versions", "--as", "chair", "--status", "nonsense")
