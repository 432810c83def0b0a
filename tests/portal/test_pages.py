"""Who reaches which page: one table of role x page; plus what the shared layout shows."""

import re

import pytest

pytestmark = pytest.mark.django_db

ROLES = ["anonymous", "submitter", "reviewer", "auditor", "chair"]
OK, LOGIN, FORBIDDEN, ADMIN_LOGIN, API_DENIED = "ok", "login", "forbidden", "admin-login", "api-denied"

# page -> expected outcome per role, in ROLES order.
ACCESS = {
    "/": [OK, OK, OK, OK, OK],
    "/leaderboard/": [OK, OK, OK, OK, OK],
    "/api/docs/": [OK, OK, OK, OK, OK],
    "/api/schema/": [OK, OK, OK, OK, OK],
    "/api/v1/benchmarks/": [OK, OK, OK, OK, OK],
    "/healthz": [OK, OK, OK, OK, OK],
    "/accounts/login/": [OK, OK, OK, OK, OK],
    "/accounts/password_reset/": [OK, OK, OK, OK, OK],
    "/dashboard/": [LOGIN, OK, OK, OK, OK],
    "/review/": [LOGIN, FORBIDDEN, OK, FORBIDDEN, FORBIDDEN],
    "/audit/": [LOGIN, FORBIDDEN, FORBIDDEN, OK, OK],
    "/admin/": [ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, OK],
    "/admin/audit/auditevent/": [ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, OK],
    "/api/v1/me/": [API_DENIED, OK, OK, OK, OK],
}
CASES = [(page, role, outcomes[i]) for page, outcomes in ACCESS.items() for i, role in enumerate(ROLES)]


def _outcome(response) -> str:
    if response.status_code == 200:
        return OK
    if response.status_code == 302:
        location = response["Location"]
        if location.startswith("/admin/login/"):
            return ADMIN_LOGIN
        if location.startswith("/accounts/login/"):
            return LOGIN
        return f"redirect:{location}"
    if response.status_code == 403:
        body = response.content.decode(errors="replace")
        return API_DENIED if '"code"' in body else FORBIDDEN
    if response.status_code == 401:
        return API_DENIED
    return str(response.status_code)


@pytest.mark.parametrize(("page", "role", "expected"), CASES, ids=[f"{p}-{r}" for p, r, _ in CASES])
def test_page_access_by_role(client, role_users, settings, page, role, expected):
    settings.CELERY_TASK_ALWAYS_EAGER = True  # /healthz must not depend on the broker here
    if role_users[role] is not None:
        client.force_login(role_users[role])
    assert _outcome(client.get(page)) == expected


def test_header_shows_user_and_organisation(client, role_users):
    client.force_login(role_users["submitter"])
    html = client.get("/").content.decode()
    assert "submitter" in html and "AcmeCompute" in html
    assert "Log out" in html
    assert 'href="/admin/"' not in html


def test_chair_sees_admin_and_audit_links(client, role_users):
    client.force_login(role_users["chair"])
    html = client.get("/").content.decode()
    assert 'href="/admin/"' in html
    assert 'href="/audit/"' in html


def test_pages_load_no_external_assets(client, role_users):
    client.force_login(role_users["chair"])
    for page in ["/", "/dashboard/", "/leaderboard/", "/audit/", "/accounts/login/"]:
        html = client.get(page).content.decode()
        external = re.findall(r'<(?:script|link|img)[^>]+(?:src|href)="(?:https?:)?//', html)
        assert not external, (page, external)


def test_static_css_is_served(client):
    response = client.get("/static/css/portal.css")
    assert response.status_code == 200


def test_login_and_password_reset_flow(client, role_users, mailoutbox):
    response = client.post("/accounts/login/", {"username": "submitter", "password": "correct-horse-battery"})
    assert response.status_code == 302 and response["Location"] == "/dashboard/"
    client.post("/accounts/logout/")
    assert _outcome(client.get("/dashboard/")) == LOGIN
    client.post("/accounts/password_reset/", {"email": "submitter@example.com"})
    assert len(mailoutbox) == 1
    assert "/accounts/reset/" in mailoutbox[0].body


def test_bad_input_on_account_pages_is_a_page_not_a_server_error(client, role_users, mailoutbox):
    garbage = client.post("/accounts/login/", {"username": "x" * 5000 + "\x00", "password": "\x00"})
    assert garbage.status_code == 200 and b"didn't match" in garbage.content
    assert client.post("/accounts/login/", {}).status_code == 200
    unknown = client.post("/accounts/password_reset/", {"email": "nobody@example.org"})
    assert unknown.status_code == 302 and mailoutbox == []  # same answer as a known address
    assert client.post("/accounts/password_reset/", {"email": "not an e-mail"}).status_code == 200
    assert b"Link expired" in client.get("/accounts/reset/zz/not-a-token/").content
    assert client.get("/audit/?page=abc", follow=True).status_code == 200
