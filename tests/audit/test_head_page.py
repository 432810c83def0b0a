"""/audit/head: anyone can copy the chain's head and the newest signed checkpoint (and nothing else of the log)."""

import pytest
from django.core.management import call_command
from django.db import transaction

from audit.services import audit_event_record

pytestmark = pytest.mark.django_db


@pytest.fixture
def checkpoint_dir(tmp_path, settings):
    folder = tmp_path / "checkpoints"
    settings.STORAGES = {
        **settings.STORAGES,
        "audit_checkpoints": {
            "BACKEND": "django.core.files.storage.FileSystemStorage",
            "OPTIONS": {"location": str(folder)},
        },
    }
    return folder


def test_anonymous_reader_sees_the_head_and_the_checkpoint(client, checkpoint_dir):
    with transaction.atomic():
        audit_event_record(actor=None, action="system.checked", data={"secret_note": "not on the page"})
        second = audit_event_record(actor=None, action="waiver.granted", data={"reason": "private reason"})
    call_command("verify_audit_log", "--write-checkpoint")
    with transaction.atomic():
        third = audit_event_record(actor=None, action="system.checked")

    response = client.get("/audit/head")
    assert response.status_code == 200
    assert "no-cache" in response["Cache-Control"] or "max-age=0" in response["Cache-Control"]
    page = response.content.decode()
    assert f'<code id="audit-head" class="break-all">3:{third.hash}</code>' in page
    assert f'<code id="audit-checkpoint" class="break-all">2:{second.hash}</code>' in page
    assert "private reason" not in page and "waiver.granted" not in page


def test_before_any_event_and_checkpoint(client, checkpoint_dir):
    page = client.get("/audit/head").content.decode()
    assert f"0:{'0' * 64}" in page
    assert "No checkpoint yet" in page


def test_a_checkpoint_not_signed_with_the_key_is_not_shown(client, checkpoint_dir):
    checkpoint_dir.mkdir()
    (checkpoint_dir / "checkpoint-000000000001-20990101T000000Z.json").write_text(
        '{"format": 1, "sequence": 1, "hash": "' + "a" * 64 + '", "created_at": "x", "signature": "forged"}'
    )
    page = client.get("/audit/head").content.decode()
    assert 'id="audit-checkpoint"' not in page
    assert "not validly signed" in page


def test_the_checkpoint_folder_is_listed_at_most_once_a_minute(client, checkpoint_dir, monkeypatch):
    from audit import checkpoints

    with transaction.atomic():
        first = audit_event_record(actor=None, action="system.checked")
    call_command("verify_audit_log", "--write-checkpoint")
    listings = []
    real = checkpoints.checkpoint_latest
    monkeypatch.setattr(checkpoints, "checkpoint_latest", lambda: listings.append(1) or real())
    for _ in range(3):
        assert f"1:{first.hash}" in client.get("/audit/head").content.decode()
    assert len(listings) == 1
    # A new checkpoint written here shows at once.
    with transaction.atomic():
        second = audit_event_record(actor=None, action="system.checked")
    call_command("verify_audit_log", "--write-checkpoint")
    page = client.get("/audit/head").content.decode()
    assert f'<code id="audit-checkpoint" class="break-all">2:{second.hash}</code>' in page
