"""The whole review journey in Chromium, each step by the person who takes it, on their own pages:

the submitter uploads the seven sample run archives (they fail on the short-run accuracy rule), asks for a
waiver of each error finding and submits; the chair assigns two reviewers; both accept; one raises an
objection; the submitter answers it on the submission page; the objector resolves it; both approve
(-> peer_reviewed); an auditor grants the waivers and attests (-> audited).

Screenshots of every page on the way: docs/screenshots/journey-*.png.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from review.models import Comment, ReviewAssignment, Waiver
from submissions.models import CheckRun, Submission
from tests.browser.signin import landing_path, pass_second_factor
from tests.factories import PASSWORD, RUN_ARCHIVES, MembershipFactory, OrganisationFactory, UserFactory

pytestmark = pytest.mark.django_db(transaction=True)
SHOTS = Path(__file__).resolve().parents[2] / "docs" / "screenshots"


@pytest.fixture
def portal(live_server, storage_dir, plain_http, browser_catalog, role_users):
    """The live server (checks run in-process), acme's sample system, and a second reviewing organisation."""
    stratus = OrganisationFactory(name="StratusLabs", slug="stratuslabs")
    MembershipFactory(user=UserFactory(username="stratus-rev"), organisation=stratus, role="reviewer")
    return live_server.url


class Journey:
    def __init__(self, chromium, base: str):
        self.chromium, self.base, self.step, self.errors = chromium, base, 0, []
        SHOTS.mkdir(parents=True, exist_ok=True)

    def as_user(self, username: str):
        """A fresh browser session signed in as `username`."""
        context = self.chromium.new_context(viewport={"width": 1280, "height": 1000})
        page = context.new_page()
        page.set_default_timeout(60_000)
        page.on("pageerror", lambda exc: self.errors.append(f"{username}: {exc}"))
        page.goto(f"{self.base}/accounts/login/")
        page.fill("input[name=username]", username)
        page.fill("input[name=password]", PASSWORD)
        page.click("main button[type=submit]")
        pass_second_factor(page, username)
        page.wait_for_url(f"{self.base}{landing_path(username)}")
        return page

    def shot(self, page, name: str, selector: str | None = None) -> None:
        """What the person sees: the window scrolled so that `selector` is at its top (the page's top by
        default); the submission page is too long for a readable full-page picture."""
        self.step += 1
        if selector:
            page.locator(selector).first.evaluate("el => el.scrollIntoView({block: 'start'})")
        else:
            page.evaluate("window.scrollTo(0, 0)")
        page.screenshot(path=str(SHOTS / f"journey-{self.step:02d}-{name}.png"))


def _message(page) -> str:
    return page.locator(".messages").inner_text() if page.locator(".messages").count() else ""


def test_upload_waive_submit_assign_object_answer_approve_waive_attest(chromium, portal, role_users):
    journey = Journey(chromium, portal)

    # --- The submitter: a draft, the seven run archives, the check fails on the short runs. --------------
    submitter = journey.as_user("submitter")
    submitter.select_option("#id_benchmark", label="Llama 3.1 8B Instruct (llama3_1-8b)")
    submitter.select_option("#id_availability", "available")
    submitter.click("text=Create draft")
    submitter.wait_for_url("**/submissions/*/#upload")
    submission = Submission.objects.get()
    detail = f"{portal}/submissions/{submission.pk}/"
    submitter.set_input_files("[data-file-input]", [str(path) for path in RUN_ARCHIVES])
    submitter.click("[data-start]")
    submitter.wait_for_url(f"**/submissions/{submission.pk}/?version=1#check", timeout=180_000)
    submitter.locator("#check-section [data-check-status]").wait_for()
    run = CheckRun.objects.get(version__submission=submission)
    assert run.status == CheckRun.Status.FAILED, run.error_message
    error_rules = set(run.findings.filter(severity="error").values_list("rule", flat=True))
    assert "accuracy-sample-count" in error_rules, error_rules
    submitter.goto(detail)
    submit = submitter.locator("[data-action=submit] button")
    assert submit.is_disabled()
    assert "waiver" in submitter.locator("#blocked-submit").inner_text()
    journey.shot(submitter, "uploaded-check-failed", "#waivers")

    # --- ... asks for a waiver of each error finding, with a justification, and submits. --------------
    errors = run.findings.filter(severity="error").count()
    while submitter.locator("form.waiver-form").count():  # a rule's findings are asked for at once (one form)
        form = submitter.locator("form.waiver-form").first
        form.locator("textarea").fill(
            "The sample runs are short on purpose (demo hardware time); the full-length run follows."
        )
        form.locator("button").click()
        submitter.wait_for_load_state()
        assert "asked for" in _message(submitter), _message(submitter)
    assert submitter.locator("form.waiver-form").count() == 0
    assert Waiver.objects.filter(version__submission=submission, status="requested").count() == errors
    journey.shot(submitter, "waivers-asked", "#waivers")
    submitter.click("[data-action=submit] button")
    assert "frozen for review" in _message(submitter)
    submission.refresh_from_db()
    assert submission.status == Submission.Status.SUBMITTED
    assert submitter.locator("#review").inner_text().count("No reviewer assigned yet") == 1
    journey.shot(submitter, "submitted")

    # --- The chair assigns two reviewers from two organisations. --------------------------------------
    chair = journey.as_user("chair")
    chair.goto(f"{portal}/review/chair/")
    journey.shot(chair, "chair-dashboard")
    chair.goto(f"{portal}/review/chair/submissions/{submission.pk}/")
    chair.fill("#draw-count", "2")
    chair.click("[data-form=draw] button[type=submit]")
    chair.wait_for_load_state()
    assignments = ReviewAssignment.objects.filter(submission=submission)
    assert sorted(a.reviewer.username for a in assignments) == ["reviewer", "stratus-rev"], _message(chair)
    journey.shot(chair, "chair-assigned")

    # --- Both accept; the first acceptance moves the submission to in_review. --------------------------
    reviewer = journey.as_user("reviewer")
    reviewer.goto(f"{portal}/review/")
    journey.shot(reviewer, "reviewer-invited")
    reviewer.locator("form[action*='/accept/'] button").first.click()
    assert "You accepted" in _message(reviewer)
    second = journey.as_user("stratus-rev")
    second.goto(f"{portal}/review/")
    second.locator("form[action*='/accept/'] button").first.click()
    submission.refresh_from_db()
    assert submission.status == Submission.Status.IN_REVIEW

    # --- One reviewer raises an objection in the thread (not a decision: they still approve later). -----
    reviewer.goto(f"{portal}/review/submissions/{submission.pk}/#thread")
    reviewer.select_option("#kind", "objection")
    reviewer.select_option("#objection_type", "reproducibility")
    reviewer.fill(
        "#comment-body", "Which warm-up did the c64 run use? The events log starts 12 s before the window."
    )
    reviewer.click("#new-comment button[type=submit]")
    assert "Objection raised" in _message(reviewer)
    objection = Comment.objects.get(submission=submission, kind="objection")
    journey.shot(reviewer, "objection-raised", f"#comment-{objection.pk}")

    # --- The submitter sees reviewers and the open objection, and answers it on the submission page. ---
    submitter.goto(detail)
    panel = submitter.locator("#review")
    assert panel.locator("tr[data-assignment]").count() == 2
    assert "StratusLabs" in panel.inner_text() and "Accepted" in panel.inner_text()
    entry = submitter.locator(f"#comment-{objection.pk}")
    assert "answer due" in entry.inner_text()
    journey.shot(submitter, "objection-to-answer", "#review")
    entry.locator("textarea").fill(
        "The rule set's 10 s warm-up plus 2 s of connection set-up; see c64/run.log."
    )
    entry.locator("button", has_text="Answer objection").click()
    assert "waits for the objector" in _message(submitter)
    objection.refresh_from_db()
    assert objection.objection_status == Comment.ObjectionStatus.ANSWERED
    journey.shot(submitter, "objection-answered", f"#comment-{objection.pk}")

    # --- The objector resolves it; both approve: the quorum moves it to peer_reviewed. ------------------
    reviewer.goto(f"{portal}/review/submissions/{submission.pk}/#thread")
    item = reviewer.locator(f"#comment-{objection.pk}")
    item.locator("summary", has_text="Resolve or overrule").click()
    item.locator("textarea[name=note]").fill("Thanks, that matches the log.")
    item.locator("button[value=resolved]").click()
    assert "Objection resolved" in _message(reviewer)
    for page in (reviewer, second):
        page.goto(f"{portal}/review/submissions/{submission.pk}/#decision")
        page.check("input[name=decision][value=approve]")
        page.fill("#decision-body", "Reproduces within tolerance; waivers are for the auditor.")
        page.click(".decision-form button[type=submit]")
        assert "Approve" in _message(page), _message(page)
    journey.shot(second, "reviews-approved", "#decision")
    submission.refresh_from_db()
    assert submission.status == Submission.Status.PEER_REVIEWED

    submitter.goto(detail)
    assert "2 of 2 approvals" in submitter.locator("#review").inner_text()
    journey.shot(submitter, "peer-reviewed")

    # --- The auditor grants the waivers and attests. -----------------------------------------------------
    auditor = journey.as_user("auditor")
    auditor.goto(f"{portal}/review/audit/")
    journey.shot(auditor, "audit-queue")
    auditor.goto(f"{portal}/review/audit/{submission.pk}/")
    assert auditor.locator("[data-form=attest] button[type=submit]").is_disabled()
    for _ in range(errors):
        row = auditor.locator("[data-waiver]", has=auditor.locator("button[value=grant]")).first
        row.locator("input[name=reason]").fill("Short demo runs; accuracy is attested on the full run.")
        row.locator("button[value=grant]").click()
        auditor.wait_for_load_state()
    assert Waiver.objects.filter(version__submission=submission, status="granted").count() == errors
    journey.shot(auditor, "waivers-granted")
    auditor.fill("#attest-notes", "Checked the seven run logs against their summaries; waivers reviewed.")
    auditor.click("[data-form=attest] button[type=submit]")
    submission.refresh_from_db()
    assert submission.status == Submission.Status.AUDITED, _message(auditor)
    journey.shot(auditor, "attested")

    # --- The submitter sees the audited result, its reviews and the granted waivers. --------------------
    submitter.goto(detail)
    text = submitter.locator("main").inner_text()
    assert "Granted" in text and "accuracy is attested on the full run" in text
    assert "auditor attested version 1" in text and text.count("waivers reviewed.") == 1
    journey.shot(submitter, "audited")
    submitter.set_viewport_size({"width": 390, "height": 844})
    submitter.reload()
    assert submitter.evaluate("document.documentElement.scrollWidth") <= 390, "the page scrolls sideways"
    journey.shot(submitter, "audited-phone", "#review")
    assert not journey.errors, journey.errors
