"""The accounts pages in Chromium: an organisation admin invites by e-mail and the invitee joins from the link
with a new account; the chair, signed in with a password alone, is sent to set up two-factor sign-in, scans
nothing but types the code the secret gives, keeps the recovery codes and then reaches the chair's pages; the
code step of the sign-in; the lockout message. Screenshots: docs/screenshots/accounts-*.png."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.core import mail
from django_otp.oath import totp
from django_otp.plugins.otp_totp.models import TOTPDevice

from accounts.models import Membership
from tests.factories import PASSWORD, MembershipFactory, SignInFactory, UserFactory

pytestmark = pytest.mark.django_db(transaction=True)
SHOTS = Path(__file__).resolve().parents[2] / "docs" / "screenshots"


def _sign_in(page, base: str, username: str, password: str = PASSWORD) -> None:
    page.goto(f"{base}/accounts/login/")
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", password)
    page.click("main button[type=submit]")


def test_invite_then_accept_with_a_new_account(chromium, live_server, plain_http, role_users, mailoutbox):
    SHOTS.mkdir(parents=True, exist_ok=True)
    base = live_server.url
    admin = UserFactory(username="acme-admin")
    MembershipFactory(user=admin, organisation=role_users["organisations"]["acme"], role="org_admin")
    context = chromium.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    _sign_in(page, base, "acme-admin@example.com")  # by e-mail address
    page.wait_for_url(f"{base}/dashboard/")
    page.goto(f"{base}/accounts/organisations/acmecompute/")
    page.fill("form[data-form=invite] input[name=email]", "newcomer@example.org")
    page.check("form[data-form=invite] input[value=reviewer]")
    page.click("form[data-form=invite] button[type=submit]")
    page.wait_for_selector("tr[data-invitation='newcomer@example.org']")
    assert "Invitation e-mailed to newcomer@example.org" in page.inner_text(".messages")
    page.screenshot(path=str(SHOTS / "accounts-organisation.png"), full_page=True)

    assert len(mail.outbox) == 1 and mail.outbox[0].to == ["newcomer@example.org"]
    link = re.search(r"http://[^/\s]+(/accounts/invitations/[^/\s]+/)", mail.outbox[0].body).group(1)
    invitee = chromium.new_context(viewport={"width": 1280, "height": 900}).new_page()
    invitee.goto(f"{base}{link}")
    assert "Join AcmeCompute" in invitee.inner_text("main")
    invitee.fill("input[name=username]", "newcomer")
    invitee.fill("input[name=password1]", "a-long-passphrase-1")
    invitee.fill("input[name=password2]", "a-long-passphrase-1")
    invitee.screenshot(path=str(SHOTS / "accounts-invitation.png"), full_page=True)
    invitee.click("form[data-form=register] button[type=submit]")
    invitee.wait_for_url(f"{base}/accounts/")
    assert "open it to confirm the address and join AcmeCompute" in invitee.inner_text(".messages")
    # The account joins once the invited address is confirmed (the link e-mailed to it).
    assert mail.outbox[-1].to == ["newcomer@example.org"]
    confirm = re.search(r"http://[^/\s]+(/accounts/email/verify/[^/\s]+/)", mail.outbox[-1].body).group(1)
    invitee.goto(f"{base}{confirm}")
    invitee.screenshot(path=str(SHOTS / "accounts-email-verify.png"), full_page=True)
    invitee.click("form[data-form=email-verify] button[type=submit]")
    invitee.wait_for_url(f"{base}/accounts/")
    assert "Welcome to AcmeCompute" in invitee.inner_text(".messages")
    roles = invitee.inner_text("[data-section=roles]")
    assert "AcmeCompute" in roles and "Reviewer" in roles and "Submitter" in roles
    SignInFactory(
        user=Membership.objects.filter(user__username="newcomer").first().user, outcome="bad_password"
    )
    invitee.reload()
    invitee.screenshot(path=str(SHOTS / "accounts-account.png"), full_page=True)

    invitee.goto(f"{base}{link}")  # the link worked once
    assert "already been used" in invitee.inner_text("main")
    page.goto(f"{base}/accounts/organisations/acmecompute/")
    row = page.inner_text("tr[data-member=newcomer]")
    assert "invited by acme-admin" in row and "Reviewer" in row
    page.screenshot(path=str(SHOTS / "accounts-members.png"), full_page=True)
    assert not errors, errors


def test_the_chair_sets_up_two_factor_then_signs_in_with_a_code(
    chromium, live_server, plain_http, role_users
):
    SHOTS.mkdir(parents=True, exist_ok=True)
    base = live_server.url
    chair = role_users["chair"]
    TOTPDevice.objects.filter(user=chair).delete()
    page = chromium.new_context(viewport={"width": 1280, "height": 900}).new_page()
    _sign_in(page, base, "chair")
    page.wait_for_url(re.compile(r"/accounts/two-factor/"))
    assert page.locator("[data-qr] svg").count() == 1  # drawn by the server, no script, no CDN
    assert "set up two-factor sign-in before you can act" in page.inner_text("main")
    page.screenshot(path=str(SHOTS / "accounts-two-factor-setup.png"), full_page=True)
    page.goto(f"{base}/review/chair/")
    assert "/accounts/two-factor/" in page.url  # nothing else until it is set up

    device = TOTPDevice.objects.get(user=chair, confirmed=False)
    secret_shown = page.inner_text("[data-secret]").replace(" ", "")
    import base64

    assert base64.b32decode(secret_shown + "=" * (-len(secret_shown) % 8)) == device.bin_key
    page.fill("input[name=code]", str(totp(device.bin_key)).zfill(6))
    page.click("main form.stacked button[type=submit]")
    page.wait_for_selector("[data-recovery-codes]")
    assert len(page.locator(".codes li").all()) == 10
    page.screenshot(path=str(SHOTS / "accounts-recovery-codes.png"), full_page=True)
    page.goto(f"{base}/review/chair/")
    assert page.url == f"{base}/review/chair/"

    page.click("text=Log out")
    _sign_in(page, base, "chair")
    page.wait_for_url(re.compile(r"/accounts/login/verify/"))
    page.screenshot(path=str(SHOTS / "accounts-verify.png"), full_page=True)
    TOTPDevice.objects.filter(pk=device.pk).update(last_t=-1)  # the same 30-second step as the setup
    page.fill("input[name=code]", str(totp(device.bin_key)).zfill(6))
    page.click("main button[type=submit]")
    page.wait_for_url(f"{base}/review/chair/")  # the chair lands on the chair's dashboard
    page.goto(f"{base}/accounts/")
    assert "On" in page.inner_text("[data-section=two-factor]")


def test_the_lockout_message_on_the_login_form(
    chromium, live_server, plain_http, role_users, settings, mailoutbox
):
    SHOTS.mkdir(parents=True, exist_ok=True)
    settings.PORTAL_LOGIN_MAX_FAILURES_PER_ACCOUNT = 3
    base = live_server.url
    page = chromium.new_context(viewport={"width": 1280, "height": 700}).new_page()
    for attempt in range(3):
        _sign_in(page, base, "submitter", f"wrong-{attempt}")
        page.wait_for_selector("[data-login-error]")
    _sign_in(page, base, "submitter")  # the right password, refused
    page.wait_for_selector("[data-login-error=locked]")
    assert "this account is locked" in page.inner_text("[data-login-error]")
    assert page.url.endswith("/accounts/login/")
    assert len(mail.outbox) == 1
    page.screenshot(path=str(SHOTS / "accounts-login-locked.png"), full_page=True)
