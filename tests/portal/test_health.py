"""GET /healthz reports each dependency and answers 503 when one is unusable."""

import pytest
from django.test import override_settings

pytestmark = pytest.mark.django_db


def test_all_ok_against_real_database_and_redis(client, redis_url):
    with override_settings(CELERY_TASK_ALWAYS_EAGER=False, CELERY_BROKER_URL=redis_url):
        response = client.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"database": "ok", "broker": "ok", "storage": "ok"}


def test_eager_mode_reports_in_process_broker_as_healthy(client):
    with override_settings(CELERY_TASK_ALWAYS_EAGER=True):
        response = client.get("/healthz")
    assert response.status_code == 200
    assert response.json()["broker"] == "eager (in-process)"


def test_unreachable_broker_gives_503_naming_it(client):
    with override_settings(CELERY_TASK_ALWAYS_EAGER=False, CELERY_BROKER_URL="redis://127.0.0.1:1/0"):
        response = client.get("/healthz")
    assert response.status_code == 503
    body = response.json()
    assert body["database"] == "ok"
    assert body["broker"].startswith("error: ")
    assert "ConnectionError" in body["broker"]
    assert "127.0.0.1:1" not in body["broker"]  # a public page: the where and why stay in the log


def test_unusable_storage_gives_503(client, settings):
    settings.STORAGES = {
        **settings.STORAGES,
        "default": {
            "BACKEND": "django.core.files.storage.FileSystemStorage",
            "OPTIONS": {"location": "/proc/portal-cannot-write-here"},
        },
    }
    response = client.get("/healthz")
    assert response.status_code == 503
    assert response.json()["storage"].startswith("error")


def test_healthz_is_not_cached(client):
    response = client.get("/healthz")
    assert "no-cache" in response["Cache-Control"] or "max-age=0" in response["Cache-Control"]


def test_healthz_answers_head_for_load_balancers(client):
    assert client.head("/healthz").status_code == 200
    assert client.post("/healthz").status_code == 405
