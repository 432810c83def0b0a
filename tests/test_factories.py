"""Every model has a factory (walking django.apps), every factory builds a row that passes full_clean(), and
the states the factories claim are the states the portal's own code sees."""

from __future__ import annotations

import inspect

import factory
import pytest
from django.apps import apps
from django.core.files.storage import default_storage

from access.visibility import submissions_visible_to
from audit.models import AuditEvent
from review.lifecycle import allowed_actions
from submissions.models import CheckRun, Submission, SubmissionVersion, Upload
from submissions.selectors import check_run_latest, version_latest
from submissions.storage import storage_iter_chunks
from tests import factories as f
from tests.factories import submission_take

# Models that need no factory: Django's own bookkeeping, which the portal never creates in a test.
NO_FACTORY = {
    "admin.LogEntry": "written by the Django admin itself",
    "auth.Group": "the portal's roles are Membership and GlobalRole, not groups",
    "auth.Permission": "created by migrations",
    "contenttypes.ContentType": "created by migrations",
    "sessions.Session": "written by the session middleware on login",
}


def _factories() -> dict[str, type[factory.Factory]]:
    found = {}
    for _, cls in inspect.getmembers(f, inspect.isclass):
        if issubclass(cls, factory.Factory) and cls._meta.model is not None and not cls._meta.abstract:
            found.setdefault(cls._meta.model._meta.label, cls)
    return found


FACTORIES = _factories()


def test_every_model_has_a_factory():
    labels = {model._meta.label for model in apps.get_models()}
    missing = sorted(labels - set(FACTORIES) - set(NO_FACTORY))
    assert not missing, f"models without a factory in tests/factories.py: {missing}"
    stale = sorted(set(NO_FACTORY) - labels)
    assert not stale, f"NO_FACTORY names models that no longer exist: {stale}"


@pytest.mark.django_db
@pytest.mark.parametrize("label", sorted(FACTORIES))
def test_each_factory_creates_a_valid_row(label, storage_dir):
    obj = FACTORIES[label]()
    pk = getattr(obj, obj._meta.pk.attname)  # not obj.pk: DRF's TokenProxy.pk is the user's id
    assert pk is not None
    type(obj).objects.get(**{obj._meta.pk.attname: pk}).full_clean()


@pytest.mark.django_db
@pytest.mark.parametrize("status", Submission.Status.values)
def test_a_submission_in_each_state_has_what_that_state_implies(status, storage_dir):
    trait = f.SubmissionFactory(**{status: True})
    by_status = f.SubmissionFactory(status=status)
    for submission in (trait, by_status):
        submission.refresh_from_db()
        submission.full_clean()
        assert submission.status == status
        assert submission.created_by.memberships.get().organisation == submission.organisation
        assert submission.system.organisation == submission.organisation
        if status == Submission.Status.DRAFT:
            assert submission.submitted_version is None and submission.status_changed_at is None
            actions = {a.action: a.blocked_code for a in allowed_actions(submission.created_by, submission)}
            assert actions == {"submit": "check-not-passed", "withdraw": ""}  # no version yet
            continue
        frozen = submission.submitted_version
        assert frozen is not None and frozen == version_latest(submission)
        assert check_run_latest(frozen).status == CheckRun.Status.PASSED
        assert submission.status_changed_at is not None
        assert bool(submission.status_reason) == (status in Submission.TERMINAL_STATUSES)
    # Both submissions are what the visibility table says for this state: the submitter's own organisation
    # always sees them, an anonymous visitor only published ones.
    visible = set(submissions_visible_to(None).filter(pk__in=[trait.pk, by_status.pk]))
    assert visible == ({trait, by_status} if status == Submission.Status.PUBLISHED else set())


@pytest.mark.django_db
def test_a_submitted_submission_from_the_factory_moves_through_the_lifecycle(storage_dir):
    submission = f.SubmissionFactory(submitted=True)
    withdrawn = submission_take(submission, "withdraw", submission.created_by, reason="a newer driver")
    assert withdrawn.status == Submission.Status.WITHDRAWN
    assert AuditEvent.objects.filter(action="submission.withdrawn", object_id=str(submission.pk)).count() == 1


@pytest.mark.django_db
def test_version_files_are_really_in_storage(storage_dir):
    version = f.SubmissionVersionFactory(sample_run_archives=True, check_run=CheckRun.Status.RUNNING)
    assert version.kind == SubmissionVersion.Kind.RUN_ARCHIVES and version.files.count() == 7
    assert [vf.original_filename for vf in version.files.all()] == [p.name for p in f.RUN_ARCHIVES]
    for stored, path in zip(version.files.all(), f.RUN_ARCHIVES, strict=True):
        assert b"".join(storage_iter_chunks(stored.storage_key)) == path.read_bytes()
        assert (storage_dir / stored.storage_key).is_file()
    assert version.size_bytes == sum(p.stat().st_size for p in f.RUN_ARCHIVES)
    assert version.check_runs.get().status == CheckRun.Status.RUNNING


@pytest.mark.django_db
@pytest.mark.parametrize("status", CheckRun.Status.values)
def test_a_check_run_in_each_status_has_what_that_status_implies(status, storage_dir):
    run = f.CheckRunFactory(status=status)
    run.refresh_from_db()
    finished = status in CheckRun.FINISHED_STATUSES
    assert (run.finished_at is not None) == finished
    assert (run.started_at is not None) == (status != CheckRun.Status.QUEUED)
    assert bool(run.error_message) == (status == CheckRun.Status.ERROR)
    errors = run.findings.filter(severity="error").count()
    assert (errors > 0) == (status == CheckRun.Status.FAILED)
    if status in (CheckRun.Status.PASSED, CheckRun.Status.FAILED):
        assert run.counts["error"] == errors and run.point_metrics.count() == 1


@pytest.mark.django_db
def test_check_run_findings_and_counts_follow_the_arguments(storage_dir):
    run = f.CheckRunFactory(
        failed=True,
        findings=["accuracy-sample-count", {"rule": "point-duration", "severity": "warning"}],
        point_metrics=[{"concurrency": 1}, {"concurrency": 2}],
    )
    assert sorted(run.findings.values_list("rule", "severity")) == [
        ("accuracy-sample-count", "error"),
        ("point-duration", "warning"),
    ]
    assert run.counts == {"error": 1, "warning": 1, "info": 0}
    assert sorted(run.point_metrics.values_list("key", flat=True)) == [
        f"{run.version.submission.system.name}/{run.version.submission.benchmark.model_id}/r{c}"
        for c in (1, 2)
    ]


@pytest.mark.django_db
def test_uploads_in_each_state_and_their_parts(storage_dir):
    verified = f.UploadFactory(verified=True)
    assert default_storage.exists(verified.storage_key)
    done = f.UploadFactory(done=True)
    assert done.status == Upload.Status.DONE and done.version.submission == done.submission
    assert done.version.files.get().sha256 == done.sha256
    part = f.UploadPartFactory(upload=f.UploadFactory())
    assert b"".join(storage_iter_chunks(part.storage_key)) and part.index == 0
    assert f.UploadPartFactory(upload=part.upload).index == 1


@pytest.mark.django_db
def test_audit_events_go_through_the_service_and_chain():
    first, second = f.AuditEventFactory(), f.AuditEventFactory(action="test.again")
    assert second.sequence == first.sequence + 1 and second.prev_hash == first.hash
