"""HTML forms of the submitter pages; they validate input only, the services decide."""

from __future__ import annotations

from django import forms

from accounts.models import Organisation
from catalog.models import Benchmark
from catalog.selectors import benchmark_list
from submissions.models import Submission, System
from submissions.selectors import systems_for_new_drafts


def systems_user_can_submit_for(user):
    """Systems the user may open a draft for: their own organisations' (the chair's too, never every one)."""
    return systems_for_new_drafts(user)


class SystemChoiceField(forms.ModelChoiceField):
    def label_from_instance(self, obj: System) -> str:
        return f"{obj.name} ({obj.organisation.name})"


class BenchmarkChoiceField(forms.ModelChoiceField):
    def label_from_instance(self, obj: Benchmark) -> str:
        return f"{obj.display_name} ({obj.model_id})"


class SubmissionCreateForm(forms.Form):
    system = SystemChoiceField(
        queryset=System.objects.none(),
        empty_label=None,
        help_text="Not in the list? Register it on the Systems page first.",
    )
    benchmark = BenchmarkChoiceField(queryset=Benchmark.objects.none(), empty_label=None)
    division = forms.ChoiceField(
        choices=Submission.Division.choices, initial=Submission.Division.STANDARDIZED
    )
    availability = forms.ChoiceField(
        choices=Submission.Availability.choices, initial=Submission.Availability.AVAILABLE
    )
    title = forms.CharField(
        max_length=200,
        required=False,
        help_text="Optional, for your own overview (e.g. the software release).",
    )

    def __init__(self, *args, user, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["system"].queryset = systems_user_can_submit_for(user)
        self.fields["benchmark"].queryset = benchmark_list()
        # Read each list once: the select renders its options and, for its `required` attribute, looks at the
        # first one again (a comprehension, not list(): that would COUNT first). Validation reads the querysets.
        for name in ("system", "benchmark"):
            self.fields[name].widget.choices = [choice for choice in self.fields[name].choices]  # noqa: C416

    def has_systems(self) -> bool:
        """Whether the user has a system to open a draft for (else the page explains how to register one)."""
        return bool(self.fields["system"].widget.choices)


class SystemRegisterForm(forms.Form):
    organisation = forms.ModelChoiceField(queryset=Organisation.objects.none(), empty_label=None)
    name = forms.CharField(
        max_length=100, help_text="As in the bundle's results/<system>/ folder, e.g. Acme_AX-8000."
    )
    system_desc = forms.FileField(
        label="system_desc.json",
        help_text="The system description your run folders carry; checked against the checker's JSON Schema.",
    )

    def __init__(self, *args, organisations, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["organisation"].queryset = organisations


class SystemDescriptionForm(forms.Form):
    system_desc = forms.FileField(
        label="New system_desc.json",
        help_text="Replaces the current description; earlier ones stay in the history.",
    )


class EndpointForm(forms.Form):
    """The endpoint of the system under test (submissions.endpoints.endpoint_declare checks it)."""

    url = forms.CharField(
        label="Endpoint URL",
        max_length=500,
        help_text="Base URL of the OpenAI-compatible API, e.g. https://api.example.com (no credential in it).",
    )
    model_name = forms.CharField(label="Model name", max_length=200, help_text="As the endpoint serves it.")
    stays_up = forms.BooleanField(
        label="Stays up after publication", required=False, help_text="Auditors may re-measure it then."
    )
    public = forms.BooleanField(
        label="Public", required=False, help_text="Show URL and model name on the published result's page."
    )
    credential = forms.CharField(
        label="Credential (API key)",
        required=False,
        max_length=4096,
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "new-password"}),
        help_text="Kept encrypted, sent only to the endpoint's host, never shown again. Empty keeps the one set.",
    )
    clear_credential = forms.BooleanField(label="Remove the credential", required=False)
