"""Waivers in bulk: the submitter asks once for every finding of a rule with one justification, the chair decides
the group at once, and each side gets one notification for the lot; every waiver stays its own audited row."""

from __future__ import annotations

import pytest
from django.test import Client

from accounts.models import Notification
from audit.models import AuditEvent
from review.models import Waiver
from review.services.waivers import waiver_decide, waivers_decide_group, waivers_request_group
from tests.factories import CheckRunFactory, FindingFactory, SubmissionFactory, SystemFactory

pytestmark = pytest.mark.django_db
RULE = "accuracy-sample-count"
POINTS = ("r1", "r16", "r64", "r8")


@pytest.fixture
def failing(role_users):
    submission = SubmissionFactory(
        in_review=True,
        system=SystemFactory(organisation=role_users["organisations"]["acme"], name="Acme_AX-8000"),
    )
    run = CheckRunFactory(version=submission.submitted_version, status="failed", findings=[])
    for point in POINTS:
        FindingFactory(
            check_run=run,
            severity="error",
            rule=RULE,
            point=f"results/Acme_AX-8000/llama3_1-8b/{point}",
            message=f"The {point} accuracy run has 32 samples; the rules ask for 13,368.",
        )
    FindingFactory(
        check_run=run, severity="error", rule="point-duration", point="results/Acme_AX-8000/llama3_1-8b/r1"
    )
    return submission


def _client(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_the_submitter_asks_once_for_every_finding_of_a_rule(role_users, failing):
    submitter = _client(role_users["submitter"])
    page = submitter.get(f"/submissions/{failing.pk}/").content.decode()
    assert f'data-waiver-group="{RULE}"' in page and "Ask for 4 waivers" in page
    assert 'data-waiver-group="point-duration"' not in page  # one finding: its own row's form is enough
    chairs_before = Notification.objects.filter(user=role_users["chair"]).count()
    response = submitter.post(
        f"/review/submissions/{failing.pk}/waivers/",
        {"rule": RULE, "every_finding_of_rule": "1", "reason": "The sample runs carry a 32-sample probe."},
        follow=True,
    )
    assert "4 waivers of accuracy-sample-count asked for on version 1" in response.content.decode()
    waivers = Waiver.objects.filter(version=failing.submitted_version, rule=RULE)
    assert sorted(w.point.rsplit("/", 1)[-1] for w in waivers) == sorted(POINTS)
    assert {w.request_reason for w in waivers} == {"The sample runs carry a 32-sample probe."}
    assert AuditEvent.objects.filter(action="waiver.requested").count() == 4
    assert Notification.objects.filter(user=role_users["chair"]).count() == chairs_before + 1


@pytest.mark.parametrize(("role", "landing"), [("chair", "/review/chair/"), ("auditor", "/review/audit/")])
def test_the_chair_or_an_auditor_decides_a_group_at_once_and_the_submitter_hears_once(
    role_users, failing, role, landing
):
    waivers_request_group(
        version=failing.submitted_version,
        actor=role_users["submitter"],
        rule=RULE,
        reason="A 32-sample probe.",
    )
    decider = _client(role_users[role])
    page = decider.get(landing).content.decode()
    assert "Grant all 4" in page and "Refuse all" in page  # one form for the group, not four
    first = Waiver.objects.filter(rule=RULE).order_by("point").first()
    before = Notification.objects.filter(user=role_users["submitter"]).count()
    response = decider.post(
        f"/review/waivers/{first.pk}/decide/",
        {
            "decision": "grant",
            "reason": "Sample runs: the preview rule set.",
            "with_group": "1",
            "next": landing,
        },
        follow=True,
    )
    assert "4 waivers of accuracy-sample-count granted." in response.content.decode()
    assert set(Waiver.objects.filter(rule=RULE).values_list("status", flat=True)) == {"granted"}
    assert AuditEvent.objects.filter(action="waiver.granted").count() == 4
    assert Notification.objects.filter(user=role_users["submitter"]).count() == before + 1


def test_a_group_is_written_whole_or_not_at_all(role_users, failing):
    waivers_request_group(
        version=failing.submitted_version,
        actor=role_users["submitter"],
        rule=RULE,
        reason="A 32-sample probe.",
    )
    waivers = list(Waiver.objects.filter(rule=RULE).order_by("point"))
    waiver_decide(waiver=waivers[-1], actor=role_users["chair"], grant=False, reason="Not this one.")
    from portal.errors import ApplicationError

    with pytest.raises(ApplicationError):
        waivers_decide_group(waivers=waivers, actor=role_users["chair"], grant=True, reason="All of them.")
    assert list(Waiver.objects.filter(rule=RULE).order_by("point").values_list("status", flat=True)) == [
        "requested",
        "requested",
        "requested",
        "refused",
    ]


def test_the_api_asks_and_decides_a_group_as_the_pages_do(role_users, failing):
    from tests.submissions.support import api_client

    submitter, chair = api_client(role_users["submitter"]), api_client(role_users["chair"])
    asked = submitter.post(
        "/api/v1/waivers/request-group/",
        {
            "version": failing.submitted_version.pk,
            "rule": RULE,
            "points": [f"results/Acme_AX-8000/llama3_1-8b/{point}" for point in ("r1", "r8")],
            "reason": "A 32-sample probe.",
        },
        format="json",
    )
    assert asked.status_code == 201, asked.content
    ids = [row["id"] for row in asked.json()]
    assert len(ids) == 2 and {row["status"] for row in asked.json()} == {"requested"}

    # the submitter cannot decide its own; a waiver nobody may see is a 404, and nothing is decided
    refused = submitter.post(
        "/api/v1/waivers/decide-group/", {"waivers": ids, "grant": True, "reason": "Mine."}, format="json"
    )
    assert refused.status_code == 403 and refused.json()["code"] == "permission_denied"
    unknown = chair.post(
        "/api/v1/waivers/decide-group/",
        {"waivers": [*ids, 10**9], "grant": True, "reason": "All."},
        format="json",
    )
    assert unknown.status_code == 404
    assert set(Waiver.objects.filter(pk__in=ids).values_list("status", flat=True)) == {"requested"}

    before = Notification.objects.filter(user=role_users["submitter"]).count()
    decided = chair.post(
        "/api/v1/waivers/decide-group/",
        {"waivers": ids, "grant": True, "reason": "Sample runs: the preview rule set."},
        format="json",
    )
    assert decided.status_code == 200, decided.content
    assert [row["status"] for row in decided.json()] == ["granted", "granted"]
    assert Notification.objects.filter(user=role_users["submitter"]).count() == before + 1
    again = chair.post(
        "/api/v1/waivers/decide-group/",
        {"waivers": ids, "grant": False, "reason": "Changed my mind."},
        format="json",
    )
    assert again.status_code == 409


def test_waivers_decided_one_at_a_time_are_one_notification_counted_and_one_email(role_users, failing):
    """The demo's 86 unread notifications came from one row per waiver (seven `raw-log-missing` waivers granted one
    by one: seven identical lines) and per reviewer's acceptance: the same kind about the same submission while the
    first is unread is grouped into it, counted, and e-mailed once."""
    from django.core import mail

    submitter = role_users["submitter"]
    submitter.email = "submitter@example.org"
    submitter.save()
    waivers_request_group(
        version=failing.submitted_version, actor=submitter, rule=RULE, reason="A 32-sample probe."
    )
    mail.outbox.clear()
    reasons = ["Sample runs.", "Sample runs.", "Sample runs.", "The r8 probe is documented."]
    with_email = []
    for waiver, reason in zip(Waiver.objects.filter(rule=RULE).order_by("point"), reasons, strict=True):
        with mail_sent(with_email):
            waiver_decide(waiver=waiver, actor=role_users["auditor"], grant=True, reason=reason)
    (row,) = Notification.objects.filter(user=submitter, kind="waiver.granted")
    assert row.times == 4 and row.body == "Sample runs.\n\nThe r8 probe is documented."
    assert sum(with_email) == 1  # the first decision's e-mail stands for the group
    page = _client(submitter).get("/accounts/notifications/").content.decode()
    assert page.count(f'data-notification="{row.pk}"') == 1 and 'data-times="4"' in page and "× 4" in page
    api = _client(submitter).get("/api/v1/notifications/").json()
    shown = [n for n in api["results"] if n["kind"] == "waiver.granted"]
    assert [n["times"] for n in shown] == [4]
    # Read, the next event is news again: a row of its own.
    Notification.objects.filter(pk=row.pk).update(read_at=row.created_at)
    from accounts.services.notifications import notify

    notify(users=[submitter], kind="waiver.granted", subject=row.subject, submission_id=failing.pk)
    assert Notification.objects.filter(user=submitter, kind="waiver.granted").count() == 2


class mail_sent:  # noqa: N801 - a context manager read like a sentence
    """Appends how many e-mails the block sent (after its commit hooks ran)."""

    def __init__(self, counts: list[int]) -> None:
        self.counts = counts

    def __enter__(self):
        from django.core import mail

        self.before = len(mail.outbox)
        from django.test import TestCase

        self.hooks = TestCase.captureOnCommitCallbacks(execute=True)
        self.hooks.__enter__()
        return self

    def __exit__(self, *exc):
        from django.core import mail

        self.hooks.__exit__(*exc)
        self.counts.append(sum("submitter@example.org" in m.to for m in mail.outbox[self.before :]))
        return False
