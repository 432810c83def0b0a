"""Uploads against a real gunicorn (gthread, 2 processes x 8 threads) on PostgreSQL: what Django's test client
cannot show (chunked request bodies, requests racing in several processes)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from submissions.models import CheckRun, SubmissionVersion, Upload
from tests.submissions.live_http import LiveClient
from tests.submissions.support import RUN_ARCHIVES, sha256_of

pytestmark = pytest.mark.django_db(transaction=True)


def test_twenty_parallel_finishes_of_one_upload_make_one_version_and_get_the_same_answer(
    role_users, draft, live_pipeline, live_portal
):
    archive = max(RUN_ARCHIVES, key=lambda path: path.stat().st_size)
    data = archive.read_bytes()
    web = live_portal(PORTAL_UPLOAD_PART_BYTES=64 * 1024)  # several parts, so a finish reads for a while
    client = LiveClient(web.url, role_users["submitter"])
    upload = client.start_upload(submission_id=draft.pk, name=archive.name, data=data)
    assert upload["parts_expected"] > 3
    client.send_parts(upload, data)

    with ThreadPoolExecutor(max_workers=20) as pool:
        answers = list(pool.map(lambda _: client.finish(upload, data), range(20)))

    statuses = sorted({status for status, _ in answers})
    assert statuses == [200], [body for status, body in answers if status != 200][:3]
    versions = {body["version"]["id"] for _, body in answers}
    assert len(versions) == 1
    assert SubmissionVersion.objects.filter(submission=draft).count() == 1
    version = SubmissionVersion.objects.get(submission=draft)
    assert version.sha256 == sha256_of(data)
    assert CheckRun.objects.filter(version=version).count() == 1
    assert {(body["upload"]["status"], body["upload"]["version"]) for _, body in answers} == {
        ("done", version.pk)
    }
    assert "Traceback" not in web.tail()


def test_a_part_sent_chunked_is_stored_whole(role_users, draft, live_pipeline, live_portal):
    archive = RUN_ARCHIVES[0]
    data = archive.read_bytes()
    web = live_portal(PORTAL_UPLOAD_PART_BYTES=64 * 1024)
    client = LiveClient(web.url, role_users["submitter"])
    upload = client.start_upload(submission_id=draft.pk, name=archive.name, data=data)
    client.send_parts(upload, data, chunked=True)  # Transfer-Encoding: chunked, no Content-Length

    stored = Upload.objects.get(pk=upload["id"])
    assert sorted(stored.parts.values_list("index", flat=True)) == list(range(upload["parts_expected"]))
    assert sum(stored.parts.values_list("size_bytes", flat=True)) == len(data)
    status, body = client.finish(upload, data)
    assert status == 200, body
    assert SubmissionVersion.objects.get(pk=body["version"]["id"]).sha256 == sha256_of(data)
    # A chunked part longer than its place is refused like any other, without reading it all.
    second = client.start_upload(submission_id=draft.pk, name="again-" + archive.name, data=data)
    status, body = client.request(
        "PUT",
        f"/api/v1/uploads/{second['id']}/parts/0/",
        data=data[: 64 * 1024] + b"x" * 1000,
        chunked=True,
    )
    assert (status, body["code"]) == (400, "upload-part-size"), body
