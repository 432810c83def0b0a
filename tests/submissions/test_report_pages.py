"""The submission page in the official tools' vocabulary (points r<C>, region ids with a label), what only the
portal reports (marked, and why the counts differ from `portal check`), and the report as a JSON download, a
printable summary and two versions compared."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from django.utils import timezone

from submissions.models import CheckRun, Finding, PointMetric, SubmissionVersion
from tests.states import put
from tests.submissions.support import api_client
from tests.submissions.test_pages import make_submission

pytestmark = pytest.mark.django_db


@pytest.fixture
def people(role_users):
    return {**role_users, "other_org_member": role_users["reviewer"]}


def _add_portal_findings(run: CheckRun) -> None:
    Finding.objects.create(
        check_run=run,
        rule="system-desc-mismatch",
        severity="warning",
        file="AX-8000_c16.tar.gz:c16/system_desc.json",
        message="c16/system_desc.json differs from the registered description of Acme_AX-8000.",
    )
    Finding.objects.create(
        check_run=run,
        rule="official-checker-disagreement",
        severity="info",
        message="Official checker: error metric-consistency-accounting; portal: none.",
    )


def test_points_and_regions_use_the_official_names_with_a_label(client, people):
    submission = make_submission(people)
    client.force_login(people["submitter"])
    html = client.get(f"/submissions/{submission.pk}/").content.decode()
    table = html[
        html.index('<table class="points">') : html.index("</table>", html.index('<table class="points">'))
    ]
    point = re.search(r'<th scope="row"[^>]*>r16.*?</th>', table, re.S).group(0)
    assert ">c16" not in table and "ultra-low" not in html
    # The official region id under the point, its label beside it as a tooltip and in the table's legend.
    assert '<code class="region" title="medium concurrency">med_<wbr>concurrency</code>' in point
    assert "Regions, by their official ids: <code>med_concurrency</code> medium concurrency." in html
    chart = html[html.index('<svg class="step-chart"') :]
    assert '<text class="point-label"' in chart and ">r16</text>" in chart and ">c16</text>" not in chart


def test_portal_only_findings_are_marked_and_the_count_difference_explained(client, people):
    submission = make_submission(people)
    run = CheckRun.objects.get(version__submission=submission)
    _add_portal_findings(run)
    client.force_login(people["submitter"])
    html = client.get(f"/submissions/{submission.pk}/").content.decode()
    explanation = html[html.index("data-portal-only-counts") :]
    explanation = explanation[: explanation.index("</p>")]
    assert "Why <code>portal check</code> counts fewer on the same files" in explanation
    assert "1 warning" in explanation and "1 note" in explanation
    assert 'href="/rules/#rule-system-desc-mismatch"' in explanation
    assert "Without them: 1 error, 0 warnings, 0 info" in explanation
    finding = html[html.index('href="/rules/#rule-system-desc-mismatch" title') :]
    assert "portal only</span>" in finding[: finding.index("</li>")]
    # The API marks it too, and names each point's region by its official id with the label beside it.
    body = api_client(people["submitter"]).get(f"/api/v1/check-runs/{run.pk}/").json()
    marks = {f["rule"]: f["portal_only"] for f in body["findings"]}
    assert marks == {
        "raw-log-consistency": False,
        "system-desc-mismatch": True,
        "official-checker-disagreement": False,
    }
    (point,) = body["point_metrics"]
    assert (point["region"], point["region_label"]) == ("med_concurrency", "medium concurrency")


def test_no_explanation_when_the_counts_are_those_of_portal_check(client, people):
    submission = make_submission(people)
    client.force_login(people["submitter"])
    assert "data-portal-only-counts" not in client.get(f"/submissions/{submission.pk}/").content.decode()


def test_report_json_download(client, people):
    submission = make_submission(people)
    run = CheckRun.objects.get(version__submission=submission)
    _add_portal_findings(run)
    CheckRun.objects.filter(pk=run.pk).update(
        report={
            "format": "endpoints-portal-report/1",
            "verdict": "fail",
            "checker_version": "test",
            "ruleset": "endpoints-v1.0",
            "counts": {"error": 1, "warning": 1, "info": 1},
            "points": [{"system": "Acme_AX-8000", "model": "llama3_1-8b", "concurrency": 16, "source": "x"}],
            "curves": [],
            "findings": [],
        }
    )
    client.force_login(people["submitter"])
    page = client.get(f"/submissions/{submission.pk}/").content.decode()
    assert f'href="/submissions/{submission.pk}/versions/1/report.json" download' in page
    response = client.get(f"/submissions/{submission.pk}/versions/1/report.json")
    assert response.status_code == 200 and response["Content-Type"] == "application/json"
    assert response["Content-Disposition"] == (
        f'attachment; filename="submission-{submission.pk}-v1-report.json"'
    )
    document = json.loads(response.content)
    assert document["format"] == "endpoints-portal-report/1" and document["verdict"] == "fail"
    assert [(f["rule"], f["portal_only"]) for f in document["findings"]] == [
        ("raw-log-consistency", False),
        ("system-desc-mismatch", True),
        ("official-checker-disagreement", False),
    ]
    assert document["portal"]["submission"] == submission.pk and document["portal"]["version"] == 1
    assert document["portal"]["url"].endswith(f"/submissions/{submission.pk}/?version=1")
    # While the check runs there is no report yet: 409 with a stable code, not an empty file.
    put(CheckRun.objects.filter(pk=run.pk), CheckRun.Status.RUNNING)
    busy = client.get(f"/submissions/{submission.pk}/versions/1/report.json")
    assert busy.status_code == 409 and busy.json()["code"] == "check-not-finished"


def test_report_json_validates_against_the_report_schema(client, people):
    from jsonschema import Draft202012Validator

    schema = json.loads((Path(__file__).parents[2] / "checker/schemas/report.schema.json").read_text())
    submission = make_submission(people)
    _add_portal_findings(CheckRun.objects.get(version__submission=submission))
    client.force_login(people["submitter"])
    document = json.loads(client.get(f"/submissions/{submission.pk}/versions/1/report.json").content)
    assert [e.message for e in Draft202012Validator(schema).iter_errors(document)] == []
    assert schema["$defs"]["finding"]["properties"]["portal_only"] == {"type": "boolean"}
    assert "portal" in schema["properties"]


def test_printable_summary(client, people):
    submission = make_submission(people)
    client.force_login(people["submitter"])
    page = client.get(f"/submissions/{submission.pk}/").content.decode()
    assert f'href="/submissions/{submission.pk}/versions/1/summary/"' in page
    html = client.get(f"/submissions/{submission.pk}/versions/1/summary/").content.decode()
    assert (
        "css/summary.css" in html
        and "js/print_button.js" in html
        and "data-print>Print or save as PDF" in html
    )
    assert '<svg class="step-chart"' in html  # the curve
    assert re.search(r'<th scope="row">r16', html) and "2,093.7" in html  # the point table, recomputed values
    assert "raw-log-consistency" in html and "Upload the result_summary.json" in html  # findings with the fix
    # While the check runs, the page says so rather than showing an empty sheet.
    put(CheckRun.objects.filter(version__submission=submission), CheckRun.Status.QUEUED)
    waiting = client.get(f"/submissions/{submission.pk}/versions/1/summary/").content.decode()
    assert "data-check-not-finished" in waiting and "has not finished yet" in waiting


def _second_version(submission, people) -> CheckRun:
    first = submission.versions.get(number=1)
    version = SubmissionVersion.objects.create(
        submission=submission,
        number=2,
        kind=first.kind,
        size_bytes=first.size_bytes,
        sha256=first.sha256,
        uploader=people["submitter"],
    )
    now = timezone.now()
    run = CheckRun.objects.create(
        version=version, started_at=now, finished_at=now, counts={"error": 0, "warning": 1, "info": 0}
    )
    put(CheckRun.objects.filter(pk=run.pk), CheckRun.Status.PASSED)
    PointMetric.objects.create(
        check_run=run,
        system="Acme_AX-8000",
        model="llama3_1-8b",
        concurrency=16,
        key="Acme_AX-8000/llama3_1-8b/r16",
        source="run-archive",
        claimed={"system_tps": 2300.0},
        recomputed={"system_tps": 2300.0, "tps_per_user": 99.7, "ttft_p90_ms": 130.0},
        extra={"region": "med_concurrency"},
    )
    PointMetric.objects.create(
        check_run=run,
        system="Acme_AX-8000",
        model="llama3_1-8b",
        concurrency=32,
        key="Acme_AX-8000/llama3_1-8b/r32",
        source="run-archive",
        claimed={"system_tps": 3000.0},
        recomputed={"system_tps": 3000.0, "tps_per_user": 90.0, "ttft_p90_ms": 150.0},
        extra={"region": "high_concurrency"},
    )
    Finding.objects.create(
        check_run=run,
        rule="system-desc-mismatch",
        severity="warning",
        message="c16/system_desc.json differs from the registered description of Acme_AX-8000.",
    )
    return run


def test_compare_two_versions(client, people):
    submission = make_submission(people)
    _second_version(submission, people)
    client.force_login(people["submitter"])
    page = client.get(f"/submissions/{submission.pk}/").content.decode()
    assert f'href="/submissions/{submission.pk}/compare/?b=2"' in page
    html = client.get(f"/submissions/{submission.pk}/compare/?b=2").content.decode()  # a: the one before
    added = html[html.index('id="added-heading"') : html.index('id="removed-heading"')]
    removed = html[html.index('id="removed-heading"') : html.index('id="points-compared"')]
    assert "system-desc-mismatch" in added and "portal only" in added and "raw-log-consistency" not in added
    assert "raw-log-consistency" in removed and "system-desc-mismatch" not in removed
    assert "1 added, 1 gone, 0 the same" in html
    points = html[html.index('<table class="points compare-points">') :]
    r16 = points[points.index(">r16<") : points.index("</tr>", points.index(">r16<"))]
    assert "2,093.7" in r16 and "2,300.0" in r16 and "+9.9%" in r16  # recomputed v1 vs v2, side by side
    r32 = points[points.index(">r32<") : points.index("</tr>", points.index(">r32<"))]
    assert "absent" in r32 and "3,000.0" in r32 and "<code>high_concurrency</code>" in r32
    # Versions it does not have are a 404 that names the ones it has.
    missing = client.get(f"/submissions/{submission.pk}/compare/?a=1&b=7")
    assert missing.status_code == 404 and "its versions: 1, 2" in missing.content.decode()


def test_compare_with_one_version_says_there_is_nothing_to_compare(client, people):
    submission = make_submission(people)
    client.force_login(people["submitter"])
    html = client.get(f"/submissions/{submission.pk}/compare/").content.decode()
    assert "nothing to compare yet" in html
    assert (
        f"/submissions/{submission.pk}/compare/"
        not in client.get(f"/submissions/{submission.pk}/").content.decode()
    )


def test_new_pages_follow_the_submission_page_visibility(client, people):
    submission = make_submission(people)  # a draft: only its organisation sees it
    urls = [
        f"/submissions/{submission.pk}/versions/1/report.json",
        f"/submissions/{submission.pk}/versions/1/summary/",
        f"/submissions/{submission.pk}/compare/",
    ]
    for url in urls:
        assert client.get(url).status_code == 302  # anonymous: to the login page
    client.force_login(people["reviewer"])
    for url in urls:
        assert client.get(url).status_code == 404
    client.force_login(people["submitter"])
    for url in urls:
        assert client.get(url).status_code == 200, url


def test_rules_page_groups_rules_by_area_and_marks_portal_only_ones(client):
    from submissions.rules_catalog import rule_catalog

    html = client.get("/rules/").content.decode()
    areas = re.findall(r'<section class="rule-area" id="area-([a-z0-9-]+)"', html)
    assert len(areas) >= 8 and len(set(areas)) == len(areas)
    assert areas[0] == "structure"  # docs/rules.md first, in its order
    assert {"accuracy", "power", "input-safety-archives-names-and-sizes"} <= set(areas)
    # Every documented rule sits in exactly one area, under the area's heading.
    chunks = html.split('<section class="rule-area" id="area-')[1:]
    placed = [
        rule
        for chunk in chunks
        for rule in re.findall(r'<section class="rule card" id="rule-([^"]+)"', chunk)
    ]
    assert sorted(placed) == sorted(rule_catalog())
    power = next(chunk for chunk in chunks if chunk.startswith("power"))
    assert 'id="rule-power-descriptor"' in power
    scope = html[html.index('id="rule-system-desc-mismatch"') :]
    assert "portal only</span>" in scope[: scope.index("</h3>")]
    index = html[
        html.index('<nav class="rule-index"') : html.index("</nav>", html.index('<nav class="rule-index"'))
    ]
    assert 'href="#area-power"' in index and 'href="#rule-power-descriptor"' in index


def test_every_finding_links_to_the_rules_page(client, people):
    submission = make_submission(people)
    run = CheckRun.objects.get(version__submission=submission)
    Finding.objects.create(check_run=run, rule="not-a-documented-rule", severity="info", message="x")
    client.force_login(people["submitter"])
    html = client.get(f"/submissions/{submission.pk}/").content.decode()
    assert 'href="/rules/#rule-raw-log-consistency"' in html
    assert 'href="/rules/?q=not-a-documented-rule"' in html  # no anchor of its own: the search for it


def test_benchmarks_link_to_their_leaderboard_page(client, people):
    submission = make_submission(people)
    client.force_login(people["submitter"])
    link = 'href="/leaderboard/llama3_1-8b/" class="benchmark-link"'
    assert link in client.get("/dashboard/").content.decode()  # the submissions table's benchmark
    assert link in client.get(f"/submissions/{submission.pk}/").content.decode()  # the page's heading
    assert link in client.get(f"/systems/{submission.system_id}/").content.decode()
    assert client.get("/leaderboard/llama3_1-8b/").status_code == 200  # the page it names exists


def test_public_result_names_regions_by_official_id_with_the_label(client, storage_dir):
    from tests.leaderboard.support import publish

    publication = publish()
    html = client.get(f"/results/{publication.public_id}/").content.decode()
    assert '<code>low_latency</code> <span class="muted">low latency</span>' in html
    assert '<code>high_concurrency</code> <span class="muted">high concurrency</span>' in html
