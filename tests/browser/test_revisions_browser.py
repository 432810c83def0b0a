"""Incremental submissions in Chromium: the result page's revision timeline and the chart of how the curve moved
(one step function per revision, drawn by our own JS), an older revision by number, the delta an extension's
reviewers see, the review queue's extension badge and the submitter's form (a hardware change refused).
Screenshots under docs/screenshots/extension-*.png. An extension in review never shows on the public pages."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.factories import BenchmarkFactory, ReviewAssignmentFactory
from tests.leaderboard.support import extend, publish

pytestmark = pytest.mark.django_db(transaction=True)
SHOTS = Path(__file__).resolve().parents[2] / "docs" / "screenshots"
PENDING_STACK = "acme-serve 3.0-rc"


@pytest.fixture
def scene(role_users):
    from leaderboard.models import Publication

    acme = role_users["organisations"]["acme"]
    benchmark = BenchmarkFactory(sample=True)
    publication = publish(benchmark=benchmark, organisation=acme, scale=1.4, days_ago=40)
    curve = dict(publication.curve)
    curve["points"] = curve["points"][:6]
    Publication.objects.filter(pk=publication.pk).update(curve=curve)
    publication.refresh_from_db()
    extend(publication, add=(64, 128), stack="acme-serve 1.0", configuration="batch 256 -> 512")
    extend(publication, remeasure=(16, 32), stack="acme-serve 1.1", factor=1.35)
    pending = extend(
        publication, add=(256,), remeasure=(128,), stack=PENDING_STACK, status="in_review", publish_now=False
    )
    ReviewAssignmentFactory(
        accepted=True,
        submission=pending,
        reviewer=role_users["reviewer"],
        organisation=role_users["organisations"]["nimbus"],
    )
    other = publish(benchmark=benchmark, organisation=acme, scale=1.0, days_ago=10)
    return {"publication": publication, "pending": pending, "other": other}


def _login(page, live_server, username):
    from django.contrib.auth import get_user_model

    user = get_user_model().objects.get(username=username)
    user.set_password("pw-12345-x")
    user.save()
    page.goto(f"{live_server.url}/accounts/login/")
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", "pw-12345-x")
    page.click("button[type=submit], input[type=submit]")


def test_the_revision_timeline_in_chromium(chromium, live_server, plain_http, scene):
    SHOTS.mkdir(parents=True, exist_ok=True)
    publication = scene["publication"]
    context = chromium.new_context(viewport={"width": 1360, "height": 900})
    page = context.new_page()
    errors = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))

    page.goto(f"{live_server.url}/results/{publication.public_id}/")
    timeline = page.locator("[data-revisions]")
    assert timeline.is_visible()
    entries = timeline.locator(".timeline-entry")
    assert entries.count() == 3
    assert (
        "acme-serve 1.0" in entries.nth(1).inner_text()
        and "Added concurrency 64, 128" in entries.nth(1).inner_text()
    )
    assert "Re-measured concurrency 16" in entries.nth(2).inner_text()
    # The chart of how the curve moved: one drawn step line per revision, each with its legend entry.
    chart = page.locator("#chart-revisions")
    chart.locator("svg").first.wait_for()
    legend = chart.locator(".legend li")
    assert legend.count() == 3 and "Revision 3 · acme-serve 1.1" in legend.nth(2).inner_text()
    assert chart.locator("svg path, svg polyline").count() >= 3
    assert "rev. 3 · acme-serve 1.1" in page.locator(".points-table").inner_text()
    assert PENDING_STACK not in page.content()
    timeline.scroll_into_view_if_needed()
    page.screenshot(path=str(SHOTS / "extension-result-timeline.png"), full_page=True)

    entries.nth(0).locator("a").first.click()
    page.wait_for_url("**?revision=1")
    note = page.locator("[data-older-revision]")
    assert note.is_visible() and "revision 1" in note.inner_text()
    assert page.locator(".points-table tbody tr").count() == 6
    page.screenshot(path=str(SHOTS / "extension-result-revision-1.png"), full_page=True)
    assert not errors, errors
    context.close()


def test_the_delta_review_and_the_extension_form_in_chromium(
    chromium, live_server, plain_http, scene, role_users
):
    pending, publication = scene["pending"], scene["publication"]
    reviewer = chromium.new_context(viewport={"width": 1360, "height": 900})
    page = reviewer.new_page()
    errors = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    _login(page, live_server, "reviewer")
    page.goto(f"{live_server.url}/review/")
    assert page.locator(".badge.extension").count() >= 1
    page.goto(f"{live_server.url}/review/submissions/{pending.pk}/")
    delta = page.locator("[data-extension-delta]")
    assert delta.is_visible() and publication.public_id in delta.inner_text()
    assert PENDING_STACK in delta.inner_text()
    assert delta.locator("[data-delta-added] tbody tr").count() == 1  # c256
    replaced = delta.locator("[data-delta-replaced] tbody tr")
    assert replaced.count() == 1 and replaced.first.inner_text().startswith("128")
    delta.locator("#chart-delta-front svg").first.wait_for()
    delta.scroll_into_view_if_needed()
    page.screenshot(path=str(SHOTS / "extension-review-delta.png"), full_page=True)
    reviewer.close()

    submitter = chromium.new_context(viewport={"width": 1360, "height": 900})
    page = submitter.new_page()
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    _login(page, live_server, "submitter")
    # The result already has an extension on its way: the page says which.
    page.goto(f"{live_server.url}/submissions/{publication.submission_id}/")
    assert f"#{pending.pk}" in page.locator("#extend").inner_text()
    other = scene["other"]
    page.goto(f"{live_server.url}/submissions/{other.submission_id}/")
    form = page.locator("#extend form")
    form.locator("input[name=stack]").fill("acme-serve 2.0")
    form.locator("textarea[name=software]").fill("acme-serve 1.0 -> 2.0")
    form.locator("input[name=hardware_changed]").check()
    page.locator("#extend").scroll_into_view_if_needed()
    page.screenshot(path=str(SHOTS / "extension-open-form.png"), full_page=True)
    form.locator("button[type=submit]").click()
    page.wait_for_load_state()
    assert "A hardware change is not an extension" in page.content()
    page.locator("#extend form input[name=stack]").fill("acme-serve 2.0")
    page.locator("#extend form button[type=submit]").click()
    page.wait_for_load_state()
    assert "opened as submission" in page.content()
    assert page.locator("[data-extension-delta]").is_visible()
    page.screenshot(path=str(SHOTS / "extension-opened.png"), full_page=True)
    assert not errors, errors
    submitter.close()
