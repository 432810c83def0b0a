"""The reviewer's pages in a real browser: the dashboard (invitation, queue with an overdue review, my reviews),
the review page (findings with waiver status, points, curve, the diff, the thread with an objection, the decision
form) and the file browser with line numbers. A decision recorded through the form lands in the database.
Screenshots go to PORTAL_SCREENSHOT_DIR (docs/screenshots/review-*.png are the ones the docs show)."""

from __future__ import annotations

import gzip
import os
from datetime import timedelta
from pathlib import Path

import pytest
from django.utils import timezone

from review.models import Comment, Review, ReviewAssignment, Waiver
from review.services.thread import comment_post
from submissions.models import CheckRun, Submission
from tests.browser.test_submitter_upload import _login
from tests.factories import (
    RUN_ARCHIVES,
    CheckRunFactory,
    ReviewAssignmentFactory,
    SubmissionFactory,
    SubmissionVersionFactory,
    SystemFactory,
)
from tests.review.conftest import review_world  # noqa: F401 - the fixture

pytestmark = pytest.mark.django_db(transaction=True)

SHOTS_DIR = os.environ.get("PORTAL_SCREENSHOT_DIR")
RUN_ARCHIVE_DIR = RUN_ARCHIVES[0].parent
CONCURRENCIES = (1, 2, 4, 8, 16, 32, 64)


def _metrics(scale: float) -> list[dict]:
    rows = []
    for c in CONCURRENCIES:
        per_user = 160.0 / (1 + c / 24)
        claimed = {
            "system_tps": round(per_user * c * scale, 1),
            "tps_per_user": round(per_user, 2),
            "ttft_p90_ms": round(90 + 6 * c, 1),
            "n_samples_completed": 64 * c,
            "n_samples_failed": 0,
            "duration_ns": 600_000_000_000,
        }
        recomputed = dict(claimed)
        if c == 16 and scale == 1.0:
            recomputed["system_tps"] = round(claimed["system_tps"] * 0.84, 1)
        rows.append(
            {
                "concurrency": c,
                "claimed": claimed,
                "recomputed": recomputed,
                "extra": {"region": "med_concurrency"},
            }
        )
    return rows


def _curves(system: str, scale: float) -> list[dict]:
    points = [
        {
            "point": f"{system}/llama3_1-8b/r{row['concurrency']}",
            "concurrency": row["concurrency"],
            "tps_per_user": row["recomputed"]["tps_per_user"],
            "system_tps": row["recomputed"]["system_tps"],
            "basis": "recomputed",
        }
        for row in _metrics(scale)
    ]
    ordered = sorted(points, key=lambda p: p["tps_per_user"])
    steps = []
    for point in ordered:
        steps += [[point["tps_per_user"], point["system_tps"]]]
    return [
        {
            "system": system,
            "model": "llama3_1-8b",
            "points": points,
            "pareto": {"tps_per_user": {"points": [p["point"] for p in points], "steps": steps}},
        }
    ]


@pytest.fixture
def reviewer_scene(review_world, plain_http):  # noqa: F811 - the imported fixture
    world = review_world
    submission = world["submission"]
    name = submission.system.name
    first = world["version"]
    run = first.check_runs.order_by("-id").first()
    run.point_metrics.all().delete()
    for row in _metrics(1.0):
        run.point_metrics.create(
            system=name,
            model="llama3_1-8b",
            key=f"{name}/llama3_1-8b/r{row['concurrency']}",
            source="run-archive",
            **row,
        )
    CheckRun.objects.filter(pk=run.pk).update(curves=_curves(name, 1.0))
    # version 2 (the frozen one): new c16 archive, a failing finding with a waiver asked for
    # same archives, c16 packed again (new bytes), c64 left out
    files = []
    for stored in first.files.order_by("position"):
        data = Path(RUN_ARCHIVE_DIR, stored.original_filename).read_bytes()
        if "c64" in stored.original_filename:
            continue
        files.append(
            (
                stored.original_filename,
                gzip.compress(gzip.decompress(data), mtime=0) if "c16" in stored.original_filename else data,
            )
        )
    second = SubmissionVersionFactory(submission=submission, files=files)
    second_run = CheckRunFactory(
        version=second,
        status="failed",
        findings=[
            {
                "rule": "accuracy-sample-count",
                "point": f"{name}/llama3_1-8b/r1",
                "file": "AX-8000_c1.tar.gz:c1/accuracy/accuracy_results.json",
                "line": 4,
                "message": "accuracy_results.json scores 500 samples; the rule asks for 5000.",
            },
            {"rule": "raw-log-consistency", "severity": "warning", "point": f"{name}/llama3_1-8b/r16"},
        ],
        point_metrics=[],
    )
    for row in _metrics(1.03):
        second_run.point_metrics.create(
            system=name,
            model="llama3_1-8b",
            key=f"{name}/llama3_1-8b/r{row['concurrency']}",
            source="run-archive",
            **row,
        )
    CheckRun.objects.filter(pk=second_run.pk).update(curves=_curves(name, 1.03))
    Waiver.objects.create(
        version=second,
        rule="accuracy-sample-count",
        point=f"{name}/llama3_1-8b/r1",
        file="AX-8000_c1.tar.gz:c1/accuracy/accuracy_results.json",
        request_reason="Demo runs are short by design.",
        requested_by=world["submitter"],
    )
    Submission.objects.filter(pk=submission.pk).update(submitted_version=second)
    objection = world["comments"]["objection"]
    comment_post(
        submission=submission,
        actor=world["submitter"],
        parent=objection,
        body="The warm-up is 60 s as in config.yaml; line 12 is the first sample after it.",
    )
    comment_post(
        submission=submission,
        actor=world["auditor"],
        kind="objection",
        objection_type="availability",
        point_key=f"{name}/llama3_1-8b/r64",
        body="The c64 point needs the power analyser log; none is in the archive.",
    )
    # the dashboard: an overdue invitation elsewhere, and a past review
    other = SubmissionFactory(
        in_review=True, system=SystemFactory(organisation=world["organisations"]["acme"], name="AX-9000")
    )
    ReviewAssignmentFactory(
        submission=other,
        reviewer=world["assigned"],
        organisation=world["organisations"]["nimbus"],
        due_at=timezone.now() + timedelta(days=9),
    )
    ReviewAssignment.objects.filter(pk=world["assignment"].pk).update(
        due_at=timezone.now() - timedelta(days=1)
    )
    done = SubmissionFactory(
        peer_reviewed=True, system=SystemFactory(organisation=world["organisations"]["acme"], name="AX-7000")
    )
    past = ReviewAssignmentFactory(
        submission=done,
        reviewer=world["assigned"],
        organisation=world["organisations"]["nimbus"],
        accepted=True,
    )
    Review.objects.create(
        assignment=past, version=done.submitted_version, decision="approve", body="Reproduces within 0.4 %."
    )
    world["second"] = second
    return world


def _shot(locator_or_page, name: str, **kwargs):
    if SHOTS_DIR:
        Path(SHOTS_DIR).mkdir(parents=True, exist_ok=True)
        locator_or_page.screenshot(path=str(Path(SHOTS_DIR) / name), **kwargs)


def test_reviewer_dashboard_review_page_file_browser_and_decision(chromium, live_server, reviewer_scene):
    world = reviewer_scene
    submission = world["submission"]
    context = chromium.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    base = live_server.url
    _login(page, base, "reviewer")

    page.goto(f"{base}/review/")
    assert page.get_by_role("button", name="Accept").is_visible()
    assert page.locator("text=overdue since").first.is_visible()
    assert page.locator("text=Reproduces within 0.4 %.").is_visible()
    _shot(page, "review-dashboard.png", full_page=True)

    page.goto(f"{base}/review/submissions/{submission.pk}/")
    assert page.locator(".badge.waiver-requested").first.is_visible()
    _shot(page, "review-page.png")
    changes = page.locator("#changes")
    assert "Changes from version 1 to version 2" in changes.inner_text()
    _shot(changes, "review-diff.png")
    thread = page.locator("#thread")
    assert "answer due" in thread.inner_text() and "reviewers + auditors only" in thread.inner_text()
    page.select_option("#kind", "objection")
    assert page.locator("#objection_type").is_visible()
    _shot(thread, "review-thread.png")

    # the file browser, from the objection's file anchor
    page.locator("#thread a.anchor-chip").first.click()
    page.wait_for_selector("tr.highlight")
    page.evaluate("window.scrollTo(0, 0)")
    assert page.locator("tr#L12.highlight").is_visible()
    assert page.locator("td.ln a", has_text="200").count() == 1
    _shot(page, "review-file-lines.png")

    page.goto(f"{base}/review/submissions/{submission.pk}/#decision")
    decision = page.locator("#decision")
    page.check("input[name=decision][value=object]")
    page.select_option("#decision-objection-type", "reproducibility")
    page.fill("#decision-body", "c16's system tokens/s does not reproduce from events.jsonl (−16 %).")
    _shot(decision, "review-decision.png")
    decision.get_by_role("button", name="Record decision").click()
    page.wait_for_selector(".message.success")
    review = Review.objects.get(assignment=world["assignment"])
    assert review.decision == "object" and review.version_id == world["second"].pk
    assert Comment.objects.filter(kind="objection", objection_type="reproducibility").exists()
    context.close()
