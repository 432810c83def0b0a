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

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.test import Client

from leaderboard import services
from leaderboard.cache import public_cache_bump
from leaderboard.demo import AX8000_TITLE, IN_REVIEW_EXTENSION_TITLE
from leaderboard.models import Publication, PublicationRevision
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
    assert publication.record.revision == 3
    revisions = {r.number: r for r in PublicationRevision.objects.filter(publication=publication)}
    assert sorted(revisions) == [1, 2, 3]

    # The snapshot: every point's evidence, from the revision that measured it.
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

    # The points API: the right archive, its download opens the raw log with that SHA-256.
    rows = {
        r["concurrency"]: r
        for r in Client().get("/api/v1/public/points/", {"result": public_id, "limit": 100}).json()["results"]
    }
    assert {c: (r["measured_in_revision"], r["archive"]) for c, r in rows.items()} == EXPECTED
    for concurrency, row in rows.items():
        number = EXPECTED[concurrency][0]
        assert row["bundle_sha256"] == revisions[number].version.sha256
        assert _raw_log_sha256(row["archive_url"], row["raw_log_path"]) == row["raw_log_sha256"]
        assert row["standing"] == "preview, not official" and row["ruleset"]

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
