"""Request ids: echoed or generated, sanitised, and recorded in the audit events a request writes."""

import uuid

import pytest

from audit.models import AuditEvent

pytestmark = pytest.mark.django_db


def test_request_id_is_echoed(client):
    response = client.get("/healthz", HTTP_X_REQUEST_ID="req-abc.123")
    assert response["X-Request-ID"] == "req-abc.123"


def test_request_id_is_generated_when_missing_or_unsafe(client):
    generated = client.get("/healthz")["X-Request-ID"]
    assert uuid.UUID(generated)
    unsafe = client.get("/healthz", HTTP_X_REQUEST_ID="<script>alert(1)</script>")["X-Request-ID"]
    assert "<" not in unsafe and uuid.UUID(unsafe)


def test_admin_change_records_audit_event_with_request_id(client, role_users):
    client.force_login(role_users["chair"])
    response = client.post(
        "/admin/accounts/organisation/add/",
        {
            "name": "Orbital Neocloud",
            "slug": "orbital",
            "kind": "neocloud",
            "memberships-TOTAL_FORMS": "0",
            "memberships-INITIAL_FORMS": "0",
        },
        HTTP_X_REQUEST_ID="admin-req-1",
    )
    assert response.status_code == 302, response.content[:2000]
    event = AuditEvent.objects.get(action="organisation.created")
    assert event.actor == role_users["chair"]
    assert event.request_id == "admin-req-1"
    assert event.data["via"] == "admin"
