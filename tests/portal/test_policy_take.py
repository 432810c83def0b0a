"""`Policy.take`, the one door for a state change (issue 36): who may, in which state, a compare-and-set and the
audit event the table names, in one call; `Policy.create` for a row born in a state. Tried on real tables."""

from __future__ import annotations

import pytest

from audit.models import AuditEvent
from portal.errors import ConflictError, NotAllowedError
from review.lifecycle import OBJECTION, WAIVER
from review.models import Comment, Waiver
from submissions.models import Upload
from submissions.workflow import UPLOAD
from tests.factories import GlobalRoleFactory, UploadFactory, UserFactory, WaiverFactory

pytestmark = pytest.mark.django_db


def _events(obj):
    return list(
        AuditEvent.objects.filter(object_id=str(obj.pk)).order_by("sequence").values_list("action", "data")
    )


@pytest.fixture
def chair():
    return GlobalRoleFactory(role="chair").user


def test_take_moves_the_row_writes_beside_and_records_the_tables_event(chair):
    waiver = WaiverFactory()
    assert WAIVER.take(chair, waiver, "grant", reason=" short runs by design ", fields={"decided_by": chair})
    stored = Waiver.objects.get(pk=waiver.pk)
    assert (stored.status, stored.decided_by_id) == ("granted", chair.pk)
    assert waiver.status == "granted"  # the caller's object follows
    [(action, data)] = _events(waiver)
    assert action == "waiver.granted"
    assert (
        data["from"] == "requested" and data["to"] == "granted" and data["reason"] == "short runs by design"
    )


def test_a_lost_race_is_a_conflict_and_writes_nothing(chair):
    waiver = WaiverFactory()
    seen = Waiver.objects.get(pk=waiver.pk)
    WAIVER.take(chair, waiver, "refuse", reason="no")
    with pytest.raises(ConflictError) as lost:
        WAIVER.take(chair, seen, "grant", reason="yes")  # it still looks requested to this caller
    assert lost.value.code == "state-conflict" and "changed meanwhile" in lost.value.detail
    assert Waiver.objects.get(pk=waiver.pk).status == "refused"
    assert [action for action, _ in _events(waiver)] == ["waiver.refused"]


def test_quiet_answers_false_for_a_worker_that_lost_the_race(chair):
    waiver = WaiverFactory()
    seen = Waiver.objects.get(pk=waiver.pk)
    WAIVER.take(chair, waiver, "grant", reason="yes")
    assert WAIVER.take(chair, seen, "refuse", reason="no", quiet=True) is False
    assert [action for action, _ in _events(waiver)] == ["waiver.granted"]


def test_someone_the_table_does_not_name_is_refused_and_nothing_is_written():
    waiver = WaiverFactory()
    with pytest.raises(NotAllowedError):
        WAIVER.take(UserFactory(), waiver, "grant", reason="because")
    assert Waiver.objects.get(pk=waiver.pk).status == "requested" and _events(waiver) == []


def test_a_queryset_narrows_the_compare_and_set():
    upload = UploadFactory(open=True)
    narrowed = Upload.objects.filter(filename="not this one")
    assert UPLOAD.take(None, upload, "abort", reason="idle", queryset=narrowed, quiet=True) is False
    assert Upload.objects.get(pk=upload.pk).status == "open"
    assert UPLOAD.take(None, upload, "abort", reason="idle", event="upload.expired")
    assert Upload.objects.get(pk=upload.pk).status == "aborted"
    assert [action for action, _ in _events(upload)] == ["upload.expired"]


def test_a_row_recorded_by_its_steps_own_event_writes_none():
    upload = UploadFactory(verified=True)
    assert not UPLOAD.rule("join_version").audited
    UPLOAD.take(upload.submission.created_by, upload, "join_version")
    assert Upload.objects.get(pk=upload.pk).status == "done" and _events(upload) == []


def test_create_brings_an_objection_into_being_open_with_its_event(chair):
    waiver = WaiverFactory()
    submission = waiver.version.submission
    comment = Comment(
        submission=submission,
        version=submission.submitted_version,
        author=chair,
        kind="objection",
        body="Why?",
    )
    OBJECTION.create(chair, comment, "raise", data={"submission": submission.pk})
    assert Comment.objects.get(pk=comment.pk).objection_status == "open"
    [(action, data)] = _events(comment)
    assert action == "review.objection_raised" and data["to"] == "open"


def test_create_refuses_a_row_that_moves_and_take_a_row_that_creates(chair):
    with pytest.raises(ValueError):
        OBJECTION.create(chair, Comment(), "resolve")
    with pytest.raises(ValueError):
        OBJECTION.take(chair, Comment(), "raise")


def test_every_row_names_an_event_the_audit_log_accepts():
    """Every audited row of every table writes an action the audit log takes (`<object>.<what>`), so no take
    fails at its last step."""
    import re

    from portal.policy import registered_policies

    names = {
        f"{policy.name}.{rule.action}": policy.event_of(rule)
        for policy in registered_policies()
        for rule in policy.rules
        if rule.audited
    }
    bad = {
        row: event
        for row, event in names.items()
        if not re.fullmatch(r"[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)+", event)
    }
    assert not bad, bad
    assert names["preview.recheck"] == "preview.re_checked" and names["waiver.grant"] == "waiver.granted"
