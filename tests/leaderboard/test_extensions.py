"""Incremental submissions (docs/extensions.md) through the real upload, check and publication services with the
sample run archives: an extension's points are judged together with the published curve, publishing one makes the
result's next revision, and a hardware change is refused."""

from __future__ import annotations

import pytest

from audit.models import AuditEvent
from leaderboard.models import Publication, PublicationRevision
from leaderboard.publishing import extensions, services
from portal.errors import ApplicationError, ConflictError, NotAllowedError
from submissions.models import Submission
from tests.leaderboard.extension_support import archive, checked, published_result, relabelled, to_audited
from tests.states import put
from tests.submissions.support import RUN_ARCHIVES, make_catalog

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("storage_dir")]

R = "Acme_AX-8000/llama3_1-8b/r"


def _errors(run) -> set[tuple[str, str]]:
    return set(run.findings.filter(severity="error").values_list("rule", "point"))


def _curve_points(curve) -> list[tuple]:
    return [(p["concurrency"], p.get("revision"), p.get("stack")) for p in curve["points"]]


@pytest.fixture
def acme(role_users):
    benchmark, system = make_catalog(role_users["organisations"]["acme"])
    return role_users["submitter"], system, benchmark


def test_an_extension_that_adds_a_point_is_judged_with_the_published_curve_and_publishes_revision_2(acme):
    submitter, system, benchmark = acme
    publication = published_result(submitter, system, benchmark, [archive(c) for c in (1, 2, 4, 8, 16, 32)])
    # Six points alone break curve rules (too few points, no offline point, accuracy coverage).
    assert {"point-count", "offline-point-present", "accuracy-coverage"} <= {
        r for r, _ in _errors(publication.check_run)
    }
    extension = extensions.extension_open(
        publication=publication, actor=submitter, stack="acme-serve 1.0", software="acme-serve 0.9 -> 1.0"
    )
    assert extension.extends_id == publication.submission_id and extension.status == "draft"
    run = checked(submitter, extension, [archive(64)])
    # The union has seven points: the curve-level errors of the published six are gone; what is left is the new
    # point's own error (the sample runs are too short for the accuracy rule, as in every sample upload).
    assert _errors(run) == {("accuracy-sample-count", f"{R}64")}
    assert _curve_points(run.curves[0]) == [
        *[(c, 1, "acme-serve 0.9") for c in (1, 2, 4, 8, 16, 32)],
        (64, None, "acme-serve 1.0"),
    ]
    assert run.point_metrics.count() == 1  # only the new point was recomputed
    assert not run.findings.filter(rule="extension-replaces-point").exists()

    services.publication_schedule(submission=to_audited(extension), actor=submitter, mode="now")
    publication.refresh_from_db()
    assert publication.public_id == f"EP-{publication.pk:06d}"  # the public id stays
    assert publication.headline["points"] == 7 and publication.version_id == extension.submitted_version_id
    assert _curve_points(publication.curve)[-1] == (64, 2, "acme-serve 1.0")
    revisions = list(publication.revisions.order_by("number"))
    assert [(r.number, r.status, r.submission_id) for r in revisions] == [
        (1, "published", publication.submission_id),
        (2, "published", extension.pk),
    ]
    assert revisions[0].headline["points"] == 6 and revisions[1].headline["points"] == 7
    assert revisions[0].version.sha256 != revisions[1].version.sha256  # each revision keeps its own bundle
    assert revisions[1].replaced == []
    extension.refresh_from_db()
    assert extension.status == "published" and extension.revision == 2
    assert AuditEvent.objects.filter(action="publication.revised", data__revision=2).exists()


def test_an_extension_that_replaces_a_point_keeps_the_replaced_one_in_the_history(acme, tmp_path):
    submitter, system, benchmark = acme
    publication = published_result(submitter, system, benchmark, list(RUN_ARCHIVES))
    extension = extensions.extension_open(
        publication=publication, actor=submitter, stack="acme-serve 1.0", software="acme-serve 1.0"
    )
    # A re-measurement of c32 (the c16 run's measurements, moved to concurrency 32).
    run = checked(
        submitter, extension, [relabelled(archive(16), tmp_path, concurrency=32, name="AX-8000_c32.tar.gz")]
    )
    replaces = run.findings.get(rule="extension-replaces-point")
    assert replaces.point == f"{R}32" and "revision 1" in replaces.message
    assert [p[:2] for p in _curve_points(run.curves[0])] == [
        (1, 1),
        (2, 1),
        (4, 1),
        (8, 1),
        (16, 1),
        (32, None),
        (64, 1),
    ]
    old32 = next(p for p in publication.curve["points"] if p["concurrency"] == 32)
    new32 = next(p for p in run.curves[0]["points"] if p["concurrency"] == 32)
    assert new32["system_tps"] != old32["system_tps"]

    put(Submission.objects.filter(pk=extension.pk), "audited", submitted_version=run.version)
    extension.refresh_from_db()
    services.publication_schedule(submission=extension, actor=submitter, mode="now")
    revision = PublicationRevision.objects.get(submission=extension)
    assert revision.number == 2 and [r["concurrency"] for r in revision.replaced] == [32]
    replaced = revision.replaced[0]
    assert replaced["from_revision"] == 1 and replaced["from_stack"] == "acme-serve 0.9"
    assert replaced["before"]["system_tps"] == old32["system_tps"]
    assert replaced["after"]["system_tps"] == new32["system_tps"]
    publication.refresh_from_db()
    assert [p for p in publication.curve["points"] if p["concurrency"] == 32][0]["system_tps"] == new32[
        "system_tps"
    ]
    # Revision 1 keeps the replaced measurement, untouched.
    first = publication.revisions.get(number=1)
    assert [p for p in first.curve["points"] if p["concurrency"] == 32][0]["system_tps"] == old32[
        "system_tps"
    ]


def test_an_extension_that_breaks_a_curve_rule_fails(acme, tmp_path):
    submitter, system, benchmark = acme
    publication = published_result(submitter, system, benchmark, list(RUN_ARCHIVES))
    extension = extensions.extension_open(publication=publication, actor=submitter, stack="acme-serve 0.9")
    # A point at concurrency 128, above the max_supported_concurrency (64) every published point declares.
    run = checked(
        submitter, extension, [relabelled(archive(64), tmp_path, concurrency=128, name="AX-8000_c128.tar.gz")]
    )
    assert run.status == "failed"
    # The published curve elected c64 as its offline point; in the union c64 is no longer C_max, so the curve has
    # no offline point: a curve-level rule the new point alone cannot break.
    assert ("offline-point-present", "") in _errors(run)
    assert ("concurrency-in-range", f"{R}128") in _errors(run)
    assert not publication.check_run.findings.filter(rule="offline-point-present", severity="error").exists()


def test_a_hardware_change_is_not_an_extension(acme, tmp_path, role_users):
    submitter, system, benchmark = acme
    publication = published_result(submitter, system, benchmark, list(RUN_ARCHIVES))
    with pytest.raises(ApplicationError) as refused:
        extensions.extension_open(
            publication=publication, actor=submitter, stack="acme-serve 1.0", hardware_changed=True
        )
    assert refused.value.code == "extension-hardware-change" and "new submission" in refused.value.detail
    assert not Submission.objects.filter(extends=publication.submission).exists()

    # Declared as a software change, but the points say otherwise: the check fails on the hardware.
    extension = extensions.extension_open(
        publication=publication, actor=submitter, stack="acme-serve 1.0", software="x"
    )

    def other_accelerator(description):
        description["node_types"][0]["accelerator_info"][0]["accelerator_model_name"] = "Acme A2 (fictional)"

    run = checked(submitter, extension, [relabelled(archive(64), tmp_path, description=other_accelerator)])
    hardware = run.findings.get(rule="extension-hardware-change")
    assert hardware.severity == "error" and hardware.point == f"{R}64"
    assert "accelerator_model_name" in hardware.message and "new submission" in hardware.fix


def test_an_undeclared_software_change_fails_and_a_declared_one_is_labelled(acme, tmp_path):
    submitter, system, benchmark = acme
    publication = published_result(submitter, system, benchmark, list(RUN_ARCHIVES))
    extension = extensions.extension_open(publication=publication, actor=submitter, stack="acme-serve 1.0")

    def new_backend(description):
        description["node_types"][0]["inference_backend"] = "acme-serve 1.0"

    run = checked(submitter, extension, [relabelled(archive(64), tmp_path, description=new_backend)])
    assert ("extension-undeclared-change", f"{R}64") in _errors(run)
    assert not run.findings.filter(rule="system-description-consistency", severity="error").exists()


def test_who_may_open_an_extension_and_when(acme, role_users):
    submitter, system, benchmark = acme
    publication = published_result(submitter, system, benchmark, list(RUN_ARCHIVES))
    with pytest.raises(NotAllowedError):
        extensions.extension_open(publication=publication, actor=role_users["reviewer"], stack="s")
    with pytest.raises(ApplicationError) as no_stack:
        extensions.extension_open(publication=publication, actor=submitter, stack=" ")
    assert no_stack.value.code == "invalid"
    # A benchmark closed for new submissions takes no extension either (the same service as every new draft).
    type(benchmark).objects.filter(pk=benchmark.pk).update(is_active=False)
    with pytest.raises(ConflictError) as closed:
        extensions.extension_open(publication=publication, actor=submitter, stack="s")
    assert closed.value.code == "benchmark-inactive"
    type(benchmark).objects.filter(pk=benchmark.pk).update(is_active=True)
    first = extensions.extension_open(publication=publication, actor=submitter, stack="s")
    created = AuditEvent.objects.filter(action="submission.created", object_id=str(first.pk)).get()
    assert created.data["extends"] == publication.submission_id and created.data["stack"] == "s"
    with pytest.raises(ConflictError) as second:
        extensions.extension_open(publication=publication, actor=submitter, stack="s")
    assert second.value.code == "extension-open" and f"#{first.pk}" in second.value.detail
    Publication.objects.filter(pk=publication.pk).update(retracted_at="2026-11-30T00:00:00Z")
    publication.refresh_from_db()
    with pytest.raises(ConflictError) as retracted:
        extensions.extension_open(publication=publication, actor=submitter, stack="s")
    assert retracted.value.code == "result-retracted"
