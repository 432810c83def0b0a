"""The preview upload form: a system of one's organisation, a benchmark, a name and the tool's files."""

from __future__ import annotations

from django import forms

from catalog.models import Benchmark
from submissions.models import System


class MultipleFileInput(forms.ClearableFileInput):
    allow_multiple_selected = True


class MultipleFileField(forms.FileField):
    def __init__(self, *args, **kwargs):
        kwargs.setdefault("widget", MultipleFileInput())
        super().__init__(*args, **kwargs)

    def clean(self, data, initial=None):
        single = super().clean
        if isinstance(data, list | tuple):
            return [single(d, initial) for d in data]
        return [single(data, initial)] if data else []


class PreviewUploadForm(forms.Form):
    name = forms.CharField(max_length=120, help_text="For your organisation, e.g. 'vLLM 0.11 sweep, 8 GPUs'.")
    system = forms.ModelChoiceField(queryset=System.objects.none())
    benchmark = forms.ModelChoiceField(
        queryset=Benchmark.objects.all(), help_text="Its published results are the curves drawn beside."
    )
    files = MultipleFileField(
        help_text="The tool's output: AIPerf profile_export*.json[l], GuideLLM benchmarks.json, inference-perf "
        "reports/*lifecycle_metrics.json, vllm bench --save-result JSON, or one .tar.gz/.zip of its folder."
    )

    def __init__(self, *args, org_ids=(), **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["system"].queryset = System.objects.filter(organisation_id__in=org_ids).select_related(
            "organisation"
        )
