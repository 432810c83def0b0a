"""Organisations and roles, the benchmark catalog, and the systems organisations register."""

from __future__ import annotations

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import RegexValidator
from django.db import models

SYSTEM_NAME_VALIDATOR = RegexValidator(
    r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$",
    "Use letters, digits, '_', '.' and '-' (as in the bundle's results/<system>/ folder), e.g. Acme_AX-8000.",
)
MODEL_ID_VALIDATOR = RegexValidator(
    r"^[a-z0-9][a-z0-9_.-]{0,63}$",
    "Use lower-case letters, digits, '_', '.' and '-' (as in the bundle's results/<system>/<model>/ folder).",
)


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


class Benchmark(models.Model):
    """One benchmark of the catalog: a model served at an endpoint, its dataset, tokenizer and rule set."""

    class Workload(models.TextChoices):
        CHAT = "chat", "Chat"
        REASONING = "reasoning", "Reasoning"
        AGENTIC_CODING = "agentic_coding", "Agentic coding"

    model_id = models.CharField(
        max_length=64,
        unique=True,
        validators=[MODEL_ID_VALIDATOR],
        help_text="As in the bundle's results/<system>/<model_id>/ folders, e.g. llama3_1-8b.",
    )
    display_name = models.CharField(max_length=200)
    dataset = models.CharField(max_length=200)
    dataset_sample_count = models.PositiveIntegerField(
        null=True, blank=True, help_text="Samples in one full pass over the dataset, when the rules fix it."
    )
    workload = models.CharField(max_length=32, choices=Workload.choices)
    tokenizer_path = models.CharField(
        max_length=300,
        help_text="A tokenizer.json shipped with the portal, relative to portal_data/tokenizers/.",
    )
    tokenizer_file = models.FileField(
        upload_to="tokenizers/",
        blank=True,
        help_text="Upload the model's real HuggingFace tokenizer.json here; it replaces the shipped file.",
    )
    tokenizer_is_placeholder = models.BooleanField(
        default=False,
        help_text="The tokenizer is a stand-in, not the model's own: token counts will not match real runs.",
    )
    ruleset_version = models.CharField(max_length=50, default="endpoints-v1.0")
    is_active = models.BooleanField(default=True, help_text="Open for new submissions.")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["model_id"]

    def __str__(self) -> str:
        return self.model_id

    def clean(self):
        path = self.tokenizer_path or ""
        if path.startswith("/") or ".." in path.replace("\\", "/").split("/"):
            raise ValidationError({"tokenizer_path": "Must be a path inside portal_data/tokenizers/."})


class System(models.Model):
    """A system under test registered by an organisation, with its system description (system_desc.json)."""

    organisation = models.ForeignKey(Organisation, on_delete=models.PROTECT, related_name="systems")
    name = models.CharField(
        max_length=100,
        validators=[SYSTEM_NAME_VALIDATOR],
        help_text="As in the bundle's results/<system>/ folder, e.g. Acme_AX-8000.",
    )
    description = models.JSONField(default=dict, blank=True, help_text="The system_desc.json content.")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["organisation", "name"], name="system_unique_name_per_org")]
        ordering = ["organisation__name", "name"]

    def __str__(self) -> str:
        return f"{self.organisation.slug}/{self.name}"

    def clean(self):
        if not isinstance(self.description, dict):
            raise ValidationError({"description": "The system description must be a JSON object."})
