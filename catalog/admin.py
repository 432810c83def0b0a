"""Admin for the chair: the benchmark catalog (tokenizers, rule-set versions, open or closed)."""

from django.contrib import admin

from audit.admin import AuditedModelAdmin
from catalog.models import Benchmark


@admin.register(Benchmark)
class BenchmarkAdmin(AuditedModelAdmin):
    list_display = (
        "model_id",
        "display_name",
        "workload",
        "ruleset_version",
        "tokenizer_is_placeholder",
        "is_active",
    )
    list_filter = ("workload", "ruleset_version", "tokenizer_is_placeholder", "is_active")
    search_fields = ("model_id", "display_name")
