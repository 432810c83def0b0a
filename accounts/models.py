"""Organisations, memberships inside them, and the roles that span every organisation."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class Organisation(models.Model):
    """A submitting organisation (vendor, cloud, API provider, lab)."""

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

    class Role(models.TextChoices):
        SUBMITTER = "submitter", "Submitter"
        REVIEWER = "reviewer", "Reviewer"
        ORG_ADMIN = "org_admin", "Organisation admin"

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships")
    organisation = models.ForeignKey(Organisation, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=16, choices=Role.choices)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["user", "organisation", "role"], name="membership_unique_role"),
        ]
        ordering = ["organisation__name", "role"]

    def __str__(self) -> str:
        return f"{self.user} - {self.organisation} ({self.role})"


class GlobalRole(models.Model):
    """A role across all organisations: auditor (sees every non-draft submission) or chair (runs the benchmark)."""

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
