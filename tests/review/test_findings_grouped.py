"""The review page folds the findings of one rule into one line with its count and points, expandable to each
finding (the sample runs give point-duration and steady-state-basis once per point)."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from tests.factories import CheckRunFactory, FindingFactory

pytestmark = pytest.mark.django_db


def test_findings_of_one_rule_are_one_line_with_count_and_points(review_world):
    version = review_world["version"]
    run = CheckRunFactory(version=version, status="passed")
    for point in ("r16", "r2", "r4"):
        FindingFactory(
            check_run=run,
            severity="warning",
            rule="point-duration",
            point=f"results/AX-8000/llama3_1-8b/{point}",
            message=f"The {point} run lasted 20 s; the rules ask for 600 s.",
        )
    single = FindingFactory(check_run=run, severity="warning", rule="steady-state-basis", message="Once.")
    client = Client()
    client.force_login(review_world["assigned"])
    page = client.get(f"/review/submissions/{review_world['submission'].pk}/").content.decode()
    fold = re.search(r'<li class="finding rule-group" data-rule="point-duration">(.*?)</details>', page, re.S)
    assert fold, "point-duration is not folded"
    summary = fold.group(1).split("</summary>")[0]
    assert "×3" in summary
    # by concurrency, not by name
    assert re.findall(r'<span class="badge point">(r\d+)</span>', summary) == ["r2", "r4", "r16"]
    assert fold.group(1).count('<li class="finding" id="finding-') == 3  # each one still there, expandable
    assert f'id="finding-{single.pk}"' in page and 'data-rule="steady-state-basis"' not in page
