"""In a real browser, against the live server and a REAL `celery -A portal worker` process:

- the submitter uploads the seven AX-8000 run archives and watches the check's progress change on the page
  (queued/running, done of total increasing) and then the findings and the seven-row point table appear,
  all without the page being reloaded (the check section polls its fragment);
- an upload interrupted after two of its five 8 MiB parts resumes after a page reload: choosing the same
  file again sends only the missing parts.
"""

from __future__ import annotations

import gzip
import io
import os
import re
import tarfile
import time
from pathlib import Path

import pytest

from submissions.models import CheckRun, Submission, Upload, UploadPart
from tests.browser.signin import landing_path
from tests.factories import PASSWORD, RUN_ARCHIVES
from tests.submissions.conftest import wait_for_run
from tests.submissions.support import SEVEN_ARCHIVES_ERRORS, assert_failed_on

pytestmark = pytest.mark.django_db(transaction=True)

POINT_DELAY_S = 2  # per point, in the worker: the check takes long enough to be watched
FINISHED = (CheckRun.Status.PASSED, CheckRun.Status.FAILED, CheckRun.Status.ERROR)


def _login(page, base, username):
    page.goto(f"{base}/accounts/login/")
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", PASSWORD)
    page.click("main button[type=submit]")
    page.wait_for_url(f"{base}{landing_path(username)}")


# Every change of the check section, as the user sees it: the status badge and "N of M done".
OBSERVE = """() => {
  window.__sameDocument = "yes";
  window.__seen = [];
  const section = document.querySelector("#check-section");
  const record = () => {
    const card = section.querySelector("[data-check-status]");
    window.__seen.push({status: card ? card.getAttribute("data-check-status") : null,
                        text: section.innerText, at: performance.now()});
  };
  record();
  new MutationObserver(record).observe(section, {childList: true, subtree: true, characterData: true});
}"""


def test_live_progress_then_findings_and_points_without_reload(
    chromium, live_server, live_pipeline, plain_http, browser_catalog, role_users
):
    benchmark, system = browser_catalog
    worker = live_pipeline(PORTAL_CHECK_TEST_POINT_DELAY_S=POINT_DELAY_S)
    from submissions.services import submission_create

    submission = submission_create(actor=role_users["submitter"], system=system, benchmark=benchmark)
    context = chromium.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.set_default_timeout(60_000)
    errors = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    _login(page, live_server.url, "submitter")
    page.goto(f"{live_server.url}/submissions/{submission.pk}/#upload")
    page.set_input_files("[data-file-input]", [str(path) for path in RUN_ARCHIVES])
    page.click("[data-start]")
    page.wait_for_url(f"**/submissions/{submission.pk}/?version=1#check", timeout=120_000)
    page.wait_for_selector("#check-section [data-check-status]")
    page.evaluate(OBSERVE)
    navigations = []
    page.on(
        "framenavigated", lambda frame: navigations.append(frame.url) if frame == page.main_frame else None
    )

    run = CheckRun.objects.get(version__submission=submission)
    run = wait_for_run(run.pk, statuses=FINISHED, timeout=180, workers=[worker])
    assert_failed_on(run, SEVEN_ARCHIVES_ERRORS)
    # The page learns the end by itself (its next poll), and shows the results.
    page.wait_for_selector("#check-section .result-head[data-check-status]", timeout=30_000)
    section = page.locator("#check-section")
    assert section.locator("table.points tbody tr").count() == 7
    assert section.locator("details.finding-group.sev-error .finding").count() == run.counts["error"]
    assert section.locator(".result-head .badge").first.inner_text() == run.get_status_display()
    assert section.locator("h3#findings").count() == 1

    # Never reloaded: the same document from the upload's redirect to the results.
    assert page.evaluate("window.__sameDocument") == "yes"
    assert navigations == []
    seen = page.evaluate("window.__seen")
    live = [s for s in seen if s["status"] in ("queued", "running")]
    assert live, f"the page never showed the check queued or running: {seen[:3]}"
    progress = []
    for snapshot in live:
        match = re.search(r"(\d+) of (\d+|\?) done", snapshot["text"])
        assert match, snapshot["text"]
        progress.append((snapshot["status"], int(match.group(1)), match.group(2)))
    running = [(done, total) for status, done, total in progress if status == "running"]
    assert running, f"the page never showed the check running: {progress}"
    done_values = [done for done, _ in running]
    assert done_values == sorted(done_values), f"progress went backwards: {progress}"
    assert len(set(done_values)) >= 2, f"the page never showed progress increasing: {progress}"
    assert any(total == "7" and 0 < done < 7 for done, total in running), progress
    assert seen[-1]["status"] == "failed"
    assert not errors, errors
    context.close()


def _big_archive(path: Path, size_bytes: int) -> Path:
    """A .tar.gz of about `size_bytes` (random content does not compress)."""
    payload = os.urandom(size_bytes)
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        info = tarfile.TarInfo("big/blob.bin")
        info.size = len(payload)
        tar.addfile(info, io.BytesIO(payload))
    path.write_bytes(gzip.compress(buffer.getvalue(), compresslevel=1, mtime=0))
    return path


def test_upload_resumes_after_reload_sending_only_the_missing_parts(
    chromium, live_server, settings, tmp_path, storage_dir, plain_http, browser_catalog, role_users
):
    # storage_dir keeps tasks eager: the check runs inside the last finish
    part_bytes = 8 * 1024 * 1024
    settings.PORTAL_UPLOAD_PART_BYTES = part_bytes
    benchmark, system = browser_catalog
    from submissions.services import submission_create

    submission = submission_create(actor=role_users["submitter"], system=system, benchmark=benchmark)
    archive = _big_archive(tmp_path / "bundle-40mb.tar.gz", 40 * 1000 * 1000)
    parts_expected = -(-archive.stat().st_size // part_bytes)
    assert parts_expected == 5

    context = chromium.new_context()
    page = context.new_page()
    page.set_default_timeout(60_000)
    _login(page, live_server.url, "submitter")
    page.goto(f"{live_server.url}/submissions/{submission.pk}/#upload")

    first_puts: list[int] = []

    def block_after_two(route):
        index = int(route.request.url.rstrip("/").rsplit("/", 1)[1])
        first_puts.append(index)
        if index >= 2:
            route.abort("connectionreset")  # the connection is gone from the third part on
        else:
            route.continue_()

    page.route("**/api/v1/uploads/*/parts/*/", block_after_two)
    page.set_input_files("[data-file-input]", str(archive))
    page.click("[data-start]")
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:  # two parts stored, the third refused at least once
        if UploadPart.objects.filter(upload__submission=submission).count() == 2 and 2 in first_puts:
            break
        page.wait_for_timeout(200)  # not time.sleep: Playwright calls the route handlers only while it runs
    else:
        raise AssertionError(f"the upload never got two parts in: {first_puts}")
    upload = Upload.objects.get(submission=submission)
    assert upload.status == Upload.Status.OPEN
    assert sorted(upload.parts.values_list("index", flat=True)) == [0, 1]

    # The user reloads the page (the connection is back) and chooses the same file again.
    page.unroute("**/api/v1/uploads/*/parts/*/")
    page.reload()
    second_puts: list[int] = []

    def count(route):
        if route.request.method == "PUT":
            second_puts.append(int(route.request.url.rstrip("/").rsplit("/", 1)[1]))
        route.continue_()

    page.route("**/api/v1/uploads/*/parts/*/", count)
    page.set_input_files("[data-file-input]", str(archive))
    page.click("[data-start]")
    page.wait_for_url(f"**/submissions/{submission.pk}/?version=1#check", timeout=180_000)
    assert sorted(second_puts) == [2, 3, 4], second_puts  # only the missing parts travelled
    assert Upload.objects.filter(submission=submission).count() == 1  # the same upload, resumed
    upload.refresh_from_db()
    assert upload.status == Upload.Status.DONE
    version_file = Submission.objects.get(pk=submission.pk).versions.get().files.get()
    assert version_file.size_bytes == archive.stat().st_size
    import hashlib

    assert version_file.sha256 == hashlib.sha256(archive.read_bytes()).hexdigest()
    context.close()
