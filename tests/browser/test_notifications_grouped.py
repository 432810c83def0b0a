"""The notifications page in Chromium at 1440 and 390 px: events of one kind about the same submission are one line,
counted (× N), never listed twice. Screenshots docs/screenshots/notifications-grouped-*.png."""

from __future__ import annotations

from pathlib import Path

import pytest

from accounts.services.notifications import notify
from tests.browser.signin import pass_second_factor
from tests.factories import PASSWORD

pytestmark = pytest.mark.django_db(transaction=True)
SHOTS = Path(__file__).resolve().parents[2] / "docs" / "screenshots"


@pytest.mark.parametrize("width", [1440, 390])
def test_one_line_per_kind_of_event_counted(chromium, live_server, plain_http, role_users, width):
    submitter = role_users["submitter"]
    for rule in ("raw-log-missing",) * 7 + ("accuracy-sample-count",) * 4:
        notify(
            users=[submitter],
            kind="waiver.granted",
            submission_id=None,
            subject=f"Waiver of {rule} granted on submission #9",
            body="Sample runs: the preview rule set.",
            url="/accounts/notifications/",
        )
    for _ in range(2):
        notify(users=[submitter], kind="review.accepted", subject="A reviewer accepted submission #9")
    context = chromium.new_context(viewport={"width": width, "height": 900}, is_mobile=width < 500)
    page = context.new_page()
    page.goto(f"{live_server.url}/accounts/login/")
    page.fill("input[name=username]", submitter.username)
    page.fill("input[name=password]", PASSWORD)
    page.click("button[type=submit], input[type=submit]")
    pass_second_factor(page, submitter.username)
    page.goto(f"{live_server.url}/accounts/notifications/")
    rows = page.locator("table.notifications tbody tr")
    assert rows.count() == 3  # 13 events, three kinds of news
    texts = rows.all_inner_texts()
    assert sum("raw-log-missing" in t for t in texts) == 1 and "× 7" in next(
        t for t in texts if "raw-log" in t
    )
    assert "× 4" in next(t for t in texts if "accuracy-sample-count" in t)
    assert "× 2" in next(t for t in texts if "reviewer accepted" in t)
    assert "3 unread" in page.locator("h1").inner_text()
    assert page.evaluate("document.scrollingElement.scrollWidth") <= width
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"notifications-grouped-{width}.png"), full_page=True)
    context.close()
