"""`portal submit` resumes across invocations (only the missing parts are sent again), and tells the user what
to do when the portal answers `upload-hash-mismatch`. Against a live server (PostgreSQL, local storage)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from portal.errors import ApplicationError
from submissions import uploads
from submissions.models import Submission, SubmissionVersion, Upload
from tests.submissions.support import RUN_ARCHIVES, make_catalog, sha256_of

pytestmark = pytest.mark.django_db(transaction=True)
ROOT = Path(__file__).resolve().parents[2]
PART = 64 * 1024
BIGGEST = max(RUN_ARCHIVES, key=lambda p: p.stat().st_size)  # four parts of PART
SMALL = RUN_ARCHIVES[0]  # one part


@pytest.fixture
def portal_env(role_users, live_server, storage_dir, settings):
    from tests.submissions.support import api_token_key

    settings.PORTAL_UPLOAD_PART_BYTES = PART
    make_catalog(role_users["organisations"]["acme"])
    token = api_token_key(role_users["submitter"])
    return {"PORTAL_URL": live_server.url, "PORTAL_TOKEN": token}


def _portal(*args, env):
    return subprocess.run(
        [sys.executable, "-m", "checker.cli.main", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, **env},
    )


class _Parts:
    """Records the parts the live server receives; can refuse one (the client stops there, as if interrupted)."""

    def __init__(self, monkeypatch):
        self.received: list[tuple[str, int]] = []
        self.refuse: tuple[int, int] | None = None  # (file size, part index)
        real = uploads.upload_part

        def recording(*, upload, index, data_stream, actor=None):
            if self.refuse == (upload.size_bytes, index):
                raise ApplicationError("test: the connection dropped here", code="test-interrupted")
            self.received.append((upload.filename, index))
            return real(upload=upload, index=index, data_stream=data_stream, actor=actor)

        monkeypatch.setattr(uploads, "upload_part", recording)


def test_submit_resumes_an_interrupted_set_sending_only_the_missing_parts(portal_env, monkeypatch):
    parts = _Parts(monkeypatch)
    parts.refuse = (BIGGEST.stat().st_size, 2)
    command = [
        "submit",
        str(SMALL),
        str(BIGGEST),
        "--system",
        "Acme_AX-8000",
        "--benchmark",
        "llama3_1-8b",
        "-q",
    ]
    first = _portal(*command, env=portal_env)
    assert first.returncode == 2 and "test: the connection dropped here" in first.stderr
    assert parts.received == [(SMALL.name, 0), (BIGGEST.name, 0), (BIGGEST.name, 1)]
    assert not SubmissionVersion.objects.exists()
    assert Submission.objects.count() == 1  # the new draft made by the first run

    parts.received.clear()
    parts.refuse = None
    second = _portal(*command[:-1], env=portal_env)  # not quiet: it says what it resumes
    assert second.returncode == 0, second.stderr
    # The verified small archive is not sent again; of the big one only parts 2 and 3 travel.
    assert parts.received == [(BIGGEST.name, 2), (BIGGEST.name, 3)]
    assert f"resuming {SMALL.name}" in second.stderr and "already verified" in second.stderr
    assert (
        f"resuming {BIGGEST.name}" in second.stderr and "2 of 4 parts already on the server" in second.stderr
    )
    assert Submission.objects.count() == 1  # no second draft
    version = SubmissionVersion.objects.get()
    assert sorted(version.files.values_list("original_filename", flat=True)) == sorted(
        [SMALL.name, BIGGEST.name]
    )
    assert Upload.objects.count() == 2 and set(Upload.objects.values_list("status", flat=True)) == {"done"}
    # A third run of the same files is a new version: nothing open is left to resume, everything is sent.
    parts.received.clear()
    third = _portal(*command, "--submission", str(version.submission_id), env=portal_env)
    assert third.returncode == 0, third.stderr
    assert len(parts.received) == 5 and SubmissionVersion.objects.count() == 2


def test_submit_never_resumes_another_users_or_another_drafts_upload(portal_env, role_users, monkeypatch):
    from submissions.services import submission_create
    from submissions.uploads import upload_start
    from tests.factories import MembershipFactory, UserFactory

    acme = role_users["organisations"]["acme"]
    system = acme.systems.get(name="Acme_AX-8000")
    benchmark = Submission._meta.get_field("benchmark").related_model.objects.get(model_id="llama3_1-8b")
    mine = submission_create(actor=role_users["submitter"], system=system, benchmark=benchmark)
    other_draft = submission_create(actor=role_users["submitter"], system=system, benchmark=benchmark)
    colleague = UserFactory(username="colleague")
    MembershipFactory(user=colleague, organisation=acme, role="submitter")
    data = SMALL.read_bytes()
    theirs = upload_start(
        actor=colleague, submission=mine, filename=SMALL.name, size=len(data), sha256=sha256_of(data)
    )
    elsewhere = upload_start(
        actor=role_users["submitter"],
        submission=other_draft,
        filename=SMALL.name,
        size=len(data),
        sha256=sha256_of(data),
    )
    parts = _Parts(monkeypatch)
    result = _portal("submit", str(SMALL), "--submission", str(mine.pk), env=portal_env)
    assert result.returncode == 0, result.stderr
    assert "resuming" not in result.stderr and parts.received == [(SMALL.name, 0)]
    assert Upload.objects.get(pk=theirs.pk).status == Upload.Status.OPEN
    assert Upload.objects.get(pk=elsewhere.pk).status == Upload.Status.OPEN


def test_hash_mismatch_tells_the_user_what_to_do_and_the_next_run_starts_over(
    portal_env, monkeypatch, storage_dir
):
    parts = _Parts(monkeypatch)
    parts.refuse = (BIGGEST.stat().st_size, 2)
    command = ["submit", str(BIGGEST), "--system", "Acme_AX-8000", "--benchmark", "llama3_1-8b", "-q"]
    assert _portal(*command, env=portal_env).returncode == 2
    # A stored part is damaged on the server (same length, other bytes).
    damaged = Upload.objects.get().parts.get(index=0)
    stored = storage_dir / damaged.storage_key
    stored.write_bytes(b"\0" * stored.stat().st_size)
    parts.refuse = None
    second = _portal(*command, env=portal_env)
    assert second.returncode == 2
    assert "do not match the file" in second.stderr and "Run the same command again" in second.stderr
    assert f"it sends {BIGGEST.name} again from the start" in second.stderr
    assert not SubmissionVersion.objects.exists()
    assert Upload.objects.get().status == Upload.Status.ABORTED
    parts.received.clear()
    third = _portal(*command, env=portal_env)
    assert third.returncode == 0, third.stderr
    assert [index for _, index in parts.received] == [0, 1, 2, 3]
    assert SubmissionVersion.objects.get().files.get().sha256 == sha256_of(BIGGEST.read_bytes())


def test_hash_mismatch_of_a_file_that_changed_while_uploading(portal_env, monkeypatch, tmp_path):
    growing = tmp_path / "AX-8000_c64.tar.gz"
    growing.write_bytes(BIGGEST.read_bytes())
    real = uploads.upload_part

    def rewrite_then_store(*, upload, index, data_stream, actor=None):
        if index == 0:  # the benchmark is still writing the file while it is being sent
            growing.write_bytes(b"\1" * growing.stat().st_size)
        return real(upload=upload, index=index, data_stream=data_stream, actor=actor)

    monkeypatch.setattr(uploads, "upload_part", rewrite_then_store)
    result = _portal(
        "submit", str(growing), "--system", "Acme_AX-8000", "--benchmark", "llama3_1-8b", "-q", env=portal_env
    )
    assert result.returncode == 2
    assert f"{growing.name} changed while it was being uploaded" in result.stderr
    assert "Wait until nothing writes to" in result.stderr
    assert not SubmissionVersion.objects.exists() and Upload.objects.get().status == Upload.Status.ABORTED
