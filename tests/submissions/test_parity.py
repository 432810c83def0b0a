"""The portal's verdict is `portal check`'s verdict: a real worker's findings equal the command's on the same files.

For the samples and for broken inputs (schema errors, bad checksums, hostile archives), one version is
uploaded through the API and checked by a real `celery worker` (one task per load point, then the join);
the same files are checked by `checker.check` (what `portal check` runs) in this process. The two sets
of findings must be equal finding by finding: rule, severity, file, line, JSON pointer, point and message.
Only the portal-only rules differ, because only the portal knows the submission.
"""

from __future__ import annotations

import hashlib
import io
import json
import shutil
import tarfile
from pathlib import Path

import pytest
from django.conf import settings

from checker.cli.local_check import check
from checker.judge.portal_rules import PORTAL_ONLY_RULES
from submissions.models import CheckRun
from tests.checker.archive_builders import RUN_ARCHIVES, run_members, write_tar_gz
from tests.checker.bundle_layout import bundle_with_raw_logs
from tests.submissions.conftest import wait_for_run
from tests.submissions.support import api_client, api_upload, make_catalog

pytestmark = pytest.mark.django_db(transaction=True)

TOKENIZER = Path(__file__).resolve().parents[1] / "checker" / "fixtures" / "tokenizer"
# Rules the command cannot run (it knows no submission); everything else must agree.
EXCEPTED_RULES = set(PORTAL_ONLY_RULES)
assert EXCEPTED_RULES == {"submission-scope", "system-desc-mismatch", "raw-log-reused", "raw-log-published"}


def _samples(tmp: Path) -> list[Path]:
    return list(RUN_ARCHIVES)


def _bundle_tar(tmp: Path, *, edit=None) -> Path:
    root = bundle_with_raw_logs(tmp / "src")
    if edit is not None:
        edit(root)
    target = tmp / "acme-bundle.tar.gz"
    with tarfile.open(target, "w:gz") as tar:
        tar.add(root, arcname="AcmeCompute/" + root.name)
    return target


def _sample_bundle(tmp: Path) -> list[Path]:
    return [_bundle_tar(tmp)]


def _bad_checksums(tmp: Path) -> list[Path]:
    def edit(root: Path) -> None:
        lines = []
        for path in sorted(root.rglob("*")):
            if path.is_file() and path.name != "SHA256SUMS" and "events.jsonl" not in path.name:
                digest = hashlib.sha256(path.read_bytes()).hexdigest()
                lines.append(f"{digest}  {path.relative_to(root).as_posix()}")
        (root / "SHA256SUMS").write_text("\n".join(lines) + "\nnot a checksum line\n")
        report = root / "results" / "Acme_AX-8000" / "llama3_1-8b" / "r1" / "report.txt"
        report.write_bytes(report.read_bytes() + b"edited after the manifest was written\n")

    return [_bundle_tar(tmp, edit=edit)]


def _schema_errors(tmp: Path) -> list[Path]:
    """The seven run archives, two of them with a system_desc.json and a result_summary.json of wrong types."""
    paths = [tmp / path.name for path in RUN_ARCHIVES]
    for path, original in zip(paths, RUN_ARCHIVES, strict=True):
        shutil.copyfile(original, path)
    for concurrency in (1, 8):
        members = run_members(concurrency)
        for name in list(members):
            if name.endswith("system_desc.json"):
                description = json.loads(members[name])
                description["max_supported_concurrency"] = "sixty-four"
                description["node_types"] = {"not": "a list"}
                members[name] = json.dumps(description).encode()
            if name.endswith("result_summary.json"):
                summary = json.loads(members[name])
                summary["n_samples_issued"] = "many"
                members[name] = json.dumps(summary).encode()
        write_tar_gz(tmp / f"AX-8000_c{concurrency}.tar.gz", members)
    return paths


def _hostile(tmp: Path) -> list[Path]:
    """Run archives, one carrying a path traversal, an absolute path and a symlink out of the sandbox."""
    paths = [tmp / path.name for path in RUN_ARCHIVES[1:]]
    for path, original in zip(paths, RUN_ARCHIVES[1:], strict=True):
        shutil.copyfile(original, path)
    members = run_members(1)
    extra = []
    for name in ("../../escape.txt", "/etc/evil.txt"):
        info = tarfile.TarInfo(name)
        info.size = 4
        extra.append((info, b"evil"))
    link = tarfile.TarInfo("c1/link-out")
    link.type, link.linkname = tarfile.SYMTYPE, "/etc/passwd"
    extra.append((link, None))
    hostile = tmp / "AX-8000_c1.tar.gz"
    with tarfile.open(hostile, "w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        for info, data in extra:
            tar.addfile(info, io.BytesIO(data) if data is not None else None)
    return [hostile, *paths]


CASES = {
    "sample-run-archives": _samples,
    "sample-bundle-with-raw-logs": _sample_bundle,
    "bad-checksums": _bad_checksums,
    "schema-errors": _schema_errors,
    "hostile-archive": _hostile,
}


def _key(finding: dict) -> tuple:
    return (
        finding["rule"],
        finding["severity"],
        finding.get("file") or "",
        finding.get("line"),
        finding.get("pointer") or "",
        finding.get("point") or "",
        finding["message"],
    )


def _upload_version(client, submission_id: int, paths: list[Path]) -> int:
    ids = []
    for path in paths[:-1]:
        body = api_upload(
            client, submission_id=submission_id, name=path.name, data=path.read_bytes(), create_version=False
        )
        ids.append(body["upload"]["id"])
    last = paths[-1]
    body = api_upload(
        client, submission_id=submission_id, name=last.name, data=last.read_bytes(), include=ids
    )
    return body["version"]["id"]


@pytest.mark.parametrize("case", sorted(CASES))
def test_worker_findings_equal_portal_check_findings(case, role_users, live_pipeline, tmp_path):
    from submissions.services import submission_create

    paths = CASES[case](tmp_path)
    benchmark, system = make_catalog(role_users["organisations"]["acme"])
    draft = submission_create(actor=role_users["submitter"], system=system, benchmark=benchmark)
    worker = live_pipeline()
    version_id = _upload_version(api_client(role_users["submitter"]), draft.pk, paths)
    run = CheckRun.objects.get(version_id=version_id)
    run = wait_for_run(
        run.pk,
        statuses=(CheckRun.Status.PASSED, CheckRun.Status.FAILED, CheckRun.Status.ERROR),
        workers=[worker],
    )
    assert run.status in (CheckRun.Status.PASSED, CheckRun.Status.FAILED), run.error_message

    # The same rule set as the worker's: the benchmark's (the preview rule set of the short sample runs)
    command = check(
        paths, tokenizer=TOKENIZER, ruleset=benchmark.ruleset_version, official=settings.PORTAL_CHECK_OFFICIAL
    )
    expected = [_key(f.to_dict()) for f in command.findings]
    portal = [
        _key(row)
        for row in run.findings.order_by("id").values(
            "rule", "severity", "file", "line", "pointer", "point", "message"
        )
    ]
    portal_only = [row for row in portal if row[0] in EXCEPTED_RULES]
    assert [row for row in portal if row[0] not in EXCEPTED_RULES] == expected
    assert not [row for row in expected if row[0] in EXCEPTED_RULES]
    # The stored report is the same document: counts, verdict and points agree with the command's.
    assert run.report["verdict"] == ("fail" if any(r[1] == "error" for r in portal) else "pass")
    assert [p["concurrency"] for p in run.report["points"]] == [p.concurrency for p in command.points]
    for stored, computed in zip(run.report["points"], command.points, strict=True):
        assert (
            stored["recomputed"] == json.loads(json.dumps(computed.recomputed))
            if computed.recomputed
            else True
        )
    if case in (
        "sample-bundle-with-raw-logs",
        "bad-checksums",
    ):  # the bundle also holds AX-4000: out of scope
        assert any(row[0] == "submission-scope" for row in portal_only)
    else:
        assert not any(row[0] == "submission-scope" for row in portal_only)
    # Each broken input is caught by the rule that names it, on both sides.
    caught = {row[0] for row in expected}
    wanted = {
        "bad-checksums": {"checksum-mismatch", "checksum-malformed"},
        "schema-errors": {"schema-system-desc", "schema-result-summary"},
        "hostile-archive": {"archive-path-traversal", "archive-absolute-path", "archive-link"},
    }.get(case, set())
    assert wanted <= caught, f"missing {wanted - caught}; found {sorted(caught)}"
