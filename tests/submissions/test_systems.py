"""Systems for submitters: register a system with its system_desc.json (checked with the checker's own loader and
schema) on the Systems page and through the API, see its key facts, give it a new description (a new revision,
audited, history kept); `portal submit --system` for an unregistered system says how to register it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from audit.models import AuditEvent
from submissions.models import System, SystemDescriptionRevision
from tests.factories import MembershipFactory, UserFactory
from tests.submissions.support import RUN_ARCHIVES, api_client, make_catalog

pytestmark = pytest.mark.django_db
ROOT = Path(__file__).resolve().parents[2]


def sample_system_desc() -> dict:
    """The system_desc.json the sample run archives carry (AcmeCompute's fictional AX-8000)."""
    with tarfile.open(RUN_ARCHIVES[0]) as tar:
        member = next(m for m in tar.getmembers() if m.name.endswith("/system_desc.json"))
        return json.load(tar.extractfile(member))


def _file(obj, name="system_desc.json") -> SimpleUploadedFile:
    data = obj if isinstance(obj, bytes) else json.dumps(obj, indent=2).encode()
    return SimpleUploadedFile(name, data, content_type="application/json")


def _client(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_submitter_registers_a_system_on_the_page_and_sees_its_key_facts(role_users):
    acme = role_users["organisations"]["acme"]
    client = _client(role_users["submitter"])
    page = client.get("/systems/")
    assert page.status_code == 200 and b"Register a system" in page.content
    response = client.post(
        "/systems/new/",
        {"organisation": acme.pk, "name": "Acme_AX-8000", "system_desc": _file(sample_system_desc())},
    )
    system = System.objects.get(organisation=acme, name="Acme_AX-8000")
    assert response.status_code == 302 and response["Location"] == f"/systems/{system.pk}/"
    assert system.description == sample_system_desc()
    assert list(system.description_revisions.values_list("number", flat=True)) == [1]
    assert AuditEvent.objects.filter(action="system.registered", object_id=str(system.pk)).exists()
    detail = client.get(f"/systems/{system.pk}/").content.decode()
    assert "8 × Acme A1 (fictional)" in detail and "141 GB HBM3e" in detail  # accelerators
    assert 'data-fact="nodes">1<' in detail  # nodes
    assert "acme-serve 0.9" in detail and "Debian GNU/Linux 12" in detail  # software
    assert "Update the description" in detail
    listed = client.get("/systems/").content.decode()
    assert f'href="/systems/{system.pk}/"' in listed
    # The dashboard and the header lead there.
    dashboard = client.get("/dashboard/").content.decode()
    assert dashboard.count('href="/systems/"') >= 2


def test_invalid_description_is_refused_with_each_finding_and_its_pointer(role_users):
    acme = role_users["organisations"]["acme"]
    client = _client(role_users["submitter"])
    broken = sample_system_desc()
    del broken["division"]
    broken["node_types"][0]["number_of_nodes"] = "one"
    response = client.post(
        "/systems/new/", {"organisation": acme.pk, "name": "Acme_AX-8000", "system_desc": _file(broken)}
    )
    assert response.status_code == 400
    page = response.content.decode()
    assert "schema-system-desc" in page
    assert "/node_types/0/number_of_nodes" in page  # the pointer of the bad value
    assert "division" in page  # the missing required key
    assert not System.objects.exists()
    # Not JSON at all, NaN, and too large: the checker's loader says why, nothing is registered.
    for data, rule in ((b"{not json", "json-syntax"), (b'{"a": NaN}', "json-nonfinite")):
        refused = client.post(
            "/systems/new/", {"organisation": acme.pk, "name": "X1", "system_desc": _file(data)}
        )
        assert refused.status_code == 400 and rule in refused.content.decode()
    from django.conf import settings

    big = b'{"pad": "' + b"x" * settings.PORTAL_SYSTEM_DESC_MAX_BYTES + b'"}'
    refused = client.post("/systems/new/", {"organisation": acme.pk, "name": "X1", "system_desc": _file(big)})
    assert refused.status_code == 400 and "file-too-large" in refused.content.decode()
    assert not System.objects.exists()


def test_update_description_keeps_history_and_is_audited(role_users):
    acme = role_users["organisations"]["acme"]
    client = _client(role_users["submitter"])
    client.post(
        "/systems/new/",
        {"organisation": acme.pk, "name": "Acme_AX-8000", "system_desc": _file(sample_system_desc())},
    )
    system = System.objects.get()
    newer = {**sample_system_desc(), "serving_framework": "acme-serve 1.0", "batch": 512}
    response = client.post(f"/systems/{system.pk}/description/", {"system_desc": _file(newer)}, follow=True)
    assert (
        "revision 2" in response.content.decode() and "batch, serving_framework" in response.content.decode()
    )
    system.refresh_from_db()
    assert system.description == newer
    revisions = list(SystemDescriptionRevision.objects.filter(system=system).order_by("number"))
    assert [r.description for r in revisions] == [sample_system_desc(), newer]
    assert revisions[1].changed_keys == ["batch", "serving_framework"]
    event = AuditEvent.objects.get(action="system.description_updated", object_id=str(system.pk))
    assert event.data["changed"] == ["batch", "serving_framework"] and event.data["revision"] == 2
    # The same description again changes nothing.
    again = client.post(f"/systems/{system.pk}/description/", {"system_desc": _file(newer)}, follow=True)
    assert "the same as the current one" in again.content.decode()
    assert system.description_revisions.count() == 2
    # Another organisation's member may not describe it (and without a published result it does not exist).
    outsider = UserFactory(username="outsider")
    MembershipFactory(user=outsider, organisation=role_users["organisations"]["nimbus"], role="submitter")
    assert (
        _client(outsider)
        .post(f"/systems/{system.pk}/description/", {"system_desc": _file(sample_system_desc())})
        .status_code
        == 404
    )
    # An auditor sees it but may not change it.
    auditor = _client(role_users["auditor"])
    assert auditor.get(f"/systems/{system.pk}/").status_code == 200
    assert (
        auditor.post(
            f"/systems/{system.pk}/description/", {"system_desc": _file(sample_system_desc())}
        ).status_code
        == 403
    )


def test_api_register_list_detail_and_update_description(role_users):
    client = api_client(role_users["submitter"])
    desc = sample_system_desc()
    created = client.post(
        "/api/v1/systems/",
        {"name": "Acme_AX-8000", "description": desc},
        format="json",
        HTTP_IDEMPOTENCY_KEY="sys-1",
    )
    assert created.status_code == 201, created.json()
    body = created.json()
    assert body["organisation"] == "acmecompute" and body["description_revision"] == 1
    replay = client.post(
        "/api/v1/systems/",
        {"name": "Acme_AX-8000", "description": desc},
        format="json",
        HTTP_IDEMPOTENCY_KEY="sys-1",
    )
    assert (
        replay.status_code == 201
        and replay["Idempotent-Replayed"] == "true"
        and replay.json()["id"] == body["id"]
    )
    assert System.objects.count() == 1
    listed = client.get("/api/v1/systems/").json()["results"]
    assert [row["name"] for row in listed] == ["Acme_AX-8000"]
    # Invalid: every schema finding with its pointer, stable code.
    bad = client.post(
        "/api/v1/systems/", {"name": "X1", "description": {**desc, "node_types": []}}, format="json"
    )
    assert bad.status_code == 400 and bad.json()["code"] == "system-desc-invalid"
    assert [p["pointer"] for p in bad.json()["problems"]] == ["/node_types"]
    # Update through a multipart file upload; the revision history is in the detail.
    newer = {**desc, "system_size": "2 nodes, 16 accelerators"}
    updated = client.post(
        f"/api/v1/systems/{body['id']}/description/", {"system_desc": _file(newer)}, format="multipart"
    )
    assert updated.status_code == 200, updated.json()
    detail = client.get(f"/api/v1/systems/{body['id']}/").json()
    assert detail["description"] == newer and detail["description_revision"] == 2
    assert [(r["number"], r["changed_keys"]) for r in detail["revisions"]] == [(2, ["system_size"]), (1, [])]
    unchanged = client.post(
        f"/api/v1/systems/{body['id']}/description/", {"description": newer}, format="json"
    )
    assert unchanged.status_code == 409 and unchanged.json()["code"] == "system-description-unchanged"
    # Visibility: another organisation's member does not see it; the auditor does; anonymous does not.
    assert api_client(role_users["reviewer"]).get(f"/api/v1/systems/{body['id']}/").status_code == 404
    assert api_client(role_users["auditor"]).get(f"/api/v1/systems/{body['id']}/").status_code == 200
    assert api_client(None).get("/api/v1/systems/").json()["results"] == []
    # An auditor may not register for an organisation it is not a member of.
    refused = api_client(role_users["auditor"]).post(
        "/api/v1/systems/",
        {"organisation": "acmecompute", "name": "Acme_Z", "description": desc},
        format="json",
    )
    assert refused.status_code == 403


def test_api_create_submission_for_unknown_system_says_how_to_register(role_users):
    make_catalog(role_users["organisations"]["acme"])
    response = api_client(role_users["submitter"]).post(
        "/api/v1/submissions/", {"system": "Acme_NEW-1", "benchmark": "llama3_1-8b"}, format="json"
    )
    assert response.status_code == 400 and response.json()["code"] == "unknown-system"
    assert "/api/v1/systems/" in response.json()["detail"] and "/systems/" in response.json()["register_url"]


@pytest.mark.django_db(transaction=True)
def test_portal_submit_for_an_unregistered_system_says_how_to_register_it(
    role_users, live_server, storage_dir
):
    from tests.submissions.support import api_token_key

    make_catalog(role_users["organisations"]["acme"])
    token = api_token_key(role_users["submitter"])
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "checker.cli.main",
            "submit",
            str(RUN_ARCHIVES[0]),
            "--system",
            "Acme_NEW-1",
            "--benchmark",
            "llama3_1-8b",
            "-q",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PORTAL_URL": live_server.url, "PORTAL_TOKEN": token},
    )
    assert result.returncode == 2
    assert "has no system 'Acme_NEW-1'" in result.stderr
    assert f"{live_server.url}/systems/" in result.stderr and "/api/v1/systems/" in result.stderr
    from submissions.models import Submission, Upload

    assert not Submission.objects.exists() and not Upload.objects.exists()  # nothing half-started
    # The registered system goes through (the check is not what this test is about: no version is asked for).
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "checker.cli.main",
            "submit",
            str(RUN_ARCHIVES[0]),
            "--system",
            "Acme_AX-8000",
            "--benchmark",
            "llama3_1-8b",
            "-q",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PORTAL_URL": live_server.url, "PORTAL_TOKEN": token},
    )
    assert "has no system" not in result.stderr


def test_schema_json_lists_the_system_endpoints():
    schema = Client().get("/api/schema/", HTTP_ACCEPT="application/json")
    text = schema.content.decode()
    assert "/api/v1/systems/{id}/description/" in text
