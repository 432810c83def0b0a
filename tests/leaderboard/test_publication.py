"""Publication: now, embargo, next cohort (1st and 3rd Wednesday, 08:00 US Pacific, daylight saving handled),
the schedule publishing what is due exactly once, challenges and their public resolution."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta

import pytest
from django.db import close_old_connections, connection
from django.utils import timezone

from access.visibility import publications_visible_to, submissions_visible_to
from audit.models import AuditEvent
from catalog.cohorts import next_cohort
from leaderboard import services
from leaderboard.models import Annotation, Publication
from portal.errors import ApplicationError, ConflictError, NotAllowedError
from submissions.models import Submission
from tests.factories import MembershipFactory, SubmissionFactory, SystemFactory

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    ("after", "expected"),
    [
        (datetime(2026, 11, 30, tzinfo=UTC), datetime(2026, 12, 2, 16, 0, tzinfo=UTC)),  # PST: UTC-8
        (
            datetime(2026, 12, 2, 16, 0, tzinfo=UTC),
            datetime(2026, 12, 16, 16, 0, tzinfo=UTC),
        ),  # strictly after
        (datetime(2026, 12, 20, tzinfo=UTC), datetime(2027, 1, 6, 16, 0, tzinfo=UTC)),  # across the year
        (
            datetime(2027, 3, 4, tzinfo=UTC),
            datetime(2027, 3, 17, 15, 0, tzinfo=UTC),
        ),  # PDT from 14 March: UTC-7
        (datetime(2027, 10, 25, tzinfo=UTC), datetime(2027, 11, 3, 15, 0, tzinfo=UTC)),  # still PDT on 3 Nov
        (
            datetime(2027, 11, 4, tzinfo=UTC),
            datetime(2027, 11, 17, 16, 0, tzinfo=UTC),
        ),  # PST again from 7 Nov
    ],
)
def test_the_next_cohort_is_the_1st_or_3rd_wednesday_at_8_pacific(after, expected):
    assert next_cohort(after) == expected
    assert expected.astimezone(timezone.get_fixed_timezone(0)).weekday() == 2


@pytest.fixture
def audited(role_users):
    acme = role_users["organisations"]["acme"]
    return SubmissionFactory(
        status="audited", system=SystemFactory(organisation=acme), created_by=role_users["submitter"]
    )


def test_publish_now_gives_a_stable_public_id_and_opens_the_result_to_everyone(role_users, audited):
    assert not submissions_visible_to(None).filter(pk=audited.pk).exists()
    with pytest.raises(NotAllowedError):
        services.publication_schedule(submission=audited, actor=role_users["reviewer"], mode="now")
    publication = services.publication_schedule(submission=audited, actor=role_users["submitter"], mode="now")
    audited.refresh_from_db()
    assert audited.status == "published" and publication.status == "published"
    assert (
        publication.public_id == f"EP-{publication.pk:06d}"
        and publication.version == audited.submitted_version
    )
    assert submissions_visible_to(None).filter(pk=audited.pk).exists()
    assert publications_visible_to(None).filter(pk=publication.pk).exists()
    assert [e.action for e in AuditEvent.objects.order_by("sequence")][-3:] == [
        "publication.scheduled",
        "submission.published",
        "publication.published",
    ]
    with pytest.raises(ConflictError):
        services.publication_schedule(submission=audited, actor=role_users["submitter"], mode="now")


def test_an_embargo_is_in_the_future_and_at_most_60_days_and_stays_hidden_until_due(role_users, audited):
    now = timezone.now()
    for bad in (now - timedelta(hours=1), now + timedelta(days=61)):
        with pytest.raises(ApplicationError):
            services.publication_schedule(
                submission=audited, actor=role_users["submitter"], mode="date", publish_at=bad, now=now
            )
    when = now + timedelta(days=10)
    publication = services.publication_schedule(
        submission=audited, actor=role_users["submitter"], mode="date", publish_at=when, now=now
    )
    assert publication.status == "scheduled" and publication.publish_at == when
    assert not publications_visible_to(None).filter(pk=publication.pk).exists()
    assert services.publications_publish_due(now=when - timedelta(seconds=1)) == []
    assert services.publications_publish_due(now=when) == [publication.public_id]
    assert services.publications_publish_due(now=when + timedelta(minutes=1)) == []  # once
    publication.refresh_from_db()
    assert publication.status == "published" and publication.published_at == when
    assert AuditEvent.objects.filter(action="submission.published", actor__isnull=True).count() == 1


def test_the_cohort_mode_waits_for_the_next_cohort(role_users, audited):
    now = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
    publication = services.publication_schedule(
        submission=audited, actor=role_users["submitter"], mode="cohort", now=now
    )
    assert publication.publish_at == datetime(2026, 12, 2, 16, 0, tzinfo=UTC)


def test_a_result_withdrawn_while_waiting_is_never_published(role_users, audited):
    from tests.factories import submission_take

    publication = services.publication_schedule(
        submission=audited, actor=role_users["submitter"], mode="cohort"
    )
    submission_take(audited, "withdraw", role_users["submitter"], reason="newer driver")
    assert services.publications_publish_due(now=publication.publish_at + timedelta(minutes=1)) == []
    publication.refresh_from_db()
    assert publication.status == "cancelled"
    assert Submission.objects.get(pk=audited.pk).status == "withdrawn"


@pytest.mark.skipif(connection.vendor != "postgresql", reason="needs real concurrent connections")
@pytest.mark.django_db(transaction=True)
def test_two_schedulers_at_once_publish_each_result_exactly_once(role_users):
    acme = role_users["organisations"]["acme"]
    now = timezone.now()
    publications = []
    for _ in range(6):
        submission = SubmissionFactory(
            status="audited", system=SystemFactory(organisation=acme), created_by=role_users["submitter"]
        )
        publications.append(
            services.publication_schedule(
                submission=submission,
                actor=role_users["submitter"],
                mode="date",
                publish_at=now + timedelta(days=1),
                now=now,
            )
        )
    barrier = threading.Barrier(2)
    results = []

    def beat():
        close_old_connections()
        try:
            barrier.wait(timeout=30)
            results.append(services.publications_publish_due(now=now + timedelta(days=1)))
        finally:
            connection.close()

    threads = [threading.Thread(target=beat) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    published = sorted(public_id for batch in results for public_id in batch)
    assert published == sorted(p.public_id for p in publications)  # each once, by one of the two
    assert AuditEvent.objects.filter(action="publication.published").count() == 6
    assert Publication.objects.filter(status="published").count() == 6


def test_a_challenge_ends_dismissed_annotated_or_retracted_in_public(role_users, audited):
    publication = services.publication_schedule(submission=audited, actor=role_users["submitter"], mode="now")
    outsider = MembershipFactory(organisation=role_users["organisations"]["nimbus"], role="submitter").user
    with pytest.raises(ApplicationError):
        services.challenge_raise(publication=publication, actor=outsider, reason=" ")
    first = services.challenge_raise(publication=publication, actor=outsider, reason="c64 does not reproduce")
    with pytest.raises(NotAllowedError):
        services.challenge_resolve(
            challenge=first, actor=role_users["auditor"], outcome="dismissed", text="x"
        )
    services.challenge_resolve(
        challenge=first,
        actor=role_users["chair"],
        outcome="annotated",
        text="The c64 run used a newer driver than disclosed; numbers stand.",
    )
    assert [a.text for a in Annotation.objects.filter(publication=publication)] == [
        "The c64 run used a newer driver than disclosed; numbers stand."
    ]
    second = services.challenge_raise(
        publication=publication, actor=outsider, reason="accuracy probe skipped"
    )
    services.challenge_resolve(
        challenge=second,
        actor=role_users["chair"],
        outcome="retracted",
        text="The accuracy gate was not run at c32.",
    )
    publication.refresh_from_db()
    assert publication.is_retracted and publication.status == "published"  # keeps its page
    assert publications_visible_to(None).filter(pk=publication.pk).exists()
    assert "Retracted: The accuracy gate was not run at c32." in [
        a.text for a in publication.annotations.all()
    ]
    with pytest.raises(ConflictError):
        services.challenge_resolve(
            challenge=second, actor=role_users["chair"], outcome="dismissed", text="again"
        )
    actions = list(
        AuditEvent.objects.filter(action__startswith="challenge.").values_list("action", flat=True)
    )
    assert actions == ["challenge.raised", "challenge.annotated", "challenge.raised", "challenge.retracted"]


def test_publishing_snapshots_the_curve_and_headline_of_the_frozen_versions_check(role_users, audited):
    from submissions.models import CheckRun
    from submissions.selectors import check_run_latest

    run = check_run_latest(audited.submitted_version)
    points = [
        {"point": "a", "concurrency": 1, "system_tps": 95.0, "tps_per_user": 95.0, "ttft_p90_ms": 20.0},
        {"point": "b", "concurrency": 8, "system_tps": 640.0, "tps_per_user": 80.0, "ttft_p90_ms": 35.0},
    ]
    other = {"system": "Other", "model": "m", "points": []}
    mine = {
        "system": audited.system.name,
        "model": audited.benchmark.model_id,
        "points": points,
        "pareto": {},
    }
    CheckRun.objects.filter(pk=run.pk).update(curves=[other, mine])
    publication = services.publication_schedule(submission=audited, actor=role_users["submitter"], mode="now")
    # Revision 1 of the result: every point labelled with the revision and stack it was measured with, and with
    # its verification (no basis given: claimed), the curve with the result's level.
    labelled_points = [{**p, "verification": "claimed", "revision": 1, "stack": ""} for p in points]
    labelled = {
        **mine,
        "revision": 1,
        "points": labelled_points,
        "verification": {
            "level": "claimed",
            "recomputed_points": 0,
            "total_points": 2,
            "claimed_concurrencies": [1, 8],
        },
    }
    assert publication.check_run_id == run.pk and publication.curve == labelled
    assert publication.headline["max_system_tps"] == 640.0 and publication.headline["points"] == 2
    assert (
        publication.headline["min_ttft_p90_ms"] == 20.0
        and publication.headline["max_system_tps_per_kw"] is None
    )
