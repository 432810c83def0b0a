"""Submitter pages: who sees what (role x page x state, one table), and the lifecycle buttons going
through the services with their refusals shown as messages."""

from __future__ import annotations

import hashlib

import pytest
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.utils import timezone

from catalog.models import Benchmark
from submissions.models import (
    CheckRun,
    Finding,
    PointMetric,
    Submission,
    SubmissionVersion,
    System,
    VersionFile,
)
from tests.factories import (
    MembershipFactory,
    SubmissionFactory,
    SubmissionVersionFactory,
    SystemFactory,
    UserFactory,
)
from tests.states import put

pytestmark = pytest.mark.django_db

PAYLOAD = b"run archive bytes as uploaded\n" * 10
OK, LOGIN, HIDDEN = "200", "login", "404"
ROLES = ["anonymous", "submitter", "other_org_member", "auditor", "chair"]
PAGES = ["dashboard", "submission", "fragment", "download"]
# Per state: the outcome of the submission page, the fragment and the download for each role.
# The dashboard needs a login; it lists the own organisation's submissions, and for auditors and the chair
# every non-draft one (other organisations' published results are on the leaderboard, not here).
DASHBOARD_LISTS = {
    "draft": [None, True, False, False, False],
    "submitted": [None, True, False, True, True],
    "withdrawn": [None, True, False, True, True],
    "published": [None, True, False, True, True],
}
SEES = {
    "draft": [LOGIN, OK, HIDDEN, HIDDEN, HIDDEN],
    "submitted": [LOGIN, OK, HIDDEN, OK, OK],
    "withdrawn": [LOGIN, OK, HIDDEN, OK, OK],
    "published": [OK, OK, OK, OK, OK],
}
CASES = [
    (state, page, role, outcomes[i])
    for state, outcomes in SEES.items()
    for page in PAGES
    for i, role in enumerate(ROLES)
]


@pytest.fixture
def people(role_users):
    return {**role_users, "other_org_member": role_users["reviewer"]}


def make_submission(people, *, status="draft", check_status=CheckRun.Status.FAILED) -> Submission:
    acme = people["organisations"]["acme"]
    benchmark = Benchmark.objects.get(model_id="llama3_1-8b")
    system = SystemFactory(organisation=acme, name="Acme_AX-8000")
    submission = Submission.objects.create(
        organisation=acme,
        system=system,
        benchmark=benchmark,
        created_by=people["submitter"],
        title="AX-8000 pages test",
    )
    sha256 = hashlib.sha256(PAYLOAD).hexdigest()
    key = default_storage.save(f"blobs/sha256/{sha256[:2]}/{sha256}", ContentFile(PAYLOAD))
    version = SubmissionVersion.objects.create(
        submission=submission,
        number=1,
        kind="run_archives",
        size_bytes=len(PAYLOAD),
        sha256=sha256,
        uploader=people["submitter"],
    )
    VersionFile.objects.create(
        version=version,
        position=0,
        original_filename="AX-8000_c16.tar.gz",
        storage_key=key,
        size_bytes=len(PAYLOAD),
        sha256=sha256,
    )
    now = timezone.now()
    run = CheckRun.objects.create(
        version=version,
        started_at=now,
        heartbeat_at=now,
        finished_at=now,
        counts={"error": 1, "warning": 0, "info": 0},
        checker_version="test",
        ruleset="endpoints-v1.0",
        progress_done=1,
        progress_total=1,
    )
    put(
        CheckRun.objects.filter(pk=run.pk),
        check_status,
        curves=[
            {
                "system": "Acme_AX-8000",
                "model": "llama3_1-8b",
                "points": [
                    {
                        "point": "Acme_AX-8000/llama3_1-8b/r8",
                        "concurrency": 8,
                        "basis": "recomputed",
                        "system_tps": 737.6,
                        "tps_per_user": 99.1,
                    },
                    {
                        "point": "Acme_AX-8000/llama3_1-8b/r16",
                        "concurrency": 16,
                        "basis": "recomputed",
                        "system_tps": 2093.7,
                        "tps_per_user": 99.7,
                    },
                ],
                "pareto": {
                    "tps_per_user": {"points": ["Acme_AX-8000/llama3_1-8b/r16"], "steps": [[99.7, 2093.7]]}
                },
            }
        ],
    )
    PointMetric.objects.create(
        check_run=run,
        system="Acme_AX-8000",
        model="llama3_1-8b",
        concurrency=16,
        key="Acme_AX-8000/llama3_1-8b/r16",
        source="run-archive",
        claimed={
            "system_tps": 2512.4,
            "tps_per_user": 99.7,
            "ttft_p90_ms": 136.2,
            "n_samples_completed": 192,
        },
        recomputed={
            "system_tps": 2093.7,
            "tps_per_user": 99.7,
            "ttft_p90_ms": 136.2,
            "n_samples_completed": 192,
        },
        extra={"region": "med_concurrency", "power": {"provisioned_kw": 10.95, "system_tps_per_kw": 191.2}},
    )
    Finding.objects.create(
        check_run=run,
        rule="raw-log-consistency",
        severity="error",
        file="AX-8000_c16.tar.gz:c16/result_summary.json",
        line=3,
        pointer="/tps",
        point="Acme_AX-8000/llama3_1-8b/r16",
        message="tps: result_summary.json claims 2512.4, the raw log gives 2093.7.",
        fix="Upload the result_summary.json the client wrote for this events.jsonl, unedited.",
    )
    if status != "draft":
        put(Submission.objects.filter(pk=submission.pk), status, submitted_version=version)
    submission.refresh_from_db()
    return submission


def _client_for(client, user):
    if user is not None:
        client.force_login(user)
    return client


def _outcome(response) -> str:
    if response.status_code == 302 and "/accounts/login/" in response["Location"]:
        return LOGIN
    return str(response.status_code)


@pytest.mark.parametrize(("state", "page", "role", "expected"), CASES)
def test_visibility_of_submitter_pages(client, people, state, page, role, expected):
    submission = make_submission(people, status=state)
    client = _client_for(client, people[role])
    urls = {
        "dashboard": "/dashboard/",
        "submission": f"/submissions/{submission.pk}/",
        "fragment": f"/submissions/{submission.pk}/versions/1/check/",
        "download": f"/submissions/{submission.pk}/versions/1/files/0/",
    }
    response = client.get(urls[page])
    if page == "dashboard":
        if role == "anonymous":
            assert _outcome(response) == LOGIN
            return
        assert response.status_code == 200
        listed = f'href="/submissions/{submission.pk}/"' in response.content.decode()
        assert listed == DASHBOARD_LISTS[state][ROLES.index(role)], (state, role)
        return
    assert _outcome(response) == expected, (state, page, role)
    if expected == OK and page == "download":
        assert b"".join(response.streaming_content) == PAYLOAD
        assert response["X-Content-SHA256"] == hashlib.sha256(PAYLOAD).hexdigest()
    if expected == OK and page == "fragment":
        assert response["X-Poll-Stop"] == "1"  # the run has ended: the page stops polling


def test_unknown_submission_is_404_for_members_and_login_for_anonymous(client, people):
    assert _outcome(client.get("/submissions/999999/")) == LOGIN
    client.force_login(people["submitter"])
    assert client.get("/submissions/999999/").status_code == 404


def test_submission_page_shows_findings_points_and_step_chart(client, people):
    submission = make_submission(people)
    client.force_login(people["submitter"])
    html = client.get(f"/submissions/{submission.pk}/").content.decode()
    # the finding, with its rule linked to the rules page, where it is, and how to fix it
    assert 'href="/rules/#rule-raw-log-consistency"' in html
    assert "AX-8000_c16.tar.gz:c16/result_summary.json:3" in html and "/tps" in html
    assert "How to fix:" in html and "unedited" in html
    # claimed and recomputed side by side, the difference highlighted
    assert "2,512.4" in html and "2,093.7" in html and 'class="num differs"' in html
    assert "medium" in html and "10.95 kW" in html
    # the curve as an inline SVG, no external asset
    assert '<svg class="step-chart"' in html and "System throughput (tokens/s)" in html
    assert "upload.js" in html  # a draft of the submitter's own organisation can take a new version


def test_rules_page_documents_the_rule_ids_findings_link_to(client):
    html = client.get("/rules/").content.decode()
    for rule in (
        "raw-log-consistency",
        "accuracy-sample-count",
        "point-duration",
        "archive-corrupt",
        "assembly-conflict",
    ):
        assert f'id="rule-{rule}"' in html


def test_create_submission_from_the_dashboard(client, people):
    acme = people["organisations"]["acme"]
    system = SystemFactory(organisation=acme, name="Acme_AX-4000")
    benchmark = Benchmark.objects.get(model_id="llama3_1-8b")
    client.force_login(people["submitter"])
    response = client.post(
        "/submissions/new/",
        {
            "system": system.pk,
            "benchmark": benchmark.pk,
            "division": "standardized",
            "availability": "preview",
        },
    )
    submission = Submission.objects.get(system=system)
    assert response.status_code == 302 and response["Location"] == f"/submissions/{submission.pk}/#upload"
    assert (submission.status, submission.availability, submission.created_by) == (
        "draft",
        "preview",
        people["submitter"],
    )


def test_other_organisations_systems_cannot_be_chosen(client, people):
    nimbus_system = SystemFactory(organisation=people["organisations"]["nimbus"], name="Nimbus_N1")
    benchmark = Benchmark.objects.get(model_id="llama3_1-8b")
    client.force_login(people["submitter"])
    response = client.post(
        "/submissions/new/",
        {
            "system": nimbus_system.pk,
            "benchmark": benchmark.pk,
            "division": "standardized",
            "availability": "available",
        },
    )
    assert response.status_code == 400
    assert not Submission.objects.filter(system=nimbus_system).exists()


def _messages(response) -> str:
    return " ".join(str(m) for m in response.context["messages"])


def test_submit_without_a_passing_check_is_refused_with_a_message(client, people):
    submission = make_submission(people, check_status=CheckRun.Status.FAILED)
    client.force_login(people["submitter"])
    response = client.post(f"/submissions/{submission.pk}/submit/", follow=True)
    assert "Not submitted: Submit needs a version whose latest check passed" in _messages(response)
    submission.refresh_from_db()
    assert submission.status == "draft"


def test_submit_with_a_passing_check_freezes_the_version(client, people):
    submission = make_submission(people, check_status=CheckRun.Status.PASSED)
    client.force_login(people["submitter"])
    response = client.post(f"/submissions/{submission.pk}/submit/", follow=True)
    submission.refresh_from_db()
    assert submission.status == "submitted" and submission.submitted_version.number == 1
    assert "submitted: version 1 is frozen" in _messages(response)
    # a second click (another tab) is a conflict, shown as a message, not a second transition
    again = client.post(f"/submissions/{submission.pk}/submit/", follow=True)
    assert "Not submitted:" in _messages(again) and "not draft" in _messages(again)


def test_withdraw_needs_a_reason_then_conflicts_once_withdrawn(client, people):
    submission = make_submission(people)
    client.force_login(people["submitter"])
    no_reason = client.post(f"/submissions/{submission.pk}/withdraw/", {"reason": ""}, follow=True)
    assert "say why" in _messages(no_reason)
    done = client.post(
        f"/submissions/{submission.pk}/withdraw/", {"reason": "wrong software stack"}, follow=True
    )
    assert "withdrawn" in _messages(done)
    submission.refresh_from_db()
    assert (submission.status, submission.status_reason) == ("withdrawn", "wrong software stack")
    again = client.post(f"/submissions/{submission.pk}/withdraw/", {"reason": "twice"}, follow=True)
    assert "Not withdrawn:" in _messages(again) and "cannot be withdrawn" in _messages(again)


@pytest.mark.parametrize("role", ["other_org_member", "auditor", "chair"])
def test_lifecycle_buttons_of_a_draft_are_404_for_outsiders(client, people, role):
    submission = make_submission(people, check_status=CheckRun.Status.PASSED)
    client.force_login(people[role])
    assert client.post(f"/submissions/{submission.pk}/submit/").status_code == 404
    assert client.post(f"/submissions/{submission.pk}/withdraw/", {"reason": "x"}).status_code == 404
    submission.refresh_from_db()
    assert submission.status == "draft"


def test_auditor_cannot_withdraw_what_they_can_see(client, people):
    submission = make_submission(people, status="submitted")
    client.force_login(people["auditor"])
    response = client.post(f"/submissions/{submission.pk}/withdraw/", {"reason": "no"}, follow=True)
    assert "Not withdrawn: Only submitters" in _messages(response)
    submission.refresh_from_db()
    assert submission.status == "submitted"


def test_once_submitted_only_the_chair_and_auditors_can_recheck(client, people, settings):
    settings.CELERY_TASK_ALWAYS_EAGER = False  # queue only; the check itself is not under test here
    submission = make_submission(people, status="submitted")
    client.force_login(people["submitter"])
    refused = client.post(f"/submissions/{submission.pk}/versions/1/recheck/", follow=True)
    assert "from submission on, ask the chair or an auditor" in _messages(refused)
    assert CheckRun.objects.filter(version__submission=submission).count() == 1
    client.force_login(people["chair"])
    page = client.get(f"/submissions/{submission.pk}/").content.decode()
    assert "Re-check version 1" in page
    from unittest import mock

    with mock.patch("submissions.tasks.check_run_start_task.apply_async"):
        done = client.post(f"/submissions/{submission.pk}/versions/1/recheck/", follow=True)
    assert "queued for a new check" in _messages(done)
    assert CheckRun.objects.filter(version__submission=submission).count() == 2
    # the new run is queued: the check section polls every 2 s and shows the attempt
    html = client.get(f"/submissions/{submission.pk}/").content.decode()
    assert 'data-poll-interval="2000"' in html and "Attempt" in html


def test_submitter_of_another_org_member_sees_no_upload_box(client, people):
    outsider = UserFactory(username="acme-reviewer")
    MembershipFactory(user=outsider, organisation=people["organisations"]["acme"], role="reviewer")
    submission = make_submission(people)
    client.force_login(outsider)
    html = client.get(f"/submissions/{submission.pk}/").content.decode()
    assert "upload.js" not in html and "Submit for review" not in html


@pytest.mark.parametrize("asked", ["abc", "7", "-1", "1.0"])
def test_unknown_version_parameter_says_so_instead_of_showing_the_latest(client, role_users, asked):
    submission = SubmissionFactory(system__organisation=role_users["organisations"]["acme"])
    SubmissionVersionFactory(submission=submission)
    SubmissionVersionFactory(submission=submission)
    client.force_login(role_users["submitter"])
    response = client.get(f"/submissions/{submission.pk}/?version={asked}")
    assert response.status_code == 404
    html = response.content.decode()
    assert f"This submission has no version “{asked}” (its versions: 1, 2)." in html
    assert f'href="/submissions/{submission.pk}/"' in html
    assert client.get(f"/submissions/{submission.pk}/?version=1").status_code == 200


def test_chair_is_not_offered_a_draft_for_another_organisation(client, role_users):
    acme = role_users["organisations"]["acme"]
    SystemFactory(organisation=acme)
    Benchmark.objects.get_or_create(model_id="llama3_1-8b", defaults={"display_name": "Llama 3.1 8B"})
    client.force_login(role_users["chair"])
    html = client.get("/dashboard/").content.decode()
    assert "Create draft" not in html and 'href="#new-submission"' not in html
    assert "Drafts are their organisation's own" in html
    assert "Create one below" not in html  # no "own submissions" table for the chair without an organisation
    # Posting the form anyway creates nothing and never lands on "Not found".
    system = System.objects.get(organisation=acme)
    response = client.post(
        "/submissions/new/",
        {
            "system": system.pk,
            "benchmark": Benchmark.objects.first().pk,
            "division": "standardized",
            "availability": "available",
        },
        follow=True,
    )
    assert not Submission.objects.exists()
    assert b"Not found" not in response.content


def test_submitter_still_creates_a_draft_for_their_own_organisation(client, role_users):
    acme = role_users["organisations"]["acme"]
    system = SystemFactory(organisation=acme)
    benchmark, _ = Benchmark.objects.get_or_create(model_id="llama3_1-8b", defaults={"display_name": "Llama"})
    client.force_login(role_users["submitter"])
    assert "Create draft" in client.get("/dashboard/").content.decode()
    data = {
        "system": system.pk,
        "benchmark": benchmark.pk,
        "division": "standardized",
        "availability": "available",
    }
    response = client.post("/submissions/new/", data)
    assert response.status_code == 302 and Submission.objects.filter(organisation=acme).count() == 1


def test_a_second_draft_of_the_same_pair_warns_and_links_to_the_first(client, role_users):
    acme = role_users["organisations"]["acme"]
    system = SystemFactory(organisation=acme)
    benchmark, _ = Benchmark.objects.get_or_create(model_id="llama3_1-8b", defaults={"display_name": "Llama"})
    client.force_login(role_users["submitter"])
    data = {
        "system": system.pk,
        "benchmark": benchmark.pk,
        "division": "standardized",
        "availability": "available",
    }
    assert client.post("/submissions/new/", data).status_code == 302
    first = Submission.objects.get()

    again = client.post("/submissions/new/", data)
    assert again.status_code == 200 and Submission.objects.count() == 1
    html = again.content.decode()
    assert "already has a draft on" in html
    assert f'href="/submissions/{first.pk}/"' in html and "Create another draft anyway" in html

    anyway = client.post("/submissions/new/", {**data, "create_another": "1"})
    assert anyway.status_code == 302 and Submission.objects.count() == 2


def test_your_roles_reads_as_words_not_slugs(client, role_users):
    acme = role_users["organisations"]["acme"]
    admin = UserFactory(username="orgadmin")
    MembershipFactory(user=admin, organisation=acme, role="org_admin")
    client.force_login(admin)
    html = client.get("/dashboard/").content.decode()
    roles = html[html.index('id="roles-heading"') :]
    assert "<strong>AcmeCompute</strong>: Organisation admin" in roles
    assert "org_admin" not in roles and "acmecompute" not in roles


def test_rules_page_is_linked_and_has_a_filter_box(client, role_users):
    home = client.get("/").content.decode()
    assert 'href="/rules/">Rules</a>' in home  # header, for everyone
    rules = client.get("/rules/?q=ttft").content.decode()
    assert '<input type="search" id="rule-filter" name="q" value="ttft"' in rules
    assert '<script src="/static/js/rules_filter.js" defer></script>' in rules
    assert client.get("/static/js/rules_filter.js").status_code == 200
