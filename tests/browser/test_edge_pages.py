"""What a person sees when the portal refuses text it cannot store, in Chromium: a query string with a NUL
(the 400 page names the field) and a system_desc.json holding a NUL escape (the description form lists it as a
problem at its JSON pointer). Screenshots go to docs/screenshots/."""

from __future__ import annotations

import json

import pytest

from tests.browser.test_first_user_edges import _shot
from tests.browser.test_submitter_upload import _login
from tests.submissions.test_systems import sample_system_desc

pytestmark = pytest.mark.django_db(transaction=True)


def test_unstorable_text_is_a_page_that_names_the_field(
    chromium, live_server, plain_http, role_users, tmp_path
):
    from submissions.services import system_register

    system = system_register(
        organisation=role_users["organisations"]["acme"],
        name="Acme_AX-8000",
        description=sample_system_desc(),
        actor=role_users["submitter"],
    )
    page = chromium.new_context(viewport={"width": 1280, "height": 800}).new_page()
    base = live_server.url
    _login(page, base, "submitter")

    response = page.goto(f"{base}/leaderboard/slo/?benchmark=llama%00")
    assert response.status == 400
    assert page.get_by_role("heading", name="Bad request").is_visible()
    assert "benchmark contains a NUL character (\\u0000); remove that character" in page.inner_text("main")
    _shot(page, "bad-request-unstorable-text.png")

    bad = tmp_path / "system_desc.json"
    bad.write_text(json.dumps(sample_system_desc(), indent=2).replace('"driver": "', '"driver": "\\u0000', 1))
    page.goto(f"{base}/systems/{system.pk}/")
    page.set_input_files("#update-description input[type=file]", str(bad))
    page.click("#update-description button[type=submit]")
    main = page.inner_text("main")
    assert "json-nul" in main and "/node_types/0/driver" in main and "NUL character" in main
    page.locator("#update-description").scroll_into_view_if_needed()
    _shot(page, "system-desc-unstorable-text.png")
    system.refresh_from_db()
    assert system.description == sample_system_desc()
