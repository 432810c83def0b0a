"""The Zephyr ZX-2 agentic runs uploaded as a submitter would: a real `celery worker` checks them with the benchmark's
tokenizer folder (tokenizer.json, tokenizer_config.json, chat_template.jinja) and finds what `portal check` finds,
with no schema or raw-log-consistency error, every recomputed number equal to the client's own."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.conf import settings

from checker.cli.local_check import check
from submissions.models import CheckRun
from tests.factories import BenchmarkFactory, SystemFactory
from tests.submissions.conftest import wait_for_run
from tests.submissions.support import api_client
from tests.submissions.test_parity import _key, _upload_version

pytestmark = pytest.mark.django_db(transaction=True)

FIXTURES = Path(__file__).resolve().parents[1] / "checker" / "fixtures"
ARCHIVES = [
    FIXTURES / "agentic" / "run_archives" / f"ZX-2_agentic_c{c}.tar.gz" for c in (1, 2, 8)
]  # the curve of the official bundle


def test_an_agentic_upload_is_checked_as_portal_check_checks_it(role_users, live_pipeline):
    from submissions.services import submission_create

    benchmark = BenchmarkFactory(
        model_id="qwen3_6-35b-a3b",
        display_name="Qwen3.6-35B-A3B",
        dataset="Agentic coding sessions (multi-turn, tool calls)",
        workload="agentic_coding",
        tokenizer_path="sample-bpe-4k",  # the folder: the chat template counts the message prompts
        ruleset_version="endpoints-v1.0-preview",
    )
    system = SystemFactory(organisation=role_users["organisations"]["acme"], name="Zephyr_ZX-2")
    draft = submission_create(actor=role_users["submitter"], system=system, benchmark=benchmark)
    worker = live_pipeline()
    version_id = _upload_version(api_client(role_users["submitter"]), draft.pk, ARCHIVES)
    run = wait_for_run(
        CheckRun.objects.get(version_id=version_id).pk,
        statuses=(CheckRun.Status.PASSED, CheckRun.Status.FAILED, CheckRun.Status.ERROR),
        workers=[worker],
    )
    assert run.status in (CheckRun.Status.PASSED, CheckRun.Status.FAILED), run.error_message
    rows = list(
        run.findings.order_by("id").values("rule", "severity", "file", "line", "pointer", "point", "message")
    )
    assert [
        r["rule"]
        for r in rows
        if r["rule"].startswith(("schema-", "raw-log-", "tokenizer-", "metric-consistency"))
    ] == []
    command = check(
        ARCHIVES,
        tokenizer=FIXTURES / "tokenizer",
        ruleset=benchmark.ruleset_version,
        official=settings.PORTAL_CHECK_OFFICIAL,
    )
    portal = [_key(r) for r in rows if r["rule"] not in ("submission-scope", "system-desc-mismatch")]
    assert portal == [_key(f.to_dict()) for f in command.findings]
    by_concurrency = {p["concurrency"]: p for p in run.report["points"]}
    assert sorted(by_concurrency) == [1, 2, 8]
    assert by_concurrency[1]["recomputed"]["input_sequence_lengths"]["total"] == 133170
    assert by_concurrency[8]["recomputed"]["output_sequence_lengths"]["total"] == 10913
    assert by_concurrency[2]["recomputed"]["e2e_interactivity"] > 0
