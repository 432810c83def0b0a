"""Writes of the benchmark catalog (the chair's); each records an audit event."""

from __future__ import annotations

from django.db import transaction

from accounts.services.organisations import require_chair
from audit.services import audit_event_record
from catalog.models import Benchmark


@transaction.atomic
def benchmark_create(
    *,
    model_id: str,
    display_name: str,
    dataset: str,
    workload: str,
    tokenizer_path: str,
    tokenizer_is_placeholder: bool = False,
    ruleset_version: str = "endpoints-v1.0",
    dataset_sample_count: int | None = None,
    actor=None,
) -> Benchmark:
    require_chair(actor)
    benchmark = Benchmark(
        model_id=model_id,
        display_name=display_name,
        dataset=dataset,
        workload=workload,
        tokenizer_path=tokenizer_path,
        tokenizer_is_placeholder=tokenizer_is_placeholder,
        ruleset_version=ruleset_version,
        dataset_sample_count=dataset_sample_count,
    )
    benchmark.full_clean()
    benchmark.save()
    audit_event_record(actor=actor, action="benchmark.created", obj=benchmark, data={"model_id": model_id})
    return benchmark


@transaction.atomic
def benchmark_ruleset_set(*, benchmark: Benchmark, ruleset_version: str, actor=None) -> Benchmark:
    """Put a benchmark under another rule set (e.g. endpoints-v1.0-preview for a demo of short sample runs); the
    chair's, audited. Results already checked keep the rule set their check ran under."""
    require_chair(actor)
    previous = benchmark.ruleset_version
    benchmark.ruleset_version = ruleset_version
    benchmark.full_clean()
    benchmark.save(update_fields=["ruleset_version"])
    audit_event_record(
        actor=actor,
        action="benchmark.ruleset_changed",
        obj=benchmark,
        data={"model_id": benchmark.model_id, "from": previous, "to": ruleset_version},
    )
    return benchmark
