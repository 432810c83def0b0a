"""The demo publishes Zephyr Silicon's real agentic coding curve (ZX-2, Qwen3.6-35B-A3B) through review and audit, on
its own agentic benchmark board under the preview rule set, drawn as system throughput against e2e_interactivity.

Transactional: the demo runs in autocommit, where the checks (queued after commit) finish in-process."""

import pytest
from django.test import Client

from leaderboard.demo import AGENTIC_TITLE, seed_demo_agentic
from leaderboard.models import Publication
from submissions.demo import DemoSeed, seed_demo_organisations, seed_demo_users
from submissions.demo_submissions import AGENTIC_MODEL_ID

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_demo_publishes_the_zephyr_agentic_curve_on_its_own_board():
    seed = DemoSeed()
    seed_demo_organisations(seed)
    seed_demo_users(seed)
    submission = seed_demo_agentic(seed)
    assert submission.title == AGENTIC_TITLE and submission.in_state("published")
    assert submission.benchmark.model_id == AGENTIC_MODEL_ID and submission.benchmark.is_preview
    publication = Publication.objects.get(submission=submission)
    rules = set(publication.version.check_runs.latest("id").findings.values_list("rule", flat=True))
    assert not {r for r in rules if r.startswith(("schema-", "raw-log-", "tokenizer-"))}
    response = Client().get(f"/leaderboard/{AGENTIC_MODEL_ID}/")
    assert response.status_code == 200
    spec = response.context["spec"]
    assert spec["x"]["key"] == "e2e_interactivity"
    (series,) = spec["series"]
    assert sorted(round(p["x"], 4) for p in series["points"]) == [144.5539, 146.3555, 148.619]
    assert "preview" in response.content.decode().lower()
    again = seed_demo_agentic(seed)  # safe to run again
    assert again.pk == submission.pk and Publication.objects.filter(submission=submission).count() == 1
