"""Two-factor sign-in: required for the chair and auditors (no page, no action until it is set up and the
session verified; API tokens act only once the owner has it), optional for everyone else; the two-step sign-in,
recovery codes, setup from the QR code."""

from __future__ import annotations

import re

import pytest
from django.test import Client
from django_otp.oath import totp
from django_otp.plugins.otp_static.models import StaticToken
from django_otp.plugins.otp_totp.models import TOTPDevice

from accounts.models import SignIn
from audit.models import AuditEvent
from review.models import Attestation, Waiver
from submissions.models import Submission
from tests.accounts.support import force_login_unverified, totp_code, totp_device_for, verified_session
from tests.factories import PASSWORD, GlobalRoleFactory, UserFactory
from tests.submissions.support import api_client

pytestmark = pytest.mark.django_db


def _without_second_factor(user):
    TOTPDevice.objects.filter(user=user).delete()
    return user


def _sign_in(client: Client, username: str, password: str = PASSWORD):
    return client.post("/accounts/login/", {"username": username, "password": password})


# --- The chair and auditors cannot act without a verified session ---------------------------------------


@pytest.mark.parametrize("role", ["chair", "auditor"])
def test_without_two_factor_every_page_sends_the_chair_and_auditors_to_set_it_up(role_users, role):
    client = Client()
    force_login_unverified(client, _without_second_factor(role_users[role]))
    response = client.get("/review/audit/")
    assert response.status_code == 302
    assert response["Location"] == "/accounts/two-factor/?next=%2Freview%2Faudit%2F"
    page = client.get("/accounts/two-factor/").content.decode()
    assert 'data-two-factor="required"' in page and "<svg" in page  # the QR code, drawn by the server
    assert client.get("/accounts/login/").status_code == 200  # the sign-in pages stay open


def test_with_an_authenticator_but_an_unverified_session_the_chair_is_asked_for_the_code(role_users):
    client = Client()
    force_login_unverified(client, role_users["chair"])  # role_users' chair has an authenticator
    response = client.get("/review/chair/")
    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/verify/")


def test_an_unverified_chair_cannot_waive_or_reject_nor_an_auditor_attest_and_verified_they_can(
    role_users, audit_world
):
    ready, waiver, in_review = audit_world["ready"], audit_world["waiver"], audit_world["in_review"]
    chair, auditor = Client(), Client()
    force_login_unverified(chair, role_users["chair"])
    force_login_unverified(auditor, role_users["auditor"])
    actions = [
        (chair, f"/review/waivers/{waiver.pk}/decide/", {"decision": "grant", "reason": "Short demo run."}),
        (chair, f"/review/audit/{in_review.pk}/reject/", {"reason": "Wrong system."}),
        (auditor, f"/review/audit/{ready.pk}/attest/", {"notes": "Checked the logs."}),
    ]
    for client, url, data in actions:
        response = client.post(url, data)
        assert response.status_code == 403, url
        assert "two-factor" in response.content.decode()
    assert Waiver.objects.get(pk=waiver.pk).status == "requested"
    assert Submission.objects.get(pk=in_review.pk).status == "in_review"
    assert not Attestation.objects.exists() and Submission.objects.get(pk=ready.pk).status == "peer_reviewed"

    verified_session(chair, role_users["chair"])  # the same requests from verified sessions go through
    verified_session(auditor, role_users["auditor"])
    for client, url, data in actions:
        assert client.post(url, data).status_code == 302, url
    assert Waiver.objects.get(pk=waiver.pk).status == "granted"
    assert Submission.objects.get(pk=in_review.pk).status == "rejected"
    assert Submission.objects.get(pk=ready.pk).status == "audited"


def test_an_unverified_session_cannot_act_through_the_api_either(role_users, audit_world):
    client = Client()
    force_login_unverified(client, role_users["auditor"])
    response = client.post(
        f"/api/v1/audit/{audit_world['ready'].pk}/attest/", {"notes": "x"}, content_type="application/json"
    )
    assert response.status_code == 403 and response.json()["code"] == "two_factor_required"
    assert client.get("/api/v1/me/").status_code == 200  # reading stays open


def test_an_auditor_token_acts_only_once_its_owner_has_two_factor(role_users, audit_world):
    chair = _without_second_factor(role_users["auditor"])
    url = f"/api/v1/audit/{audit_world['ready'].pk}/attest/"
    refused = api_client(chair).post(url, {"notes": "Checked."}, format="json")
    assert refused.status_code == 403 and refused.json()["code"] == "two_factor_required"
    assert api_client(chair).get("/api/v1/me/").status_code == 200
    assert not Attestation.objects.exists()
    totp_device_for(chair)
    assert api_client(chair).post(url, {"notes": "Checked."}, format="json").status_code == 201


# --- The two-step sign-in -------------------------------------------------------------------------------


def test_an_account_with_two_factor_signs_in_with_password_then_code(role_users):
    client = Client()
    response = _sign_in(client, "auditor")
    assert response.status_code == 302 and response["Location"] == "/accounts/login/verify/"
    assert client.get("/dashboard/").status_code == 302  # not signed in yet
    wrong = client.post("/accounts/login/verify/", {"code": "000000"})
    assert wrong.status_code == 200 and "does not match" in wrong.content.decode()
    device = TOTPDevice.objects.get(user=role_users["auditor"])
    right_too_soon = str(totp(device.bin_key, step=device.step, t0=device.t0, digits=device.digits)).zfill(6)
    too_soon = client.post("/accounts/login/verify/", {"code": right_too_soon})
    assert (
        "Too many wrong codes in a row: wait until" in too_soon.content.decode()
    )  # django-otp's growing delay
    right = client.post(
        "/accounts/login/verify/", {"code": totp_code(totp_device_for(role_users["auditor"]))}
    )
    assert (
        right.status_code == 302 and right["Location"] == "/review/audit/"
    )  # the auditor lands on the queue
    assert client.get("/review/audit/").status_code == 200  # verified: the auditor acts
    outcomes = list(SignIn.objects.filter(user=role_users["auditor"]).values_list("outcome", flat=True))
    assert outcomes == ["success", "bad_code"]  # newest first


def test_a_recovery_code_signs_in_once(role_users):
    chair = role_users["chair"]
    client = Client()
    client.force_login(chair)
    codes_page = client.post("/accounts/two-factor/recovery-codes/").content.decode()
    codes = re.findall(r"<li>([a-z0-9]{8})</li>", codes_page)
    assert len(codes) == 10 and StaticToken.objects.filter(device__user=chair).count() == 10
    client.post("/accounts/logout/")
    _sign_in(client, "chair")
    response = client.post("/accounts/login/verify/", {"code": codes[0]})
    assert response.status_code == 302
    assert client.get("/review/chair/").status_code == 200
    client.post("/accounts/logout/")
    _sign_in(client, "chair")
    again = client.post("/accounts/login/verify/", {"code": codes[0]})
    assert again.status_code == 200 and "does not match" in again.content.decode()


def test_the_chair_sets_up_two_factor_from_the_qr_code_and_then_acts(role_users):
    chair = _without_second_factor(role_users["chair"])
    client = Client()
    response = _sign_in(client, "chair")
    assert response.status_code == 302 and response["Location"].startswith("/accounts/two-factor/")
    page = client.get("/accounts/two-factor/").content.decode()
    assert "<svg" in page and "data-secret" in page
    device = TOTPDevice.objects.get(user=chair, confirmed=False)
    assert client.get("/review/chair/").status_code == 302  # still not allowed
    bad = client.post("/accounts/two-factor/", {"code": "123456"}).content.decode()
    assert "does not match" in bad and not TOTPDevice.objects.filter(confirmed=True, user=chair).exists()
    code = str(totp(device.bin_key, step=device.step, t0=device.t0, digits=device.digits)).zfill(6)
    done = client.post("/accounts/two-factor/", {"code": code}).content.decode()
    assert "data-recovery-codes" in done and len(re.findall(r"<li>[a-z0-9]{8}</li>", done)) == 10
    assert client.get("/review/chair/").status_code == 200  # the session is verified by the setup
    assert AuditEvent.objects.filter(action="two_factor.enabled", object_id=str(chair.pk)).exists()


def test_two_factor_is_optional_for_a_submitter_and_can_be_turned_off(role_users):
    submitter = role_users["submitter"]
    client = Client()
    client.force_login(submitter)
    assert client.get("/dashboard/").status_code == 200  # no second factor needed
    page = client.get("/accounts/two-factor/").content.decode()
    assert 'data-two-factor="off"' in page
    device = TOTPDevice.objects.get(user=submitter, confirmed=False)
    client.post("/accounts/two-factor/", {"code": totp_code(device)})
    assert TOTPDevice.objects.get(pk=device.pk).confirmed
    refused = client.post("/accounts/two-factor/off/", {"password": "wrong"}, follow=True)
    assert "stays on" in refused.content.decode() and TOTPDevice.objects.filter(user=submitter).exists()
    client.post("/accounts/two-factor/off/", {"password": PASSWORD})
    assert not TOTPDevice.objects.filter(user=submitter).exists()
    assert AuditEvent.objects.filter(action="two_factor.disabled").exists()


def test_the_chair_cannot_turn_two_factor_off(role_users):
    client = Client()
    client.force_login(role_users["chair"])
    page = client.get("/accounts/two-factor/").content.decode()
    assert "Turn off two-factor" not in page
    response = client.post("/accounts/two-factor/off/", {"password": PASSWORD}, follow=True)
    assert "must keep two-factor" in response.content.decode()
    assert TOTPDevice.objects.filter(user=role_users["chair"], confirmed=True).exists()


def test_a_new_auditor_is_held_to_two_factor_at_once(role_users):
    """The role granted to a signed-in user takes effect on their next request."""
    user = UserFactory(username="fresh")
    client = Client()
    client.force_login(user)
    assert client.get("/dashboard/").status_code == 200
    GlobalRoleFactory(user=user, role="auditor", second_factor=False)
    assert client.get("/dashboard/").status_code == 302
