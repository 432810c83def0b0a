"""Signing in: by username or e-mail; throttled per account and per address with a lockout the login form
explains, an e-mail to the owner, and the right password refused while locked (issue 11: 60 wrong passwords
in 21 s, then the right one logged in); every attempt on a known account listed on the account page; password
and e-mail changes from the pages."""

from __future__ import annotations

import re

import pytest
from django.core import mail
from django.test import Client

from accounts.models import SignIn
from audit.models import AuditEvent
from tests.factories import PASSWORD, UserFactory

pytestmark = pytest.mark.django_db


def _post_login(client: Client, username: str, password: str, address: str = "198.51.100.7"):
    return client.post(
        "/accounts/login/",
        {"username": username, "password": password},
        REMOTE_ADDR=address,
        HTTP_USER_AGENT="Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) "
        "Chrome/131.0.0.0 Safari/537.36 " + "padding " * 20,
    )


def test_sign_in_by_e_mail_address_any_case(role_users):
    client = Client()
    response = _post_login(client, "Submitter@Example.com", PASSWORD)
    assert response.status_code == 302 and response["Location"] == "/dashboard/"
    assert client.get("/dashboard/").status_code == 200


def test_an_e_mail_shared_by_two_accounts_signs_in_neither(role_users):
    UserFactory(username="twin", email="submitter@example.com")
    response = _post_login(Client(), "submitter@example.com", PASSWORD)
    assert response.status_code == 200 and "didn't match" in response.content.decode()


def test_lockout_after_the_limit_with_a_message_an_e_mail_and_the_right_password_refused(
    role_users, settings
):
    settings.PORTAL_LOGIN_MAX_FAILURES_PER_ACCOUNT = 5
    client = Client()
    for attempt in range(4):
        response = _post_login(client, "submitter", f"wrong-{attempt}")
        assert "didn't match" in response.content.decode()
    assert mail.outbox == []
    fifth = _post_login(client, "submitter", "wrong-5").content.decode()
    assert "Too many failed sign-ins: this account is locked for 15 more minutes" in fifth
    assert len(mail.outbox) == 1
    assert mail.outbox[0].to == ["submitter@example.com"] and "198.51.100.7" in mail.outbox[0].body
    right = _post_login(client, "submitter", PASSWORD)
    assert right.status_code == 200 and "this account is locked" in right.content.decode()
    assert client.get("/dashboard/").status_code == 302  # not signed in
    by_email = _post_login(Client(), "submitter@example.com", PASSWORD, address="203.0.113.9")
    assert "this account is locked" in by_email.content.decode()  # the same account by its other name
    assert len(mail.outbox) == 1  # one e-mail per lockout
    outcomes = list(SignIn.objects.filter(user=role_users["submitter"]).values_list("outcome", flat=True))
    assert outcomes == ["locked", "locked"] + ["bad_password"] * 5
    assert _post_login(Client(), "reviewer", PASSWORD).status_code == 302  # other accounts unaffected


def test_sixty_wrong_passwords_then_the_right_one_is_refused(role_users):
    """Issue 11's report, replayed with the default limits."""
    client = Client()
    for attempt in range(60):
        _post_login(client, "reviewer", f"guess-{attempt}")
    response = _post_login(client, "reviewer", PASSWORD)
    assert response.status_code == 200 and "Too many failed sign-ins" in response.content.decode()


def test_the_admin_login_is_the_same_throttled_sign_in(role_users, settings):
    settings.PORTAL_LOGIN_MAX_FAILURES_PER_ACCOUNT = 2
    client = Client()
    for _ in range(2):
        client.post("/admin/login/", {"username": "chair", "password": "wrong", "next": "/admin/"})
    refused = client.post("/admin/login/", {"username": "chair", "password": PASSWORD, "next": "/admin/"})
    assert "this account is locked" in refused.content.decode()
    assert client.get("/admin/").status_code == 302  # not signed in


def test_an_address_trying_many_accounts_is_locked_out(role_users, settings):
    settings.PORTAL_LOGIN_MAX_FAILURES_PER_ADDRESS = 6
    for index in range(6):
        _post_login(Client(), f"nobody-{index}", "guess", address="192.0.2.66")
    refused = _post_login(Client(), "submitter", PASSWORD, address="192.0.2.66")
    assert "Too many failed sign-ins from your address" in refused.content.decode()
    assert _post_login(Client(), "submitter", PASSWORD, address="192.0.2.67").status_code == 302


def test_a_success_forgets_the_accounts_failures(role_users, settings):
    settings.PORTAL_LOGIN_MAX_FAILURES_PER_ACCOUNT = 3
    for _ in range(2):
        _post_login(Client(), "submitter", "wrong")
    assert _post_login(Client(), "submitter", PASSWORD).status_code == 302
    for _ in range(2):
        _post_login(Client(), "submitter", "wrong")
    assert _post_login(Client(), "submitter", PASSWORD).status_code == 302


def test_wrong_two_factor_codes_count_towards_the_lockout(role_users, settings):
    settings.PORTAL_LOGIN_MAX_FAILURES_PER_ACCOUNT = 3
    client = Client()
    _post_login(client, "chair", PASSWORD)
    pages = [
        client.post("/accounts/login/verify/", {"code": "12345678abc"}).content.decode() for _ in range(3)
    ]
    assert "this account is locked" in pages[-1]
    assert len(mail.outbox) == 1 and mail.outbox[0].to == ["chair@example.com"]


def test_the_account_page_lists_recent_sign_ins_roles_and_two_factor(role_users):
    client = Client()
    _post_login(client, "submitter", "wrong")
    _post_login(client, "submitter", PASSWORD)
    page = client.get("/accounts/").content.decode()
    assert "AcmeCompute" in page and "Submitter" in page
    assert page.count("198.51.100.7") == 2 and "Wrong password" in page and "Signed in" in page
    agent = SignIn.objects.filter(user=role_users["submitter"]).first().user_agent
    assert len(agent) == 120 and agent.endswith("...") and agent in page  # shortened
    assert 'href="/accounts/tokens/"' in page and 'href="/accounts/two-factor/"' in page
    assert "Optional for your account" in page
    other = Client()
    other.force_login(role_users["reviewer"])
    assert "198.51.100.7" not in other.get("/accounts/").content.decode()  # one's own sign-ins only


def test_password_change_from_the_page(role_users):
    client = Client()
    client.force_login(role_users["submitter"])
    response = client.post(
        "/accounts/password_change/",
        {
            "old_password": PASSWORD,
            "new_password1": "a-new-long-passphrase",
            "new_password2": "a-new-long-passphrase",
        },
    )
    assert response.status_code == 302 and response["Location"] == "/accounts/password_change/done/"
    assert client.get("/dashboard/").status_code == 200  # still signed in
    assert AuditEvent.objects.filter(action="account.password_changed").count() == 1
    assert _post_login(Client(), "submitter", "a-new-long-passphrase").status_code == 302
    assert _post_login(Client(), "submitter", PASSWORD).status_code == 200


def test_e_mail_change_is_confirmed_from_the_new_address(role_users, django_capture_on_commit_callbacks):
    client = Client()
    client.force_login(role_users["submitter"])
    wrong = client.post("/accounts/email/", {"email": "new@example.org", "password": "nope"})
    assert "That is not your password" in wrong.content.decode() and mail.outbox == []
    client.post("/accounts/email/", {"email": "new@example.org", "password": PASSWORD})
    assert mail.outbox[-1].to == ["new@example.org"]
    link = re.search(r"http://[^/]+(/accounts/email/confirm/[^/]+/)", mail.outbox[-1].body).group(1)
    assert client.get(link).status_code == 200
    role_users["submitter"].refresh_from_db()
    assert role_users["submitter"].email == "submitter@example.com"  # not before the confirmation
    with django_capture_on_commit_callbacks(execute=True):
        client.post(link)
    role_users["submitter"].refresh_from_db()
    assert role_users["submitter"].email == "new@example.org"
    assert mail.outbox[-1].to == ["submitter@example.com"]  # the old address is told
    assert AuditEvent.objects.filter(action="account.email_changed").count() == 1
    again = client.post(link, follow=True)
    assert "The address changed since this link was sent" in again.content.decode()
    assert _post_login(Client(), "new@example.org", PASSWORD).status_code == 302
    stranger = Client()
    stranger.force_login(role_users["reviewer"])
    assert "another account" in stranger.post(link, follow=True).content.decode()
