"""Previews: another tool's output uploaded by an organisation, recomputed by the registry's importers, drawn beside
published curves and compared with a baseline; private to the organisation, never a submission."""

from __future__ import annotations

import base64
import io
import json
import tarfile

import pytest

from checker.cli.import_pipeline import import_runs
from leaderboard.models import Publication
from portal.errors import ApplicationError, NotAllowedError
from previews import services
from previews.comparison import differences, percent_difference
from previews.models import Preview
from submissions.models import Submission
from tests.factories import MembershipFactory, SystemFactory, UserFactory
from tests.leaderboard.goodput_support import publish_sample_run
from tests.previews.support import FIXTURES, GUIDELLM, VLLM, VLLM_ERRORS, files_of, folder_tar

NOT_MLPERF = b"Not an MLPerf result"


@pytest.fixture
def acme_system(role_users, sample_catalog, storage_dir):
    benchmark, system = sample_catalog
    return benchmark, system


def _upload(user, system, benchmark, files, capture, name="vLLM sweep"):
    with capture(execute=True):
        preview = services.preview_create(
            actor=user, system=system, benchmark=benchmark, name=name, files=files
        )
    preview.refresh_from_db()
    return preview


def test_a_vllm_sweep_is_recomputed_point_by_point_like_portal_import(
    role_users, acme_system, django_capture_on_commit_callbacks
):
    benchmark, system = acme_system
    preview = _upload(
        role_users["submitter"], system, benchmark, files_of(VLLM), django_capture_on_commit_callbacks
    )
    assert preview.in_state("checked") and preview.tool == "vllm_bench" and preview.error_count == 0
    expected = import_runs(VLLM)
    assert [p["concurrency"] for p in preview.curve["points"]] == [1, 4, 8]
    for drawn, point in zip(preview.curve["points"], expected.points, strict=True):
        assert drawn["system_tps"] == pytest.approx(point["portal"]["system_tps"], rel=1e-12)
        assert drawn["ttft_p90_ms"] == pytest.approx(point["portal"]["ttft_p90_ms"], rel=1e-12)
    assert preview.result["max_relative_difference"] <= 1e-9
    assert "tps_per_user" in preview.curve["pareto"]  # drawn as the official step function
    assert not Submission.objects.exists() and not Publication.objects.exists()  # never a submission


def test_an_archive_of_an_output_folder_keeps_its_folders(
    role_users, acme_system, django_capture_on_commit_callbacks
):
    benchmark, system = acme_system
    files = [folder_tar(FIXTURES / "inference_perf" / c) for c in ("c1", "c4", "c8")]
    preview = _upload(role_users["submitter"], system, benchmark, files, django_capture_on_commit_callbacks)
    assert preview.in_state("checked") and preview.tool == "inference_perf"
    assert sorted(p["concurrency"] for p in preview.curve["points"]) == [1, 4, 8]


def test_a_run_with_server_errors_counts_its_failures(
    role_users, acme_system, django_capture_on_commit_callbacks
):
    benchmark, system = acme_system
    preview = _upload(
        role_users["submitter"],
        system,
        benchmark,
        files_of([VLLM_ERRORS]),
        django_capture_on_commit_callbacks,
    )
    (point,) = preview.result["points"]
    assert point["reported"]["requests_failed"] > 0
    assert point["recomputed"]["requests_failed"] == point["reported"]["requests_failed"]
    assert preview.in_state("checked")


def test_a_file_no_tool_wrote_is_a_finding_not_a_500(
    role_users, acme_system, django_capture_on_commit_callbacks
):
    benchmark, system = acme_system
    files = [("notes.json", b'{"hello": "world"}')]
    preview = _upload(role_users["submitter"], system, benchmark, files, django_capture_on_commit_callbacks)
    assert preview.in_state("failed")
    assert "import-unrecognised" in {f["rule"] for f in preview.findings}


def test_a_string_where_the_tool_writes_a_number_is_named_on_the_page_and_in_the_api(
    client, role_users, acme_system, django_capture_on_commit_callbacks
):
    benchmark, system = acme_system
    written = json.loads(VLLM[0].read_text())
    written["max_concurrency"] = "1"
    files = [("c1.json", json.dumps(written).encode())]
    preview = _upload(role_users["submitter"], system, benchmark, files, django_capture_on_commit_callbacks)
    # the point has no concurrency to draw without it: the preview fails, saying which field of which file
    assert preview.in_state("failed")
    client.force_login(role_users["submitter"])
    detail = client.get(f"/api/v1/previews/{preview.pk}/").json()
    named = [f for f in detail["findings"] if f["rule"] == "import-field-type"]
    assert [(f["file"], f["pointer"], f["severity"]) for f in named] == [
        ("c1.json", "/max_concurrency", "error")
    ]
    assert 'the text "1" where vLLM writes a whole number' in named[0]["message"]
    page = client.get(f"/previews/{preview.pk}/")
    assert b"import-field-type" in page.content
    assert (
        b"c1.json /max_concurrency: the text &quot;1&quot; where vLLM writes a whole number" in page.content
    )
    assert b"Import the file exactly as vLLM wrote it" in page.content


def test_a_hostile_archive_gets_findings_and_writes_nothing_outside(
    role_users, acme_system, django_capture_on_commit_callbacks, tmp_path
):
    benchmark, system = acme_system
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        data = GUIDELLM.read_bytes()
        info = tarfile.TarInfo("../../escaped/benchmarks.json")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
        link = tarfile.TarInfo("out/link.json")
        link.type, link.linkname = tarfile.SYMTYPE, "/etc/passwd"
        tar.addfile(link)
    files = [("evil.tar.gz", buffer.getvalue()), ("..", b"{}")]
    preview = _upload(role_users["submitter"], system, benchmark, files, django_capture_on_commit_callbacks)
    rules = {f["rule"] for f in preview.findings}
    assert preview.in_state("failed")
    assert {"archive-path-traversal", "archive-link", "preview-file-name"} <= rules, rules
    assert not (tmp_path.parent / "escaped").exists()


def test_caps_refuse_before_anything_is_stored(role_users, acme_system, settings):
    benchmark, system = acme_system
    settings.PORTAL_PREVIEW_MAX_BYTES = 1000
    with pytest.raises(ApplicationError) as refused:
        services.preview_create(
            actor=role_users["submitter"],
            system=system,
            benchmark=benchmark,
            name="big",
            files=files_of(VLLM),
        )
    assert refused.value.code == "preview-too-large"
    settings.PORTAL_PREVIEW_MAX_FILES = 2
    with pytest.raises(ApplicationError) as refused:
        services.preview_create(
            actor=role_users["submitter"],
            system=system,
            benchmark=benchmark,
            name="many",
            files=files_of(VLLM),
        )
    assert refused.value.code == "preview-too-many-files"
    assert not Preview.objects.exists()


def test_only_the_systems_organisation_uploads(role_users, acme_system):
    benchmark, system = acme_system
    for user in (role_users["reviewer"], role_users["auditor"], role_users["chair"]):
        with pytest.raises(NotAllowedError):
            services.preview_create(
                actor=user, system=system, benchmark=benchmark, name="x", files=files_of(VLLM)
            )


def test_percent_difference_is_against_the_baseline():
    assert percent_difference(110.0, 100.0) == pytest.approx(10.0)
    assert percent_difference(90.0, 100.0) == pytest.approx(-10.0)
    assert percent_difference(1.0, 0.0) is None and percent_difference(None, 1.0) is None
    rows = differences(
        {"points": [{"concurrency": 4, "system_tps": 200.0, "tps_per_user": 50.0, "ttft_p90_ms": 120.0}]},
        {"points": [{"concurrency": 4, "system_tps": 100.0, "tps_per_user": 100.0, "ttft_p90_ms": 100.0}]},
    )
    (row,) = rows
    cells = {c["key"]: c for c in row["cells"]}
    assert cells["system_tps"]["percent"] == pytest.approx(100.0) and cells["system_tps"]["better"] is True
    assert (
        cells["tps_per_user"]["percent"] == pytest.approx(-50.0) and cells["tps_per_user"]["better"] is False
    )
    assert cells["ttft_p90_ms"]["percent"] == pytest.approx(20.0) and cells["ttft_p90_ms"]["better"] is False


@pytest.fixture
def published(role_users, storage_dir):
    """acme's published result of the real AX-8000 sample runs, nimbus's of the NB-2 ones: (own, other)."""
    from tests.factories import BenchmarkFactory

    benchmark = BenchmarkFactory(sample=True)
    own = publish_sample_run(
        benchmark=benchmark,
        system_name="Acme_AX-8000",
        accelerators=8,
        organisation=role_users["organisations"]["acme"],
    )
    other = publish_sample_run(
        benchmark=benchmark,
        system_name="Nimbus_NB-2",
        accelerators=4,
        organisation=role_users["organisations"]["nimbus"],
    )
    return own, other


def test_the_page_draws_the_preview_beside_the_published_curve_with_percent_differences(
    client, role_users, published, django_capture_on_commit_callbacks
):
    with_published, other = published
    benchmark, system = with_published.submission.benchmark, with_published.submission.system
    preview = _upload(
        role_users["submitter"], system, benchmark, files_of(VLLM), django_capture_on_commit_callbacks
    )
    client.force_login(role_users["submitter"])
    page = client.get(f"/previews/{preview.pk}/")
    assert page.status_code == 200 and NOT_MLPERF in page.content
    labels = [s["label"] for s in page.context["charts"][0]["series"]]
    assert labels[0].endswith("(preview, not an MLPerf result)")
    # the legend gives a preview's curve no verification level of a published result; the published curve keeps its
    levels = [s["level"] for s in page.context["charts"][0]["series"]]
    assert levels[0] == "recomputed from the tool's per-request records" and levels[1] == "fully recomputed"
    assert b"(recomputed from the tool&#x27;s per-request records)" in page.content
    # by default its own organisation's published curves; any other published result on request
    assert any(with_published.public_id in label for label in labels)
    assert not any(other.public_id in label for label in labels)
    chosen = client.get(f"/previews/{preview.pk}/?beside={other.public_id}&baseline=result:{other.public_id}")
    labels = [s["label"] for s in chosen.context["charts"][0]["series"]]
    assert any(other.public_id in label for label in labels)
    assert chosen.context["baseline"][0] == f"result:{other.public_id}"
    rows = page.context["rows"]
    published = {p["concurrency"]: p for p in with_published.curve["points"]}
    assert rows and all(r["concurrency"] in published for r in rows)
    for row in rows:
        tps = next(c for c in row["cells"] if c["key"] == "system_tps")
        mine = next(p for p in preview.curve["points"] if p["concurrency"] == row["concurrency"])
        base = published[row["concurrency"]]["system_tps"]
        assert tps["percent"] == pytest.approx((mine["system_tps"] - base) / base * 100.0)
    assert b"data-diff-table" in page.content
    listing = client.get("/previews/")
    assert (
        listing.status_code == 200
        and NOT_MLPERF in listing.content
        and preview.name.encode() in listing.content
    )


def test_the_public_board_never_shows_a_preview(
    client, role_users, published, django_capture_on_commit_callbacks
):
    with_published, _other = published
    benchmark, system = with_published.submission.benchmark, with_published.submission.system
    _upload(
        role_users["submitter"],
        system,
        benchmark,
        files_of(VLLM),
        django_capture_on_commit_callbacks,
        "Zq-preview-7",
    )
    for url in ("/", f"/leaderboard/{benchmark.model_id}/", f"/results/{with_published.public_id}/"):
        response = client.get(url)
        assert response.status_code == 200, url
        assert b"Zq-preview-7" not in response.content, url


def test_another_organisation_auditors_and_the_chair_get_404(
    client, role_users, acme_system, django_capture_on_commit_callbacks
):
    benchmark, system = acme_system
    preview = _upload(
        role_users["submitter"], system, benchmark, files_of(VLLM), django_capture_on_commit_callbacks
    )
    for user in (role_users["reviewer"], role_users["auditor"], role_users["chair"]):
        client.force_login(user)
        for method, url in (
            ("get", f"/previews/{preview.pk}/"),
            ("post", f"/previews/{preview.pk}/recheck/"),
            ("post", f"/previews/{preview.pk}/delete/"),
            ("get", f"/api/v1/previews/{preview.pk}/"),
        ):
            assert getattr(client, method)(url).status_code == 404, (user, url)
        assert (
            client.get("/api/v1/previews/").json()["results"] == []
            if isinstance(client.get("/api/v1/previews/").json(), dict)
            else client.get("/api/v1/previews/").json() == []
        )
    client.logout()
    assert client.get(f"/previews/{preview.pk}/").status_code == 302
    assert Preview.objects.filter(pk=preview.pk).exists()


def test_a_member_who_does_not_upload_sees_but_does_not_change(
    client, role_users, acme_system, django_capture_on_commit_callbacks
):
    benchmark, system = acme_system
    preview = _upload(
        role_users["submitter"], system, benchmark, files_of(VLLM), django_capture_on_commit_callbacks
    )
    viewer = UserFactory(username="acme-reviewer")
    MembershipFactory(user=viewer, organisation=role_users["organisations"]["acme"], role="reviewer")
    client.force_login(viewer)
    assert client.get(f"/previews/{preview.pk}/").status_code == 200
    assert client.post(f"/previews/{preview.pk}/delete/").status_code == 302
    assert Preview.objects.filter(pk=preview.pk).exists()


def test_the_api_uploads_lists_rechecks_and_deletes(
    client, role_users, acme_system, django_capture_on_commit_callbacks
):
    benchmark, system = acme_system
    client.force_login(role_users["submitter"])
    body = {
        "system": system.name,
        "benchmark": benchmark.model_id,
        "name": "GuideLLM sweep",
        "files": [{"name": "benchmarks.json", "content": base64.b64encode(GUIDELLM.read_bytes()).decode()}],
    }
    with django_capture_on_commit_callbacks(execute=True):
        created = client.post("/api/v1/previews/", body, content_type="application/json")
    assert created.status_code == 201, created.content
    pk = created.json()["id"]
    detail = client.get(f"/api/v1/previews/{pk}/").json()
    assert detail["status"] == "checked" and detail["tool"] == "guidellm"
    assert detail["notice"].startswith("Not an MLPerf result")
    listed = client.get("/api/v1/previews/").json()
    rows = listed["results"] if isinstance(listed, dict) else listed
    assert [r["id"] for r in rows] == [pk]
    with django_capture_on_commit_callbacks(execute=True):
        assert client.post(f"/api/v1/previews/{pk}/recheck/").status_code == 200
    assert Preview.objects.get(pk=pk).in_state("checked")
    bad = client.post(
        "/api/v1/previews/",
        {**body, "system": "No_Such_System"},
        content_type="application/json",
    )
    assert bad.status_code == 400 and bad.json()["code"] == "unknown-system"
    assert client.delete(f"/api/v1/previews/{pk}/").status_code == 204
    assert not Preview.objects.exists()


def test_the_upload_form_makes_a_preview(client, role_users, acme_system, django_capture_on_commit_callbacks):
    from django.core.files.uploadedfile import SimpleUploadedFile

    benchmark, system = acme_system
    client.force_login(role_users["submitter"])
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            "/previews/",
            {
                "name": "vLLM c4",
                "system": system.pk,
                "benchmark": benchmark.pk,
                "files": [SimpleUploadedFile("c4.json", VLLM[1].read_bytes())],
            },
        )
    preview = Preview.objects.get()
    assert response.status_code == 302 and response["Location"] == f"/previews/{preview.pk}/"
    assert preview.in_state("checked") and preview.created_by == role_users["submitter"]
    other = SystemFactory(organisation=role_users["organisations"]["nimbus"])
    refused = client.post("/previews/", {"name": "x", "system": other.pk, "benchmark": benchmark.pk})
    assert refused.status_code == 400 and Preview.objects.count() == 1


def test_an_imported_runs_page_says_why_the_tools_percentile_differs_from_the_portals(
    client, role_users, acme_system, django_capture_on_commit_callbacks
):
    """GuideLLM's TTFT P90 (the first value reaching 90 % of its weighted distribution) against the portal's
    (MLPerf's "lower" rank): the page names both definitions and the first point's two figures."""
    benchmark, system = acme_system
    preview = _upload(
        role_users["submitter"],
        system,
        benchmark,
        files_of([GUIDELLM]),
        django_capture_on_commit_callbacks,
        "GuideLLM",
    )
    point = preview.result["points"][0]
    tool, portal = point["reported"]["ttft_ms_p90"], point["portal"]["ttft_p90_ms"]
    assert tool != portal  # the same requests, two definitions
    client.force_login(role_users["submitter"])
    page = client.get(f"/previews/{preview.pk}/").content.decode()
    start = page.index("data-percentile-note")
    note = page[start : page.index("</div>", start)]
    assert "Why the tool's TTFT P90 and the portal's differ" in note
    assert f"{tool:.2f} ms against {portal:.2f} ms at {point['label']}" in note  # 94.14 against 93.58
    assert "GuideLLM takes the first value whose cumulative share reaches 90 %" in note
    assert "numpy&#x27;s &quot;lower&quot; method" in note and "never an interpolation" in note


def test_a_system_given_as_a_unicode_digit_is_a_name_not_a_crash(client, role_users, acme_system):
    """`²` passes str.isdigit(): it is read as a system's name (none has it), a 400 naming it, never a 500."""
    client.force_login(role_users["submitter"])
    benchmark, _ = acme_system
    body = {
        "system": "²",
        "benchmark": benchmark.model_id,
        "name": "GuideLLM sweep",
        "files": [{"name": "benchmarks.json", "content": base64.b64encode(GUIDELLM.read_bytes()).decode()}],
    }
    answer = client.post("/api/v1/previews/", body, content_type="application/json")
    assert answer.status_code == 400 and answer.json()["code"] == "unknown-system"
