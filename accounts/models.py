"""Organisations, memberships inside them, and the roles that span every organisation."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone
from knox.models import AbstractAuthToken, AuthTokenManager

from portal.visibility import VisibleManager


class Organisation(models.Model):
    """A submitting organisation (vendor, cloud, API provider, lab)."""

    objects = VisibleManager()

    class Kind(models.TextChoices):
        HARDWARE_VENDOR = "hardware_vendor", "Hardware vendor"
        HYPERSCALER = "hyperscaler", "Hyperscaler"
        NEOCLOUD = "neocloud", "Neocloud"
        MANAGED_API = "managed_api", "Managed API provider"
        ACADEMIC = "academic", "Academic / research"

    name = models.CharField(max_length=200, unique=True)
    slug = models.SlugField(max_length=100, unique=True)
    kind = models.CharField(max_length=32, choices=Kind.choices)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class Membership(models.Model):
    """A user's role inside one organisation; a user may hold several roles in several organisations."""

    objects = VisibleManager()

    class Role(models.TextChoices):
        SUBMITTER = "submitter", "Submitter"
        REVIEWER = "reviewer", "Reviewer"
        ORG_ADMIN = "org_admin", "Organisation admin"

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships")
    organisation = models.ForeignKey(Organisation, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=16, choices=Role.choices)
    created_at = models.DateTimeField(auto_now_add=True)
    added_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
        help_text="Who gave the role (the inviter, for a role taken through an invitation); empty: the system.",
    )

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["user", "organisation", "role"], name="membership_unique_role"),
        ]
        ordering = ["organisation__name", "role"]

    def __str__(self) -> str:
        return f"{self.user} - {self.organisation} ({self.role})"


class GlobalRole(models.Model):
    """A role across all organisations: auditor (sees every non-draft submission) or chair (runs the benchmark)."""

    objects = VisibleManager()

    class Role(models.TextChoices):
        AUDITOR = "auditor", "Auditor"
        CHAIR = "chair", "Chair"

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="global_roles")
    role = models.CharField(max_length=16, choices=Role.choices)
    granted_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["user", "role"], name="global_role_unique")]

    def __str__(self) -> str:
        return f"{self.user} ({self.role})"


class NotificationPreference(models.Model):
    """How a user wants their e-mail: one message per notification, or one daily digest."""

    objects = VisibleManager()

    class Delivery(models.TextChoices):
        IMMEDIATE = "immediate", "Immediately"
        DIGEST = "digest", "Daily digest"

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="notification_preference"
    )
    delivery = models.CharField(max_length=16, choices=Delivery.choices, default=Delivery.IMMEDIATE)

    def __str__(self) -> str:
        return f"{self.user}: {self.delivery}"


class Notification(models.Model):
    """Something a user should know (an assignment, a comment, a deadline, a decision); listed on their
    notifications page and e-mailed once, immediately or in the daily digest.

    A notification about a submission names it by `submission_ref`: its text is shown only while the reader may
    still read that submission's review (access.notifications renders it at read time), and its e-mail carries
    the submission number and a link, never a system name or a comment body."""

    objects = VisibleManager()

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="notifications")
    kind = models.CharField(max_length=48, help_text="Stable machine name, e.g. review.assigned.")
    # A plain id, no foreign key: accounts sits below submissions in the layers (docs/portal.md).
    submission_ref = models.PositiveBigIntegerField(
        null=True, blank=True, help_text="The submission this is about (its id = its number), if any."
    )
    subject = models.CharField(max_length=200)
    body = models.TextField(blank=True)
    url = models.CharField(max_length=300, blank=True, help_text="Site-relative link to the object.")
    # One event may be noticed by several jobs (a beat run twice): the key makes the second a no-op.
    dedupe_key = models.CharField(max_length=200, blank=True)
    # How many events of the same kind about the same thing this row stands for: a second one while the first is
    # unread is grouped into it (accounts.services.notifications.notify), never listed twice.
    times = models.PositiveIntegerField(default=1)
    created_at = models.DateTimeField(auto_now_add=True)
    read_at = models.DateTimeField(null=True, blank=True)
    emailed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["user", "dedupe_key"], condition=~models.Q(dedupe_key=""), name="notification_once"
            ),
        ]
        indexes = [models.Index(fields=["user", "read_at"], name="notification_unread_idx")]

    def __str__(self) -> str:
        return f"{self.user}: {self.subject}"


class ApiTokenManager(AuthTokenManager, VisibleManager):
    """knox's manager (create() makes the key and stores its digest) with `visible_to`."""


class ApiToken(AbstractAuthToken):
    """An API token a user made on /accounts/tokens/ (or an operator with `manage.py issue_token`).

    This is knox's token model (settings.KNOX_TOKEN_MODEL): the key is shown once and only its SHA-512 `digest`
    is kept, with `token_key`, the key's first 15 characters (its "ep_" prefix and 12 random hex digits), as
    knox's lookup index; `expiry` None never expires. Revoked tokens stay (with `revoked_at`) so that a request
    with one is told it was revoked, and the owner sees when."""

    objects = ApiTokenManager()

    class Scope(models.TextChoices):
        READ = "read", "Read only"
        WRITE = "write", "Read, upload and submit"

    # knox's digest is the primary key there; a plain id here names a token in URLs and the audit log.
    id = models.BigAutoField(primary_key=True)
    digest = models.CharField(max_length=128, unique=True)
    name = models.CharField(max_length=100)
    scope = models.CharField(max_length=8, choices=Scope.choices, default=Scope.READ)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created", "-id"]
        indexes = [models.Index(fields=["user", "revoked_at"], name="api_token_user_live_idx")]

    def __str__(self) -> str:
        return f"{self.user}: {self.name} ({self.scope})"

    @property
    def is_expired(self) -> bool:
        return self.expiry is not None and self.expiry <= timezone.now()

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None and not self.is_expired

    @property
    def can_write(self) -> bool:
        return self.scope == self.Scope.WRITE


class Invitation(models.Model):
    """An invitation by e-mail to join an organisation with some roles. Its link is signed
    (accounts.services.invitations.invitation_link), expires at `expires_at` and works once (`accepted_at`)."""

    objects = VisibleManager()

    organisation = models.ForeignKey(Organisation, on_delete=models.CASCADE, related_name="invitations")
    email = models.EmailField()
    roles = models.JSONField(
        default=list, help_text='Membership roles given on acceptance, e.g. ["submitter"].'
    )
    invited_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    # Part of the signed link: a new nonce (never reused) makes a leaked older link of the same row useless.
    nonce = models.CharField(max_length=32)
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    accepted_at = models.DateTimeField(null=True, blank=True)
    accepted_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"{self.email} to {self.organisation} ({', '.join(self.roles)})"

    @property
    def is_pending(self) -> bool:

        return self.accepted_at is None and self.revoked_at is None and self.expires_at > timezone.now()


class VerifiedAddress(models.Model):
    """An e-mail address a user proved is theirs by opening a signed link sent to it (an invitation is accepted
    only by an account whose current address is verified and is the one invited: docs/accounts.md)."""

    objects = VisibleManager()

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="verified_addresses"
    )
    email = models.EmailField(help_text="Kept lower-case.")
    verified_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-verified_at", "-id"]
        constraints = [models.UniqueConstraint(fields=["user", "email"], name="verified_address_once")]

    def __str__(self) -> str:
        return f"{self.user}: {self.email}"


class SignIn(models.Model):
    """One attempt to sign in to a known account: when, from where, with what, and how it ended."""

    objects = VisibleManager()

    class Outcome(models.TextChoices):
        SUCCESS = "success", "Signed in"
        BAD_PASSWORD = "bad_password", "Wrong password"
        BAD_CODE = "bad_code", "Wrong two-factor code"
        LOCKED = "locked", "Refused: locked after too many failures"

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="sign_ins")
    created_at = models.DateTimeField(auto_now_add=True)
    address = models.GenericIPAddressField(null=True, blank=True)
    user_agent = models.CharField(max_length=120, blank=True, help_text="Shortened to 120 characters.")
    outcome = models.CharField(max_length=16, choices=Outcome.choices)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["user", "-created_at"], name="sign_in_user_idx")]

    def __str__(self) -> str:
        return f"{self.user} {self.outcome} {self.created_at:%Y-%m-%d %H:%M}"
