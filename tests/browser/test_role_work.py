"""Each role's own work in Chromium: the reviewer lands on the review queue, the review page folds one rule's
findings into one line, the raw-log browser fits a phone, the chair's dashboard lists open challenges and the audit
queue the waivers waiting for a decision. Screenshots: docs/screenshots/role-*.png."""

from __future__ import annotations

import pytest

from tests.browser.signin import landing_path, pass_second_factor
from tests.browser.test_first_user_edges import _shot
from tests.factories import ChallengeFactory, CheckRunFactory, FindingFactory, WaiverFactory
from tests.review.conftest import review_world  # noqa: F401 - the submission in review with real run archives

pytestmark = pytest.mark.django_db(transaction=True)
PASSWORD = "pw-12345-x"


def _sign_in(chromium, base: str, username: str, *, width: int = 1280):
    from django.contrib.auth import get_user_model

    user = get_user_model().objects.get(username=username)
    user.set_password(PASSWORD)
    user.save()
    page = chromium.new_context(viewport={"width": width, "height": 900}).new_page()
    page.set_default_timeout(30_000)
    page.goto(f"{base}/accounts/login/")
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", PASSWORD)
    page.click("main button[type=submit]")
    pass_second_factor(page, username)
    page.wait_for_url(f"{base}{landing_path(username)}")
    return page


def test_the_reviewer_lands_on_the_queue_and_reads_findings_folded_by_rule(
    chromium,
    live_server,
    plain_http,
    review_world,  # noqa: F811
):
    run = CheckRunFactory(version=review_world["version"], status="passed")
    for concurrency in (1, 2, 4, 8, 16, 32, 64):
        FindingFactory(
            check_run=run,
            severity="warning",
            rule="point-duration",
            point=f"results/Unreleased-Z9/llama3_1-8b/r{concurrency}",
            message=f"The r{concurrency} run lasted 20 s; the preview rule set asks for 600 s.",
        )
    base = live_server.url
    page = _sign_in(chromium, base, "reviewer")
    assert page.url == f"{base}/review/"
    assert page.get_by_role("heading", name="Your reviews").is_visible()
    _shot(page, "role-reviewer-lands-on-queue.png", full_page=True)

    page.goto(f"{base}/review/submissions/{review_world['submission'].pk}/#findings")
    fold = page.locator('li.rule-group[data-rule="point-duration"]')
    assert "×7" in fold.locator("summary").inner_text()
    assert not fold.locator("li.finding").first.is_visible()  # folded until asked
    fold.locator("summary").click()
    assert fold.locator("li.finding").count() == 7 and fold.locator("li.finding").first.is_visible()
    page.locator("#findings").scroll_into_view_if_needed()
    _shot(page, "role-review-findings-by-rule.png")


def test_the_raw_log_browser_fits_a_phone(chromium, live_server, plain_http, review_world):  # noqa: F811
    base = live_server.url
    page = _sign_in(chromium, base, "reviewer", width=390)
    version = review_world["version"]
    position = version.files.get(original_filename="AX-8000_c16.tar.gz").position
    page.goto(
        f"{base}/review/submissions/{review_world['submission'].pk}/versions/{version.number}/files/"
        f"{position}/?member=c16/events.jsonl"
    )
    assert page.locator("table.code").is_visible()
    width = page.evaluate("document.scrollingElement.scrollWidth")
    assert width <= 400, f"the page is {width} px wide on a 390 px phone"
    _shot(page, "role-raw-log-browser-phone.png")


def test_the_chair_and_the_auditor_see_their_open_work(chromium, live_server, plain_http, review_world):  # noqa: F811
    challenge = ChallengeFactory(reason="The c64 point cannot be reproduced on the disclosed hardware.")
    WaiverFactory(
        version=review_world["version"],
        status="requested",
        rule="accuracy-sample-count",
        request_reason="The sample runs carry a 32-sample accuracy probe, not a full pass.",
    )
    base = live_server.url
    chair = _sign_in(chromium, base, "chair")
    assert chair.url == f"{base}/review/chair/"
    assert chair.locator(f'[data-challenge="{challenge.pk}"]').is_visible()
    chair.locator("#challenges").scroll_into_view_if_needed()
    _shot(chair, "role-chair-open-challenges.png", full_page=True)

    auditor = _sign_in(chromium, base, "auditor")
    assert auditor.url == f"{base}/review/audit/"
    waiver_row = auditor.locator("#waivers tbody tr").first
    assert "accuracy-sample-count" in waiver_row.inner_text()
    waiver_row.get_by_role("link", name="one by one").click()  # beside the group's "Grant all"
    auditor.wait_for_url(f"**/review/audit/{review_world['submission'].pk}/#waivers-heading")
    assert auditor.locator("#waivers-heading").is_visible()
    _shot(auditor, "role-auditor-waivers.png")
