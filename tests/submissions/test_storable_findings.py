"""Findings about text PostgreSQL cannot hold are stored escaped: a run archive member whose name is not UTF-8,
and a result_summary.json holding a NUL character, end the check `failed` with their finding (they used to
crash saving it, three times, and end `error`). A real worker on PostgreSQL, as in production."""

from __future__ import annotations

import io
import tarfile

import pytest

from checker.cli.pipeline import open_version
from checker.read.inputs import Limits
from submissions.models import CheckRun, SubmissionVersion
from tests.checker.archive_builders import run_members
from tests.submissions.conftest import wait_for_run
from tests.submissions.support import api_client, api_upload

pytestmark = pytest.mark.django_db(transaction=True)

FINISHED = (CheckRun.Status.PASSED, CheckRun.Status.FAILED, CheckRun.Status.ERROR)
BAD_NAME = b"c1/notes-\xff\xfe.txt".decode("utf-8", "surrogateescape")  # what tar hands over for those bytes


def _run_archive(files: dict[str, bytes]) -> bytes:
    """A run archive with these members, names written as raw bytes (GNU tar, no pax UTF-8 header)."""
    buffer = io.BytesIO()
    with tarfile.open(
        fileobj=buffer, mode="w:gz", format=tarfile.GNU_FORMAT, encoding="utf-8", errors="surrogateescape"
    ) as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def _finished_run(client, draft, name: str, data: bytes, worker) -> CheckRun:
    body = api_upload(client, submission_id=draft.pk, name=name, data=data)
    run = CheckRun.objects.get(version=SubmissionVersion.objects.get(pk=body["version"]["id"]))
    return wait_for_run(run.pk, statuses=FINISHED, workers=[worker])


def test_member_name_not_utf8_and_nul_in_result_summary_end_failed_with_their_findings(
    role_users, draft, live_pipeline
):
    worker = live_pipeline()
    client = api_client(role_users["submitter"])
    members = run_members(1)

    bad_name = _finished_run(
        client, draft, "AX-8000_c1.tar.gz", _run_archive({**members, BAD_NAME: b"notes\n"}), worker
    )
    assert bad_name.status == CheckRun.Status.FAILED, bad_name.error_message
    assert bad_name.attempts == 1 and bad_name.error_message == ""
    found = list(
        bad_name.findings.filter(rule="archive-bad-name").values("file", "message", "step", "severity")
    )
    assert len(found) == 1, found
    finding = bad_name.findings.get(rule="archive-bad-name")
    assert finding.file == "AX-8000_c1.tar.gz:c1/notes-\\xff\\xfe.txt"  # the bytes, escaped
    assert "'c1/notes-\\xff\\xfe.txt'" in finding.message and "not UTF-8" in finding.message
    assert bad_name.point_metrics.count() == 1  # the rest of the archive was read and checked

    summary = members["c1/performance/result_summary.json"]
    assert b'"state": "complete"' in summary
    with_nul = summary.replace(b'"state": "complete"', b'"state": "compl\\u0000ete"')
    nul = _finished_run(
        client,
        draft,
        "AX-8000_c1.tar.gz",
        _run_archive({**members, "c1/performance/result_summary.json": with_nul}),
        worker,
    )
    assert nul.status == CheckRun.Status.FAILED, nul.error_message
    assert nul.attempts == 1 and nul.error_message == ""
    # Reported by the schema check of the version and by the point's recompute, as json-nonfinite is.
    found = nul.findings.filter(rule="json-nul")
    assert sorted(found.values_list("point", flat=True)) == ["", "Acme_AX-8000/llama3_1-8b/r1"]
    for finding in found:
        assert finding.file == "AX-8000_c1.tar.gz:c1/performance/result_summary.json"
        assert finding.pointer == "/state"
        assert "NUL character (\\u0000) at /state" in finding.message
    metric = nul.point_metrics.get()
    assert metric.claimed is None and metric.recomputed is not None  # the raw log was still recomputed


def test_the_escaped_name_is_what_portal_check_reports_too(tmp_path):
    """The command line gives the same finding, with the same escaped bytes (one checker, two drivers)."""
    archive = tmp_path / "AX-8000_c1.tar.gz"
    archive.write_bytes(_run_archive({**run_members(1), BAD_NAME: b"notes\n"}))
    with open_version([archive], limits=Limits(), workdir=tmp_path / "work") as opened:
        found = [f for f in opened.findings if f.rule == "archive-bad-name"]
    assert [f.file for f in found] == ["AX-8000_c1.tar.gz:c1/notes-\\xff\\xfe.txt"]
    found[0].file.encode("utf-8")  # storable: no surrogates left
    found[0].message.encode("utf-8")
