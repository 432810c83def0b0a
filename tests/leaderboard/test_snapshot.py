"""The published record is a snapshot (DESIGN.md, "Lifecycle"): a result's system, organisation, description,
verification level, check verdict and provenance are frozen when it is published. Editing the system afterwards,
through every door (services, the systems page, the API, the admin), changes the live system and its drafts, never
the public record: its page, points, board row, filters, exports and API answers stay byte-identical."""

from __future__ import annotations

import copy
import json

import pytest
from django.test import Client

from leaderboard.board.cache import public_cache_bump
from leaderboard.models import Publication
from leaderboard.publishing import services
from submissions.models import CheckRun, System
from submissions.selectors import check_run_latest
from submissions.services import system_update_description
from tests.factories import SubmissionFactory, SystemFactory, WaiverFactory
from tests.leaderboard.support import make_curve
from tests.states import put
from tests.submissions.support import api_client
from tests.submissions.test_systems import _file, sample_system_desc

pytestmark = pytest.mark.django_db


def _description(accelerator: str, per_node: int, nodes: int, framework: str) -> dict:
    """The sample's system_desc.json with another accelerator model, count, node count and stack."""
    description = copy.deepcopy(sample_system_desc())
    node = description["node_types"][0]
    node["number_of_nodes"] = nodes
    for info in node.get("accelerator_info") or []:
        info["accelerator_model_name"] = accelerator
        info["accelerators_per_node"] = per_node
    description["serving_framework"] = framework
    return description


@pytest.fixture
def published(role_users):
    """AcmeCompute's AX-8000 (the samples' real system description) published through the service, one error
    finding waived so the check reads "passed with 1 waived"."""
    acme = role_users["organisations"]["acme"]
    system = SystemFactory(organisation=acme, name="Acme_AX-8000", description=sample_system_desc())
    submission = SubmissionFactory(status="audited", system=system, created_by=role_users["submitter"])
    run = check_run_latest(submission.submitted_version)
    curve = make_curve(system.name, submission.benchmark.model_id)
    put(run, CheckRun.Status.FAILED, curves=[curve], counts={"error": 1})
    # The factory's metric is named by a sequence shared by the whole process: name it after the curve's first
    # point, so that the evidence this test freezes never depends on which tests ran before it.
    first = curve["points"][0]
    run.point_metrics.update(key=first["point"], concurrency=first["concurrency"])
    run.findings.create(rule="point-duration", severity="error", point="r1", message="short run")
    WaiverFactory(version=submission.submitted_version, status="granted", rule="point-duration", point="r1")
    publication = services.publication_schedule(
        submission=submission, actor=role_users["submitter"], mode="now"
    )
    return publication


def _public_record(publication: Publication) -> dict[str, bytes]:
    """Every public answer about the result, as an anonymous visitor gets it, rendered afresh."""
    public_cache_bump()  # nothing served from a cache made before the edit
    model = publication.submission.benchmark.model_id
    facts = publication.record
    accelerator = facts.accelerators[0]
    urls = [
        f"/results/{publication.public_id}/",
        f"/results/{publication.public_id}/points.json",
        f"/results/{publication.public_id}/points.csv",
        f"/leaderboard/{model}/",
        f"/leaderboard/{model}/?accelerator={accelerator}",
        f"/leaderboard/{model}/?organisation={facts.organisation_slug}&division={facts.division}",
        f"/systems/{facts.system_id}/history/",
        "/",
        f"/api/v1/public/results/{publication.public_id}/",
        f"/api/v1/public/results/?benchmark={model}",
        f"/api/v1/public/results/?benchmark={model}&format=csv",
        f"/api/v1/public/results/?system={facts.system_name}",
        f"/api/v1/public/results/?organisation={facts.organisation_slug}",
        f"/api/v1/public/points/?benchmark={model}",
        f"/api/v1/public/points/?benchmark={model}&format=csv",
        f"/api/v1/public/slo/?benchmark={model}&ttft_p90_ms_max=100000&interactivity_min=1",
    ]
    answers = {}
    for url in urls:
        response = Client().get(url)
        assert response.status_code == 200, (url, response.status_code)
        answers[url] = response.content
    return answers


def test_publishing_freezes_the_system_the_level_the_check_and_the_provenance(published):
    record = published.record
    assert record.system_name == "Acme_AX-8000" and record.organisation_name == "AcmeCompute"
    assert record.description == sample_system_desc()
    assert record.accelerator_count and record.accelerators
    assert record.level == "fully recomputed" and record.verification.total_points == 8
    assert record.check_label == "passed with 1 waived"
    assert [w["rule"] for w in record.waivers] == ["point-duration"]
    assert record.bundle_sha256 == published.version.sha256
    revision = published.revisions.get()
    assert revision.snapshot == published.snapshot


def test_every_edit_of_a_published_system_leaves_the_public_record_byte_identical(role_users, published):
    before = _public_record(published)
    page = before[f"/results/{published.public_id}/"].decode()
    assert "Acme_AX-8000" in page and "passed with 1 waived" in page
    system = System.objects.get(pk=published.record.system_id)
    submitter, chair = role_users["submitter"], role_users["chair"]

    # The service: accelerators per node and model, nodes and stack change.
    system_update_description(
        system=system, description=_description("Other GPU", 1, 3, "other-serve 9"), actor=submitter
    )
    # The systems page.
    client = Client()
    client.force_login(submitter)
    client.post(
        f"/systems/{system.pk}/description/",
        {"system_desc": _file(_description("Page GPU", 2, 5, "page-serve 2"))},
    )
    system.refresh_from_db()
    assert system.description["node_types"][0]["accelerator_info"][0]["accelerator_model_name"] == "Page GPU"
    # The API.
    answer = api_client(submitter).post(
        f"/api/v1/systems/{system.pk}/description/",
        {"description": _description("Api GPU", 4, 7, "api-serve 3")},
        format="json",
        HTTP_IDEMPOTENCY_KEY="snapshot-edit",
    )
    assert answer.status_code in (200, 201), answer.content
    # The admin: the chair renames the system and its organisation and edits the description.
    admin = Client()
    admin.force_login(chair)
    changed = admin.post(
        f"/admin/submissions/system/{system.pk}/change/",
        {
            "organisation": system.organisation_id,
            "name": "Renamed_AX",
            "description": json.dumps(_description("Admin GPU", 16, 2, "admin-serve 1")),
        },
    )
    assert changed.status_code == 302, changed.content[:500]
    organisation = system.organisation
    renamed = admin.post(
        f"/admin/accounts/organisation/{organisation.pk}/change/",
        {
            "name": "Renamed Org",
            "slug": "renamed-org",
            "kind": organisation.kind,
            "memberships-TOTAL_FORMS": "0",
            "memberships-INITIAL_FORMS": "0",
        },
    )
    assert renamed.status_code == 302, renamed.content[:500]
    # The admin refuses any edit of the published record itself.
    refused = admin.post(
        f"/admin/leaderboard/publication/{published.pk}/change/",
        {"public_id": published.public_id, "snapshot": "{}", "curve": "{}", "headline": "{}"},
    )
    assert refused.status_code == 403
    system.refresh_from_db()
    organisation.refresh_from_db()
    # Every edit took effect on the live rows (drafts and future revisions use them)...
    assert system.name == "Renamed_AX" and organisation.name == "Renamed Org"
    assert system.description["node_types"][0]["accelerator_info"][0]["accelerator_model_name"] == "Admin GPU"
    # ...and the public record did not move by one byte.
    after = _public_record(Publication.objects.get(pk=published.pk))
    for url, body in before.items():
        assert after[url] == body, url
    assert b"Renamed" not in b"".join(after.values()) and b"Admin GPU" not in b"".join(after.values())


def test_the_backfill_freezes_a_result_published_before_snapshots(role_users, published):
    """The data migrations' functions on a result with no snapshot give what publishing gives."""
    from importlib import import_module

    from django.apps import apps

    migration = import_module("leaderboard.migrations.0003_publication_snapshot")
    evidence = import_module("leaderboard.migrations.0006_snapshot_point_evidence")
    frozen = Publication.objects.get(pk=published.pk).snapshot
    assert frozen["schema"] == 2 and frozen["points"] and frozen["sources"]
    Publication.objects.filter(pk=published.pk).update(snapshot={})
    published.revisions.update(snapshot={})
    migration.snapshot_published(apps, None)  # schema 1, then its upgrade to per-point evidence
    evidence.point_evidence(apps, None)
    assert Publication.objects.get(pk=published.pk).snapshot == frozen
    assert published.revisions.get().snapshot == frozen
