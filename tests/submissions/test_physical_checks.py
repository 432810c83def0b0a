"""The portal's check of an upload catches what `portal check` catches on the same files (a real run relabelled as
another concurrency, one run under two points), and what only the portal can see: one raw log in two submissions
of different systems (raw-log-reused, judged from the digests stored per point)."""

from __future__ import annotations

import pytest
from django.test import override_settings

from submissions.models import CheckRun, PointMetric
from tests.checker.archive_builders import relabelled_run_archive, run_members, write_tar_gz
from tests.factories import SystemFactory
from tests.states import put
from tests.submissions.support import RUN_ARCHIVES, api_client, api_upload_run_archives, make_catalog
from tests.submissions.test_systems import sample_system_desc

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("storage_dir")]


def _checked_run(user, submission, paths) -> CheckRun:
    with override_settings(PORTAL_UPLOAD_PART_BYTES=256 * 1024):
        body = api_upload_run_archives(api_client(user), submission_id=submission.pk, paths=paths)
    run = CheckRun.objects.get(version_id=body["version"]["id"])
    assert run.status in (CheckRun.Status.PASSED, CheckRun.Status.FAILED), run.error_message
    return run


def _create(user, system, benchmark):
    from submissions.services import submission_create

    return submission_create(actor=user, system=system, benchmark=benchmark)


def _archive(concurrency: int):
    return next(path for path in RUN_ARCHIVES if path.name == f"AX-8000_c{concurrency}.tar.gz")


def test_an_upload_of_a_relabelled_run_fails_on_its_point(role_users, tmp_path):
    benchmark, system = make_catalog(role_users["organisations"]["acme"])
    relabelled = relabelled_run_archive(tmp_path / "AX-8000_c16.tar.gz", concurrency=32, as_concurrency=16)
    paths = [_archive(c) for c in (1, 2, 4, 8, 64)] + [relabelled]
    run = _checked_run(role_users["submitter"], _create(role_users["submitter"], system, benchmark), paths)
    assert run.status == CheckRun.Status.FAILED
    (peak,) = run.findings.filter(rule="in-flight-max")
    assert peak.severity == "error" and peak.point == "Acme_AX-8000/llama3_1-8b/r16"
    assert peak.file == "AX-8000_c16.tar.gz:c16/events.jsonl" and peak.line and peak.fix
    assert run.findings.filter(rule="implied-concurrency", point=peak.point, severity="error").exists()
    r16 = run.point_metrics.get(key=peak.point)
    assert r16.extra["physical"]["max_in_flight"] == 32
    assert len(r16.raw_log_sha256) == 64 and len(r16.tracked_sequence_sha256) == 64


def test_an_upload_with_one_run_under_two_points_fails_naming_both(role_users, tmp_path):
    benchmark, system = make_catalog(role_users["organisations"]["acme"])
    copy = relabelled_run_archive(tmp_path / "AX-8000_c32.tar.gz", concurrency=16, as_concurrency=32)
    paths = [_archive(c) for c in (1, 2, 4, 8, 16, 64)] + [copy]
    run = _checked_run(role_users["submitter"], _create(role_users["submitter"], system, benchmark), paths)
    (duplicate,) = run.findings.filter(rule="raw-log-duplicate")
    assert duplicate.severity == "error" and duplicate.point == "Acme_AX-8000/llama3_1-8b/r32"
    assert "AX-8000_c16.tar.gz:c16/events.jsonl" in duplicate.message
    assert "AX-8000_c32.tar.gz:c32/events.jsonl" in duplicate.message
    assert run.status == CheckRun.Status.FAILED


def _as_system(path, *, concurrency: int, system_name: str):
    """The real run archive filed as another system (system_power.json and system_desc.json), log untouched."""
    files = {}
    for name, data in run_members(concurrency).items():
        if name.endswith(("system_power.json", "system_desc.json")):
            data = data.replace(b"Acme_AX-8000", system_name.replace(" ", "_").encode())
            data = data.replace(b"Acme AX-8000", system_name.encode())
        files[name] = data
    return write_tar_gz(path, files)


def test_one_raw_log_in_submissions_of_two_systems_fails_the_second_naming_the_first(role_users, tmp_path):
    acme = role_users["organisations"]["acme"]
    benchmark, system = make_catalog(acme)
    submitter = role_users["submitter"]
    first = _create(submitter, system, benchmark)
    _checked_run(submitter, first, [_archive(16)])
    other_system = SystemFactory(organisation=acme, name="Acme_AX-9000", description=sample_system_desc())
    second = _create(submitter, other_system, benchmark)
    copy = _as_system(tmp_path / "AX-8000_c16.tar.gz", concurrency=16, system_name="Acme AX-9000")
    run = _checked_run(submitter, second, [copy])
    assert not run.findings.filter(rule="submission-scope").exists()  # the copy names the second system
    (reused,) = run.findings.filter(rule="raw-log-reused")
    assert reused.severity == "error" and reused.point == "Acme_AX-9000/llama3_1-8b/r16"
    assert f"submission #{first.pk} (Acme_AX-8000/llama3_1-8b/r16)" in reused.message
    assert reused.file == "AX-8000_c16.tar.gz:c16/events.jsonl" and reused.fix
    # The run again under its own system: the first submission is of the same system (no reuse), the second is not.
    again = _checked_run(submitter, _create(submitter, system, benchmark), [_archive(16)])
    (named,) = again.findings.filter(rule="raw-log-reused")
    assert f"submission #{second.pk} " in named.message and f"submission #{first.pk} " not in named.message
    assert PointMetric.objects.filter(raw_log_sha256=run.point_metrics.get().raw_log_sha256).count() == 3


def test_another_organisations_submission_is_never_named(role_users, tmp_path):
    from tests.factories import submitter_of

    acme, nimbus = role_users["organisations"]["acme"], role_users["organisations"]["nimbus"]
    benchmark, system = make_catalog(acme)
    first = _create(role_users["submitter"], system, benchmark)
    _checked_run(role_users["submitter"], first, [_archive(8)])
    nimbus_submitter = submitter_of(nimbus)
    nimbus_system = SystemFactory(organisation=nimbus, name="Nimbus_NB-9", description=sample_system_desc())
    copy = _as_system(tmp_path / "AX-8000_c8.tar.gz", concurrency=8, system_name="Nimbus NB-9")
    run = _checked_run(nimbus_submitter, _create(nimbus_submitter, nimbus_system, benchmark), [copy])
    (reused,) = run.findings.filter(rule="raw-log-reused")
    assert "a submission of another organisation (its point r8)" in reused.message
    assert f"#{first.pk}" not in reused.message  # the other organisation's submission stays unnamed
    assert "Acme" not in reused.message.replace("AX-8000_c8.tar.gz", "")  # acme's system stays under embargo
    # What to do, in the message and the fix: a run of one's own, or the chair when the run is one's own.
    assert "Upload the raw log of a run your organisation made on Nimbus_NB-9" in reused.message
    assert "tell the chair" in reused.message and "tell the chair" in reused.fix
    assert "submit under the system" not in reused.message  # no advice the submitter cannot follow


def test_the_very_archives_of_a_published_result_uploaded_again_say_already_published_and_how_to_extend(
    role_users,
):
    from submissions.models import Submission
    from tests.factories import PublicationFactory

    benchmark, system = make_catalog(role_users["organisations"]["acme"])
    submitter = role_users["submitter"]
    first = _create(submitter, system, benchmark)
    _checked_run(submitter, first, [_archive(8), _archive(16)])
    version = first.versions.get()
    put(Submission.objects.filter(pk=first.pk), "published", submitted_version=version)
    first.refresh_from_db()
    publication = PublicationFactory(submission=first)
    again = _checked_run(
        submitter, _create(submitter, system, benchmark), [_archive(8), _archive(16), _archive(32)]
    )
    (hint,) = again.findings.filter(rule="raw-log-published")
    assert hint.severity == "warning" and not again.findings.filter(rule="raw-log-reused").exists()
    assert hint.message.startswith(f"Already published as {publication.public_id}: the raw logs of ")
    assert "Acme_AX-8000/llama3_1-8b/r16" in hint.message and "r32" not in hint.message
    assert "Extend it or open a revision" in hint.message
    assert f"portal submit ARCHIVES --extends {publication.public_id} --stack TEXT" in hint.fix
    # An unpublished first submission of the same system: nothing to extend, no hint.
    draft_again = _checked_run(submitter, _create(submitter, system, benchmark), [_archive(2)])
    assert not draft_again.findings.filter(rule="raw-log-published").exists()
