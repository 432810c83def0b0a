"""A version whose archives inflate far beyond their size (under the per-member bomb ratio of 1000) fails its check
at the start with an `archive-inflation` finding naming the ratio and the cap (PORTAL_CHECK_MAX_INFLATION), instead
of costing every step minutes and gigabytes of temporary disk with no finding."""

from __future__ import annotations

import gzip
import io
import os
import tarfile

import pytest

from checker.cli.pipeline import open_version
from checker.read.inputs import Limits
from submissions.models import CheckRun, SubmissionVersion
from tests.checker.archive_builders import run_members
from tests.submissions.support import api_client, api_upload

PADDING = (os.urandom(64) + b"\0" * 500) * 36_000  # ~20 MB that gzip packs about 250 times


def _padded_run_archive() -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for name, data in {**run_members(1), "c1/padding.bin": PADDING}.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


ARCHIVE = _padded_run_archive()


def test_the_archive_is_under_the_per_member_ratio_but_far_over_the_inflation_cap():
    ratio = len(gzip.decompress(ARCHIVE)) / len(ARCHIVE)
    assert 150 < ratio < Limits().max_member_ratio


@pytest.mark.django_db(transaction=True)
def test_a_version_inflating_past_the_cap_fails_at_the_start_with_the_finding(
    role_users, draft, storage_dir, settings
):
    settings.PORTAL_CHECK_MAX_INFLATION = 100
    body = api_upload(
        api_client(role_users["submitter"]), submission_id=draft.pk, name="AX-8000_c1.tar.gz", data=ARCHIVE
    )
    version = SubmissionVersion.objects.get(pk=body["version"]["id"])
    run = CheckRun.objects.get(version=version)
    assert run.status == CheckRun.Status.FAILED and run.attempts == 1, run.error_message
    finding = run.findings.get(rule="archive-inflation")
    cap = 100 * version.size_bytes
    assert finding.severity == "error" and finding.file.startswith("AX-8000_c1.tar.gz")
    assert f"more than 100 times their {version.size_bytes} compressed bytes (the cap is {cap} bytes)" in (
        finding.message
    )
    assert "reading stopped" in finding.message and finding.fix
    assert run.counts["error"] == run.findings.filter(severity="error").count() >= 1
    assert not run.point_metrics.exists()  # no step read the archive further
    assert run.report["findings"][0]["rule"] == "archive-inflation"


@pytest.mark.django_db(transaction=True)
def test_the_sample_archives_are_far_under_the_cap(role_users, draft, storage_dir):
    from tests.submissions.support import ONE_ARCHIVE_ERRORS, RUN_ARCHIVES, assert_failed_on

    archive = RUN_ARCHIVES[0]
    body = api_upload(
        api_client(role_users["submitter"]),
        submission_id=draft.pk,
        name=archive.name,
        data=archive.read_bytes(),
    )
    run = CheckRun.objects.get(version_id=body["version"]["id"])
    assert_failed_on(run, ONE_ARCHIVE_ERRORS[archive.name])  # the usual findings, no archive-inflation


def test_portal_check_reports_the_same_with_the_cap(tmp_path):
    path = tmp_path / "AX-8000_c1.tar.gz"
    path.write_bytes(ARCHIVE)
    with open_version([path], limits=Limits(max_inflation=100), workdir=tmp_path / "work") as opened:
        found = [f for f in opened.findings if f.rule == "archive-inflation"]
        assert opened.layout.inflated_bytes <= 100 * len(ARCHIVE) + 16 * 1024 * 1024  # stopped near the cap
    assert len(found) == 1 and f"the cap is {100 * len(ARCHIVE)} bytes" in found[0].message
    with open_version([path], limits=Limits(), workdir=tmp_path / "work") as opened:  # no cap: read whole
        assert not [f for f in opened.findings if f.rule == "archive-inflation"]
