"""The chair's dashboard and the audit queue show every piece of open work with a link to where it is decided:
open challenges (the chair), waivers waiting for a decision (both)."""

from __future__ import annotations

import pytest
from django.test import Client

from tests.factories import ChallengeFactory, PublicationFactory, SubmissionFactory, WaiverFactory

pytestmark = pytest.mark.django_db


def _page(user, path: str) -> str:
    client = Client()
    client.force_login(user)
    response = client.get(path)
    assert response.status_code == 200
    return response.content.decode()


def test_the_chair_dashboard_lists_open_challenges_with_a_link_to_resolve_them(role_users):
    open_one = ChallengeFactory(reason="The c64 point cannot be reproduced.")
    resolved = ChallengeFactory(publication=PublicationFactory(), status="dismissed", reason="Old news.")
    page = _page(role_users["chair"], "/review/chair/")
    assert f'data-challenge="{open_one.pk}"' in page and f'data-challenge="{resolved.pk}"' not in page
    assert f'href="/results/{open_one.publication.public_id}/#challenge-heading"' in page
    assert "The c64 point cannot be reproduced." in page


def test_the_audit_queue_links_every_waiver_waiting_for_a_decision(role_users):
    submission = SubmissionFactory(in_review=True)
    waiting = WaiverFactory(
        version=submission.submitted_version, status="requested", rule="accuracy-sample-count"
    )
    decided = WaiverFactory(version=submission.submitted_version, status="granted", rule="point-duration")
    page = _page(role_users["auditor"], "/review/audit/")
    assert f'data-waiver="{waiting.pk}"' in page and f'data-waiver="{decided.pk}"' not in page
    assert f'href="/review/audit/{submission.pk}/#waivers-heading"' in page
