"""HTML forms of the submitter pages; they validate input only, the services decide."""

from __future__ import annotations

from django import forms

from submissions.models import Benchmark, Membership, Submission, System
from submissions.selectors import benchmark_list, user_is_chair, user_org_ids


def systems_user_can_submit_for(user):
    """Systems of the organisations where the user is a submitter or org admin (all of them for the chair)."""
    systems = System.objects.select_related("organisation").order_by("organisation__name", "name")
    if user_is_chair(user):
        return systems
    return systems.filter(
        organisation_id__in=user_org_ids(user, roles=(Membership.Role.SUBMITTER, Membership.Role.ORG_ADMIN))
    )


class SystemChoiceField(forms.ModelChoiceField):
    def label_from_instance(self, obj: System) -> str:
        return f"{obj.name} ({obj.organisation.name})"


class BenchmarkChoiceField(forms.ModelChoiceField):
    def label_from_instance(self, obj: Benchmark) -> str:
        return f"{obj.display_name} ({obj.model_id})"


class SubmissionCreateForm(forms.Form):
    system = SystemChoiceField(queryset=System.objects.none(), empty_label=None,
                               help_text="Register new systems through the API or ask the chair.")
    benchmark = BenchmarkChoiceField(queryset=Benchmark.objects.none(), empty_label=None)
    division = forms.ChoiceField(choices=Submission.Division.choices, initial=Submission.Division.STANDARDIZED)
    availability = forms.ChoiceField(choices=Submission.Availability.choices,
                                     initial=Submission.Availability.AVAILABLE)
    title = forms.CharField(max_length=200, required=False,
                            help_text="Optional, for your own overview (e.g. the software release).")

    def __init__(self, *args, user, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["system"].queryset = systems_user_can_submit_for(user)
        self.fields["benchmark"].queryset = benchmark_list()


class WithdrawForm(forms.Form):
    reason = forms.CharField(max_length=2000, widget=forms.Textarea(attrs={"rows": 2}),
                             help_text="Reviewers and auditors read this.")
