"""A submitter's browser uploads straight to the bucket (S3 storage, SeaweedFS): every part is PUT to the bucket with
its signed Content-MD5, none to the portal, and the version appears once the SHA-256 is verified. The page's CSP
names the bucket in connect-src (a CSP violation fails every browser test)."""

from __future__ import annotations

import os

import pytest

from submissions.models import Submission, Upload
from tests.browser.test_submitter_upload import _login
from tests.submissions.conftest import (
    s3_storages,
    seaweedfs,  # noqa: F401 - the S3 server for this module
)

pytestmark = pytest.mark.django_db(transaction=True)
MIB = 1024**2


@pytest.fixture
def bucket_portal(live_server, settings, seaweedfs, plain_http, browser_catalog):  # noqa: F811
    s3_storages(settings, seaweedfs)
    settings.PORTAL_UPLOAD_DIRECT_PART_BYTES = 5 * MIB
    settings.PORTAL_CONTENT_SECURITY_POLICY = settings.PORTAL_CONTENT_SECURITY_POLICY.replace(
        "connect-src 'self'", f"connect-src 'self' {seaweedfs['endpoint_url']}"
    )
    return live_server.url, seaweedfs


def test_the_browser_sends_every_part_to_the_bucket_and_none_to_the_portal(chromium, bucket_portal, tmp_path):
    base, s3 = bucket_portal
    archive = tmp_path / "AX-8000_c1.tar.gz"
    archive.write_bytes(os.urandom(11 * MIB))  # three parts of 5 MiB
    context = chromium.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.set_default_timeout(60_000)
    errors, puts = [], []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.on("request", lambda request: puts.append(request.url) if request.method == "PUT" else None)
    _login(page, base, "submitter")
    page.select_option("#id_benchmark", label="Llama 3.1 8B Instruct (llama3_1-8b)")
    page.select_option("#id_availability", "available")
    page.click("text=Create draft")
    page.wait_for_url("**/submissions/*/#upload")
    submission = Submission.objects.get()
    page.set_input_files("[data-file-input]", [str(archive)])
    page.click("[data-start]")
    page.wait_for_url(f"**/submissions/{submission.pk}/?version=1#check", timeout=120_000)
    assert not errors, errors
    upload = Upload.objects.get()
    assert upload.transfer == Upload.Transfer.DIRECT and upload.status == Upload.Status.DONE
    assert len(puts) == 3 and all(url.startswith(s3["endpoint_url"] + "/") for url in puts), puts
    assert not any("/api/v1/uploads/" in url for url in puts)  # no part went through the portal
    stored = s3["client"].get_object(Bucket=s3["bucket_name"], Key=upload.version.files.get().storage_key)
    assert stored["Body"].read() == archive.read_bytes()
    context.close()
