"""While the database or the broker is down, the portal answers 503 with Retry-After, never 500: the API in its
JSON shape (`service-unavailable`), pages as a plain page that needs no database. Real outages: the database
connection pointed at a port nothing listens on, the broker at another."""

from __future__ import annotations

import base64
import socket

import pytest
from celery import current_app
from django.db import connections
from django.test import Client

from tests.previews.support import GUIDELLM


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]  # bound, never listening, then released: connections are refused


@pytest.fixture
def database_down(django_db_blocker):
    connection = connections["default"]
    with django_db_blocker.unblock():
        connection.close()
        saved = dict(connection.settings_dict)
        connection.settings_dict.update(HOST="127.0.0.1", PORT=str(_closed_port()))
        try:
            yield
        finally:
            connection.close()
            connection.settings_dict.clear()
            connection.settings_dict.update(saved)


@pytest.mark.parametrize("path", ["/api/v1/benchmarks/", "/api/v1/submissions/", "/api/v1/systems/"])
def test_the_api_answers_503_with_retry_after_while_the_database_is_down(database_down, path):
    answer = Client(raise_request_exception=False).get(path)
    assert answer.status_code == 503
    assert answer["Retry-After"] == "30"
    assert answer.json()["code"] == "service-unavailable" and "database" in answer.json()["detail"]


@pytest.mark.parametrize("path", ["/", "/leaderboard/llama3_1-8b/"])
def test_pages_answer_503_with_retry_after_while_the_database_is_down(database_down, path):
    answer = Client(raise_request_exception=False).get(path)
    assert answer.status_code == 503 and answer["Retry-After"] == "30"
    assert b"Unavailable for a moment" in answer.content


@pytest.mark.django_db(transaction=True)
def test_an_upload_answers_503_with_retry_after_while_the_broker_is_down(
    role_users, sample_catalog, storage_dir, monkeypatch
):
    benchmark, system = sample_catalog
    client = Client(raise_request_exception=False)
    client.force_login(role_users["submitter"])
    monkeypatch.setitem(current_app.conf, "task_always_eager", False)
    monkeypatch.setitem(current_app.conf, "broker_url", f"redis://127.0.0.1:{_closed_port()}/0")
    monkeypatch.setitem(current_app.conf, "task_publish_retry", False)
    # a pool of its own for the dead broker (the app's own stays as it is for the other tests)
    monkeypatch.setattr(current_app, "_pool", None)
    monkeypatch.setattr(current_app.amqp, "_producer_pool", None)
    body = {
        "system": system.name,
        "benchmark": benchmark.model_id,
        "name": "while the broker is down",
        "files": [{"name": "benchmarks.json", "content": base64.b64encode(GUIDELLM.read_bytes()).decode()}],
    }
    try:
        answer = client.post("/api/v1/previews/", body, content_type="application/json")
    finally:
        if current_app._pool is not None:
            current_app._pool.force_close_all()
    assert answer.status_code == 503, answer.content
    assert answer["Retry-After"] == "30" and answer.json()["code"] == "service-unavailable"
    assert "task queue" in answer.json()["detail"]
