"""An agentic run in the browser (real Chromium): the raw-log browser's conversation view of the Zephyr ZX-2 HTTP-500
run. Screenshots go to PORTAL_SCREENSHOT_DIR (docs/screenshots/review-conversation.png)."""

from __future__ import annotations

from pathlib import Path

from tests.browser.test_reviewer_pages import _shot
from tests.browser.test_submitter_upload import _login
from tests.factories import VersionFileFactory
from tests.review.conftest import review_world  # noqa: F401 - the fixture

AGENTIC = Path(__file__).resolve().parents[1] / "checker" / "fixtures" / "agentic" / "run_archives"
NAME = "ZX-2_agentic_c2_http500.tar.gz"


def test_a_reviewer_reads_one_conversation_of_an_agentic_raw_log(
    chromium,
    live_server,
    review_world,  # noqa: F811 - the imported fixture
    plain_http,
):
    version = review_world["version"]
    stored = VersionFileFactory(
        version=version, original_filename=NAME, content=(AGENTIC / NAME).read_bytes()
    )
    context = chromium.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    base = live_server.url
    _login(page, base, "reviewer")
    browser = f"{base}/review/submissions/{review_world['submission'].pk}/versions/{version.number}/files/{stored.position}/"
    page.goto(f"{browser}?member=ZX-2_agentic_c2_http500/events.jsonl")
    page.get_by_role("link", name="scikit-learn__scikit-learn-25973").click()
    turns = page.locator("section.conversation")
    turns.wait_for()
    text = turns.inner_text()
    assert "tool call bash({})" in text and "HTTP 500" in text and "TurnAbortedByPriorFailure" in text
    _shot(page, "review-conversation.png", full_page=False)
    _shot(turns, "review-conversation-turns.png")
    context.close()
