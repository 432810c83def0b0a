"""The demo's accounts side (manage.py seed_demo): demo-chair and demo-auditor sign in with two-factor codes
from known demo secrets (printed by seed_demo; `manage.py totp_code demo-chair` prints the current code), and
AcmeCompute has one pending invitation. Safe to run again."""

from __future__ import annotations

import base64

from django.db import transaction

from accounts.models import Invitation, Membership, Organisation
from accounts.services.invitations import invitation_create, invitation_link
from audit.services import audit_event_record

# Demo-only authenticator secrets (hex, 20 bytes): never use them for a real account.
DEMO_TOTP_KEYS = {
    "demo-chair": "6465 6d6f 2d63 6861 6972 2d74 6f74 702d 6b65 7930".replace(" ", ""),
    "demo-auditor": "6465 6d6f 2d61 7564 6974 6f72 2d74 6f74 702d 6b31".replace(" ", ""),
}
DEMO_INVITEE = "new-member@example.com"


def demo_secret_base32(hex_key: str) -> str:
    return base64.b32encode(bytes.fromhex(hex_key)).decode().rstrip("=")


@transaction.atomic
def seed_demo_accounts(users: dict) -> dict[str, str]:
    """Authenticators for the demo's chair and auditor and a pending invitation; {"username": base32 secret,
    ..., "invitation": accept link}."""
    from django_otp.plugins.otp_totp.models import TOTPDevice

    out: dict[str, str] = {}
    for username, key in DEMO_TOTP_KEYS.items():
        user = users.get(username)
        if user is None:
            continue
        if not TOTPDevice.objects.filter(user=user, confirmed=True).exists():
            TOTPDevice.objects.create(user=user, name="Demo authenticator", key=key, confirmed=True)
            audit_event_record(
                actor=None, action="two_factor.enabled", obj=user, data={"user": username, "demo": True}
            )
        out[username] = demo_secret_base32(key)
    acme = Organisation.objects.filter(slug="acmecompute").first()
    chair = users.get("demo-chair")
    if acme is not None and chair is not None:
        invitation = Invitation.objects.filter(
            organisation=acme, email=DEMO_INVITEE, accepted_at__isnull=True, revoked_at__isnull=True
        ).first()
        if invitation is None or not invitation.is_pending:
            invitation = invitation_create(
                organisation=acme, email=DEMO_INVITEE, roles=[Membership.Role.REVIEWER], actor=chair
            )
        out["invitation"] = invitation_link(invitation)
    return out
