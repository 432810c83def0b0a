"""What a first-time user notices: a wrong method explains itself, the favicon exists, roles read as words."""

from __future__ import annotations

import pytest

from tests.factories import SubmissionFactory

pytestmark = pytest.mark.django_db

POST_ONLY = ["/submissions/new/", "/systems/new/", "/accounts/logout/"]


@pytest.mark.parametrize("path", POST_ONLY)
def test_get_on_a_post_only_page_is_a_finished_page(client, role_users, path):
    client.force_login(role_users["submitter"])
    response = client.get(path)
    assert response.status_code == 405
    assert "POST" in response["Allow"]
    html = response.content.decode()
    assert "<title>Use the button on the page · Endpoints Portal</title>" in html
    assert 'class="site-header"' in html and "This address is the target of a button" in html


def test_get_on_a_lifecycle_action_links_back_to_the_submission(client, role_users):
    submission = SubmissionFactory(system__organisation=role_users["organisations"]["acme"])
    client.force_login(role_users["submitter"])
    for action in ("submit", "withdraw"):
        response = client.get(f"/submissions/{submission.pk}/{action}/")
        assert response.status_code == 405
        assert f'href="/submissions/{submission.pk}/"' in response.content.decode()


def test_anonymous_get_on_logout_explains(client):
    response = client.get("/accounts/logout/")
    assert response.status_code == 405 and b"Log out" in response.content


def test_api_keeps_json_405(client, role_users):
    client.force_login(role_users["submitter"])
    response = client.delete("/api/v1/benchmarks/")
    assert response.status_code == 405
    assert response["Content-Type"].startswith("application/json")


def test_favicon_is_served_and_linked_from_every_page(client, role_users):
    icon = client.get("/favicon.ico")
    assert icon.status_code == 200
    assert b"".join(icon.streaming_content if icon.streaming else [icon.content])[:4] == b"\x00\x00\x01\x00"
    assert client.get("/static/img/favicon.svg").status_code == 200
    client.force_login(role_users["submitter"])
    for page in ["/dashboard/", "/rules/", "/accounts/notifications/"]:
        html = client.get(page).content.decode()
        assert '<link rel="icon" href="/favicon.ico"' in html, page
        assert 'rel="icon" href="/static/img/favicon.svg"' in html, page
