"""Account events in the audit log (issue 19): a password reset (of the chair's account too), a password set by
the chair in the admin, a two-factor reset by the chair: each an audit event with the real actor, written with
the change, and the account's owner told by e-mail."""

from __future__ import annotations

import re

import pytest
from django.core import mail
from django.test import Client

from audit.models import AuditEvent
from tests.accounts.support import totp_device_for
from tests.factories import PASSWORD

pytestmark = pytest.mark.django_db


def _reset_password_by_email(email: str, new_password: str, capture) -> Client:
    client = Client()
    with capture(execute=True):
        assert client.post("/accounts/password_reset/", {"email": email}).status_code == 302
    link = re.search(r"http://[^/\s]+(/accounts/reset/[^/\s]+/[^/\s]+/)", mail.outbox[-1].body).group(1)
    form = client.get(link)
    assert form.status_code == 302  # Django moves the token into the session
    with capture(execute=True):
        done = client.post(form["Location"], {"new_password1": new_password, "new_password2": new_password})
    assert done.status_code == 302 and done["Location"] == "/accounts/reset/done/"
    return client


def test_a_password_reset_of_the_chair_is_audited_with_the_chair_as_actor(
    role_users, django_capture_on_commit_callbacks
):
    chair = role_users["chair"]
    before = AuditEvent.objects.count()
    _reset_password_by_email(chair.email, "a-brand-new-passphrase-9", django_capture_on_commit_callbacks)
    chair.refresh_from_db()
    assert chair.check_password("a-brand-new-passphrase-9")
    event = AuditEvent.objects.get(action="account.password_reset")
    assert event.actor == chair and event.object_id == str(chair.pk)
    assert event.data["global_roles"] == ["chair"]
    assert AuditEvent.objects.count() == before + 1
    assert mail.outbox[-1].to == [chair.email]
    assert "was reset with a link e-mailed to this address" in mail.outbox[-1].body
    # The reset signs nobody in: the chair still needs the second factor.
    signed_in = Client()
    assert signed_in.get("/review/chair/")["Location"].startswith("/accounts/login/")
    step = signed_in.post("/accounts/login/", {"username": "chair", "password": "a-brand-new-passphrase-9"})
    assert step["Location"].startswith("/accounts/login/verify/")


def test_a_password_reset_of_anyone_is_audited(role_users, django_capture_on_commit_callbacks):
    submitter = role_users["submitter"]
    _reset_password_by_email(submitter.email, "another-long-passphrase-3", django_capture_on_commit_callbacks)
    event = AuditEvent.objects.get(action="account.password_reset")
    assert event.actor == submitter and event.data == {"user": "submitter", "global_roles": []}


def test_the_chair_setting_a_password_in_the_admin_is_audited(role_users, django_capture_on_commit_callbacks):
    chair, reviewer = role_users["chair"], role_users["reviewer"]
    client = Client()
    client.force_login(chair)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            f"/admin/auth/user/{reviewer.pk}/password/",
            {
                "password1": "set-by-the-chair-77",
                "password2": "set-by-the-chair-77",
                "usable_password": "true",
            },
        )
    assert response.status_code == 302
    reviewer.refresh_from_db()
    assert reviewer.check_password("set-by-the-chair-77")
    event = AuditEvent.objects.get(action="account.password_set_by_admin")
    assert event.actor == chair and event.object_id == str(reviewer.pk) and event.data["set_by"] == "chair"
    assert mail.outbox[-1].to == [reviewer.email] and "was set by chair" in mail.outbox[-1].body
    assert not reviewer.check_password(PASSWORD)


def test_the_chair_resets_a_users_two_factor_from_the_admin(role_users):
    chair, auditor = role_users["chair"], role_users["auditor"]
    totp_device_for(auditor)
    client = Client()
    client.force_login(chair)
    response = client.post(
        "/admin/auth/user/", {"action": "two_factor_reset", "_selected_action": [auditor.pk]}
    )
    assert response.status_code == 302
    assert not auditor.totpdevice_set.exists()
    event = AuditEvent.objects.get(action="two_factor.disabled")
    assert event.actor == chair and event.object_id == str(auditor.pk)


def test_a_password_change_is_audited_in_the_same_transaction(role_users):
    submitter = role_users["submitter"]
    client = Client()
    client.force_login(submitter)
    response = client.post(
        "/accounts/password_change/",
        {
            "old_password": PASSWORD,
            "new_password1": "changed-passphrase-42",
            "new_password2": "changed-passphrase-42",
        },
    )
    assert response.status_code == 302
    assert client.get("/accounts/").status_code == 200  # still signed in
    event = AuditEvent.objects.get(action="account.password_changed")
    assert event.actor == submitter
