"""The spot-check part of `manage.py seed_demo`: NimbusCloud declares the endpoint of its published NB-2 result
(public, stays up) and an auditor's spot-check of its concurrency-2 point is recorded, finished.

The measurement is real, made beforehand (a demo has no endpoint to reach): GuideLLM 0.8.1 through the egress guard
against a `guidellm mock-server` started with the settings NB-2's c2 point was recorded against (TTFT 94 +- 23.5 ms,
ITL 11.2 +- 2.8 ms, 120 +- 30 output tokens), 30 s at concurrency 2; `bench/spotcheck_demo_fixture.py` made it and
wrote tests/fixtures/spotcheck/nb2-c2/. seed_demo records it through spotchecks.services.spotcheck_record_measured:
the same import, comparison and challenge rule as the worker's. Safe to run again."""

from __future__ import annotations

import json
from pathlib import Path

from django.conf import settings

from leaderboard.demo import ANNOTATED_TITLE
from spotchecks import services
from spotchecks.models import SpotCheck
from submissions.endpoints import endpoint_declare
from submissions.models import Endpoint, Submission

FIXTURE = Path(settings.BASE_DIR) / "tests" / "fixtures" / "spotcheck" / "nb2-c2"
# The address NB-2's system description names (the shared samples' mock ran there).
ENDPOINT_URL = "http://127.0.0.1:18110"
MODEL_NAME = "meta-llama/Llama-3.1-8B-Instruct"
CONCURRENCY = 2


def seed_demo_spotcheck(users) -> SpotCheck | None:
    submission = Submission.objects.filter(title=ANNOTATED_TITLE).first()
    if submission is None or not submission.in_state("published"):
        return None
    if not Endpoint.objects.filter(submission=submission).exists():
        endpoint_declare(
            submission=submission,
            actor=users["demo-nimbus"],
            url=ENDPOINT_URL,
            model_name=MODEL_NAME,
            stays_up=True,
            public=True,
        )
    existing = SpotCheck.objects.filter(submission=submission).first()
    if existing is not None:
        return existing
    return services.spotcheck_record_measured(
        submission=submission,
        actor=users["demo-auditor"],
        concurrency=CONCURRENCY,
        benchmarks=(FIXTURE / "benchmarks.json").read_bytes(),
        egress=json.loads((FIXTURE / "egress.json").read_text()),
        log=(FIXTURE / "guidellm.log").read_bytes(),
    )
