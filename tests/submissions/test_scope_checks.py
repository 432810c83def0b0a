"""The join step's portal-only rules, through the eager pipeline with the real sample run archives:
`submission-scope` (points of another system or model than the submission's) and `system-desc-mismatch`
(the uploaded system_desc.json is not the registered description)."""

from __future__ import annotations

import pytest
from django.test import override_settings

from catalog.models import Benchmark
from submissions.models import CheckRun
from tests.factories import SAMPLE_RULESET, SystemFactory
from tests.submissions.support import (
    RUN_ARCHIVES,
    SEVEN_ARCHIVES_ERRORS,
    api_client,
    api_upload_run_archives,
    assert_failed_on,
    make_catalog,
)
from tests.submissions.test_systems import sample_system_desc

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("storage_dir")]


def _checked_run(user, submission, paths=RUN_ARCHIVES) -> CheckRun:
    with override_settings(PORTAL_UPLOAD_PART_BYTES=256 * 1024):
        body = api_upload_run_archives(api_client(user), submission_id=submission.pk, paths=paths)
    run = CheckRun.objects.get(version_id=body["version"]["id"])
    assert run.status == CheckRun.Status.FAILED, run.error_message
    assert run.point_metrics.count() == len(paths)
    return run


def _create(user, system, benchmark):
    from submissions.services import submission_create

    return submission_create(actor=user, system=system, benchmark=benchmark)


def test_run_archives_of_another_system_fail_with_submission_scope(role_users):
    acme = role_users["organisations"]["acme"]
    benchmark, _ = make_catalog(acme)
    other = SystemFactory(organisation=acme, name="Acme_BX-9000", description=sample_system_desc())
    run = _checked_run(role_users["submitter"], _create(role_users["submitter"], other, benchmark))
    assert run.status == CheckRun.Status.FAILED
    scope = list(run.findings.filter(rule="submission-scope").order_by("point"))
    assert len(scope) == 7 and {f.severity for f in scope} == {"error"}
    first = next(f for f in scope if f.point == "Acme_AX-8000/llama3_1-8b/r1")
    assert first.file == "AX-8000_c1.tar.gz:c1/"  # the point's folder
    assert "Acme_AX-8000/llama3_1-8b" in first.message and "Acme_BX-9000/llama3_1-8b" in first.message
    assert "the system differs" in first.message and first.fix
    assert run.findings.get(pk=first.pk).step == ""  # written by the join
    assert_failed_on(run, SEVEN_ARCHIVES_ERRORS | {"submission-scope"})
    assert run.counts["error"] == 4 + 7 and run.report["verdict"] == "fail"  # 4 accuracy-sample-count
    assert any(f["rule"] == "submission-scope" for f in run.report["findings"])


def test_run_archives_of_another_model_fail_with_submission_scope(role_users):
    acme = role_users["organisations"]["acme"]
    _, system = make_catalog(acme)
    other_model, _ = Benchmark.objects.get_or_create(
        model_id="qwen3-0.6b-test",
        defaults={
            "display_name": "Another model",
            "dataset": "CNN/DailyMail",
            "workload": "chat",
            "tokenizer_path": "sample-bpe-4k/tokenizer.json",
            "ruleset_version": SAMPLE_RULESET,  # the sample runs are short
        },
    )
    run = _checked_run(
        role_users["submitter"], _create(role_users["submitter"], system, other_model), paths=RUN_ARCHIVES[:2]
    )
    # c1 and c16 alone: besides the scope, too few points and no high-concurrency or offline one
    assert_failed_on(
        run,
        {
            "submission-scope",
            "accuracy-coverage",
            "accuracy-sample-count",
            "high-concurrency-coverage",
            "low-concurrency-coverage",
            "offline-point-present",
            "point-count",
        },
    )
    scope = run.findings.filter(rule="submission-scope")
    assert scope.count() == 2
    assert all(
        "the model differs" in f.message and "Acme_AX-8000/qwen3-0.6b-test" in f.message for f in scope
    )


def test_matching_scope_and_description_add_neither_finding(role_users):
    acme = role_users["organisations"]["acme"]
    benchmark, system = make_catalog(acme)
    # keys the rules let vary per point (here tps_utilization and batch) are not the system's identity
    system.description = {**sample_system_desc(), "tps_utilization": 0.5, "batch": 999}
    system.save()
    run = _checked_run(role_users["submitter"], _create(role_users["submitter"], system, benchmark))
    assert not run.findings.filter(rule__in=["submission-scope", "system-desc-mismatch"]).exists()
    assert_failed_on(run, SEVEN_ARCHIVES_ERRORS)


def test_uploaded_description_differing_from_the_registered_one_is_a_warning(role_users):
    from submissions.services import system_update_description

    acme = role_users["organisations"]["acme"]
    benchmark, system = make_catalog(acme)
    registered = {**sample_system_desc(), "system_size": "2 nodes, 16 accelerators"}
    registered.pop("batch")
    system = system_update_description(system=system, description=registered, actor=role_users["submitter"])
    run = _checked_run(role_users["submitter"], _create(role_users["submitter"], system, benchmark))
    mismatch = list(run.findings.filter(rule="system-desc-mismatch"))
    assert len(mismatch) == 1  # the seven identical copies are one finding
    finding = mismatch[0]
    assert finding.severity == "warning"
    assert_failed_on(run, SEVEN_ARCHIVES_ERRORS)  # a warning: the verdict does not change
    # batch may differ per point (ruleset disclosure.system_desc_per_point): only system_size is named
    assert "top-level key system_size" in finding.message and "6 more points" in finding.message
    assert "revision 2" in finding.message
    assert finding.file == "AX-8000_c1.tar.gz:c1/system_desc.json"
    assert not run.findings.filter(rule="submission-scope").exists()
    # A warning does not fail the check by itself.
    assert run.status == (CheckRun.Status.FAILED if run.counts["error"] else CheckRun.Status.PASSED)
