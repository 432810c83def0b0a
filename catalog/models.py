"""The benchmark catalog: one row per model served at an endpoint, with its dataset, tokenizer and rule set."""

from __future__ import annotations

import functools

from django.core.exceptions import ValidationError
from django.core.validators import RegexValidator
from django.db import models

from catalog.tokenizer_packages import TokenizerUnavailable, packaged
from checker.judge.ruleset import RulesetError, available_rulesets, load_ruleset
from portal.visibility import VisibleManager

PLACEHOLDER_TOKENIZER_NOTE = (
    "Token counts for this benchmark use a placeholder tokenizer, not the model's own: input and output "
    "token counts, TPOT and tokens per second will not match the model's real tokenizer until the chair "
    "installs it."
)

MODEL_ID_VALIDATOR = RegexValidator(
    r"^[a-z0-9][a-z0-9_.-]{0,63}$",
    "Use lower-case letters, digits, '_', '.' and '-' (as in the bundle's results/<system>/<model>/ folder).",
)


@functools.lru_cache(maxsize=32)
def ruleset_is_preview(name: str) -> bool:
    """Whether the packaged rule set `name` is a preview (demos, tests of short runs; never official). An unknown
    name is not a preview: Benchmark.clean() refuses it, and a stored one reads as what it claims."""
    try:
        return load_ruleset(name).preview
    except RulesetError:
        return False


class Benchmark(models.Model):
    """One benchmark of the catalog: a model served at an endpoint, its dataset, tokenizer and rule set."""

    objects = VisibleManager()

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
    # A rule set under checker/rulesets/ (validated in clean()): endpoints-v1.0 (official) or a preview such as
    # endpoints-v1.0-preview (demos and tests of short sample runs: never official, never ranked with official results).
    ruleset_version = models.CharField(max_length=50, default="endpoints-v1.0")
    is_active = models.BooleanField(default=True, help_text="Open for new submissions.")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["model_id"]

    def __str__(self) -> str:
        return self.model_id

    @property
    def tokenizer_note(self) -> str:
        """What a reader must know about this benchmark's token counts; empty when the tokenizer is the model's."""
        return PLACEHOLDER_TOKENIZER_NOTE if self.tokenizer_is_placeholder else ""

    @property
    def is_preview(self) -> bool:
        """The benchmark is checked under a preview rule set: its board is marked so and never official."""
        return ruleset_is_preview(self.ruleset_version)

    def clean(self):
        if self.ruleset_version not in available_rulesets():
            raise ValidationError(
                {"ruleset_version": f"Unknown rule set; choose one of {', '.join(available_rulesets())}."}
            )
        path = self.tokenizer_path or ""
        try:
            if packaged(path) is not None:
                return
        except TokenizerUnavailable as exc:
            raise ValidationError({"tokenizer_path": str(exc)}) from exc
        if path.startswith("/") or ".." in path.replace("\\", "/").split("/"):
            raise ValidationError({"tokenizer_path": "Must be a path inside portal_data/tokenizers/."})
