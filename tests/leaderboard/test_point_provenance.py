"""Every published point cites its own evidence across revisions (issue 33): on the demo's AX-8000 result after its
r48 extension is published as revision 3, each point's evidence link opens the archive that holds its raw log (the
version of the revision that measured it), with that raw log's SHA-256; the page shows each revision's waivers and
the stack of the revision shown; the points API, the points files and the procurement report cite the same.

Transactional: the demo runs in autocommit, where the checks finish in-process before the next step needs them."""

from __future__ import annotations

import csv
import hashlib
import io
import json
import re
import tarfile
from urllib.parse import urlencode

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.test import Client

from leaderboard.board.cache import public_cache_bump
from leaderboard.demo import AX8000_TITLE, IN_REVIEW_EXTENSION_TITLE
from leaderboard.models import Publication, PublicationRevision
from leaderboard.publishing import services
from review.demo import _audited
from submissions.models import PointMetric, Submission
from tests.factories import BenchmarkFactory

pytestmark = pytest.mark.django_db(transaction=True)

# The archive (and the revision that published it) holding each point of revision 3's curve.
EXPECTED = {
    1: (1, "AX-8000_c1.tar.gz"),
    2: (1, "AX-8000_c2.tar.gz"),
    4: (1, "AX-8000_c4.tar.gz"),
    8: (1, "AX-8000_c8.tar.gz"),
    16: (2, "AX-8000-v1.1_c16.tar.gz"),
    32: (2, "AX-8000-v1.1_c32.tar.gz"),
    48: (3, "AX-8000-v1.1_c48.tar.gz"),
    64: (1, "AX-8000_c64.tar.gz"),
}


def _demo_with_revision_3() -> Publication:
    """seed_demo, then its r48 extension (in review) audited through the demo's own flow and published now."""
    BenchmarkFactory(sample=True)
    call_command("seed_demo", stdout=io.StringIO())
    users = {u.username: u for u in get_user_model().objects.filter(username__startswith="demo-")}
    extension = Submission.objects.get(title=IN_REVIEW_EXTENSION_TITLE)
    _audited(extension, users)
    extension.refresh_from_db()
    assert extension.in_state("audited"), extension.status
    services.publication_schedule(submission=extension, actor=users["demo-submitter"], mode="now")
    public_cache_bump()
    return Publication.objects.get(submission__title=AX8000_TITLE)


def _get(url: str) -> str:
    response = Client().get(url)
    assert response.status_code == 200, (url, response.status_code)
    return b"".join(response.streaming_content).decode() if response.streaming else response.content.decode()


def json_of(url: str) -> dict:
    return json.loads(_get(url))


def _raw_log_sha256(archive_url: str, path: str) -> str:
    """Download the archive as a reader would and hash the raw log at `path` inside it."""
    response = Client().get(archive_url)
    assert response.status_code == 200, archive_url
    data = b"".join(response.streaming_content) if response.streaming else response.content
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        return hashlib.sha256(tar.extractfile(path).read()).hexdigest()


def test_every_point_of_a_revision_cites_the_archive_holding_its_own_raw_log():
    publication = _demo_with_revision_3()
    public_id = publication.public_id
    revisions = {r.number: r for r in PublicationRevision.objects.filter(publication=publication)}
    assert sorted(revisions) == [1, 2, 3]

    # The points API: the right archive, its download opens the raw log with that SHA-256.
    rows = {
        r["concurrency"]: r
        for r in Client().get("/api/v1/public/points/", {"result": public_id, "limit": 100}).json()["results"]
    }
    # (before per-point evidence, every row cited revision 3's bundle, which holds only c48)
    assert {c: r["bundle_sha256"] for c, r in rows.items()} == {
        c: revisions[number].version.sha256 for c, (number, _) in EXPECTED.items()
    }
    assert {c: (r["measured_in_revision"], r["archive"]) for c, r in rows.items()} == EXPECTED
    for row in rows.values():
        assert _raw_log_sha256(row["archive_url"], row["raw_log_path"]) == row["raw_log_sha256"]
        assert row["standing"] == "preview, not official" and row["ruleset"]

    # The snapshot: every point's evidence, from the revision that measured it.
    assert publication.record.revision == 3
    evidence = publication.record.point_evidence
    by_concurrency = {e["concurrency"]: e for e in evidence.values()}
    assert {c: (e["revision"], e["file"]["filename"]) for c, e in by_concurrency.items()} == EXPECTED
    for concurrency, (number, _) in EXPECTED.items():
        entry = by_concurrency[concurrency]
        run = revisions[number].check_run
        metric = PointMetric.objects.get(check_run=run, concurrency=concurrency)
        assert entry["raw_log_sha256"] == metric.raw_log_sha256 and len(metric.raw_log_sha256) == 64
        assert entry["version"] == revisions[number].version.number
        assert entry["path"] == f"c{concurrency}/events.jsonl"
    assert [s["revision"] for s in publication.record.sources] == [1, 2, 3]
    assert publication.record.sources[0]["waivers"], "revision 1 passed with waivers"

    # The points files: the same citations.
    points = {p["concurrency"]: p["evidence"] for p in json_of(f"/results/{public_id}/points.json")["points"]}
    assert {c: (e["measured_in_revision"], e["archive"]) for c, e in points.items()} == EXPECTED
    table = list(csv.DictReader(io.StringIO(_get(f"/results/{public_id}/points.csv"))))
    assert {int(r["concurrency"]): r["archive"] for r in table} == {c: a for c, (_, a) in EXPECTED.items()}

    # The result page: each point's archive link, every archive behind the curve, waivers per revision and point,
    # and the System section shows the stack revision 3 was measured on (revision 1's on its own page).
    page = _get(f"/results/{public_id}/")
    for concurrency, (number, archive) in EXPECTED.items():
        cell = re.search(rf'data-point-evidence="{concurrency}">(.*?)</td>', page, re.S).group(1)
        assert f"rev. {number}" in cell and archive in cell and f"?revision={number}" in cell
    downloads = re.findall(r'data-download-revision="(\d)"><a href="[^"]+" download>([^<]+)</a>', page)
    assert sorted(downloads) == sorted((str(n), a) for n, a in EXPECTED.values())
    assert 'data-waiver-revision="1"' in page and "data-point-waiver" in page
    assert "Waivers</dt><dd>None" not in page
    system = page.split('id="system-heading"')[1].split("</section>")[0]
    assert "acme-serve 1.1" in system and "acme-serve 0.9" not in system
    first = _get(f"/results/{public_id}/?revision=1").split('id="system-heading"')[1].split("</section>")[0]
    assert "acme-serve 0.9" in first and "acme-serve 1.1" not in first

    # The procurement report cites the delivery point's own archive.
    body = (
        Client()
        .get(
            "/api/v1/public/procurement/",
            {
                "model_1": publication.submission.benchmark.model_id,
                "ttft_p90_ms_max_1": "100000",
                "tpot_ms_max_1": "1000",
            },
        )
        .json()
    )
    [row] = [r for section in body["models"] for r in section["systems"] if r["public_id"] == public_id]
    number, archive = EXPECTED[row["delivery"]["concurrency"]]
    assert row["delivery"]["archive"] == archive and row["delivery"]["measured_in_revision"] == number
    assert row["standing"] == "preview, not official" and row["revision"] == 3


def _page(url: str, user=None) -> str:
    client = Client()
    if user is not None:
        client.force_login(user)
    response = client.get(url)
    assert response.status_code == 200, (url, response.status_code)
    return response.content.decode()


def _verdict_badge(page: str, submission_id: int) -> str:
    """The check badge's words on the row of a submission's table (dashboard, audit queue)."""
    row = re.search(rf"<tr>\s*<td>{submission_id}</td>.*?</tr>", page, re.S) or re.search(
        rf'href="/submissions/{submission_id}/".*?</tr>', page, re.S
    )
    assert row, submission_id
    return re.search(r"data-check-verdict[^>]*>check: ([^<]+)<", row.group(0)).group(1)


def test_one_vocabulary_for_checks_and_every_answer_says_what_it_is():
    BenchmarkFactory(sample=True)
    call_command("seed_demo", stdout=io.StringIO())
    public_cache_bump()
    users = {u.username: u for u in get_user_model().objects.filter(username__startswith="demo-")}

    # The same check run reads the same on the submitter's dashboard, the audit queue and the auditor's page.
    waiting = Submission.objects.get(title="Demo: AX-8000 peer reviewed, waiting for the auditor")
    dashboard = _page("/dashboard/", users["demo-submitter"])
    queue = _page("/review/audit/", users["demo-auditor"])
    mine, audited = _verdict_badge(dashboard, waiting.pk), _verdict_badge(queue, waiting.pk)
    assert mine == audited and re.fullmatch(r"passed with \d+ waived", mine), (mine, audited)
    auditor = _page(f"/review/audit/{waiting.pk}/", users["demo-auditor"])
    portal_box = auditor.split('data-verdict="portal"')[1].split('data-verdict="official"')[0]
    assert mine.capitalize() in portal_box and "Failed" not in portal_box
    assert "PORTAL_CHECK_OFFICIAL" not in auditor

    # Two results of the same bundle SHA-256: one cross-checked, one checked without it, said in words.
    model = Publication.objects.get(submission__title=AX8000_TITLE).submission.benchmark.model_id
    same = Publication.objects.filter(submission__system__name="Acme_AX-4000", status="published")
    assert same.count() == 2 and len({p.record.bundle_sha256 for p in same}) == 1
    for publication in same:
        page = _get(f"/results/{publication.public_id}/")
        official = re.search(r"data-official-verdict>(.*?)</dd>", page, re.S).group(1)
        assert "No verdict kept" not in page and "PORTAL_CHECK_OFFICIAL" not in page
        assert re.search(r">(passed|failed|not run: [a-z ,'-]+)<", official), official
        detail = json_of(f"/api/v1/public/results/{publication.public_id}/")
        assert detail["official_verdict"]["label"] in official

    # Every export and API answer says what it is: the demo's benchmark runs a preview rule set.
    targets = {"benchmark": model, "ttft_p90_ms_max": 100000, "interactivity_min": 0}
    slo = Client().get("/api/v1/public/slo/", targets).json()["results"]
    assert slo and all(
        r["standing"] == "preview, not official" and r["preview"] and r["ruleset"] for r in slo
    )
    assert all(r["archive"] and r["raw_log_sha256"] for r in slo if r["verification"] == "fully recomputed")
    assert 'data-standing="preview, not official"' in _get("/leaderboard/slo/?" + urlencode(targets))
    asked = {"model_1": model, "ttft_p90_ms_max_1": "100000", "tpot_ms_max_1": "1000"}
    report = Client().get("/api/v1/public/procurement/", asked).json()
    rows = [r for section in report["models"] for r in section["systems"]]
    assert rows and all(r["standing"] == "preview, not official" and r["evidence_pack_url"] for r in rows)
    table = list(
        csv.DictReader(
            io.StringIO(_get("/api/v1/public/procurement/?" + urlencode({**asked, "format": "csv"})))
        )
    )
    assert table and {r["standing"] for r in table} == {"preview, not official"}
    assert all(r["delivery_archive"] and r["ruleset"] for r in table)
    assert 'data-standing="preview, not official"' in _get("/leaderboard/procurement/?" + urlencode(asked))
    ids = ",".join(p.public_id for p in same)
    assert (
        _get(f"/leaderboard/{model}/compare/?ids={ids}").count('data-standing="preview, not official"') == 2
    )
    board = list(csv.DictReader(io.StringIO(_get(f"/api/v1/public/results/?benchmark={model}&format=csv"))))
    assert board and all(
        r["standing"] == "preview, not official" and r["ruleset"] and r["revision"] and r["evidence_pack_url"]
        for r in board
    )
