"""The demo's sample submissions (real findings and curves at once) and the server-side step chart."""

from __future__ import annotations

import re

import pytest
from django.core.management import call_command

from submissions.charts import X_METRIC, step_chart_svg
from submissions.models import CheckRun, Submission


@pytest.mark.django_db
def test_seed_demo_makes_one_checked_submission_per_sample_system_once(django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):  # the checks start after commit, as in the demo
        call_command("seed_demo")
    with django_capture_on_commit_callbacks(execute=True):
        call_command("seed_demo")  # idempotent: nothing uploaded twice
    by_system = {s.system.name: s for s in Submission.objects.filter(organisation__slug="acmecompute")}
    assert set(by_system) == {"Acme_AX-8000", "Acme_AX-4000"}
    for submission in by_system.values():
        assert submission.versions.count() == 1
        run = submission.versions.get().check_runs.get()
        assert run.status in (CheckRun.Status.PASSED, CheckRun.Status.FAILED), run.error_message
        assert run.point_metrics.count() == 7 and run.curves
    ax8000 = by_system["Acme_AX-8000"].versions.get()
    assert ax8000.files.count() == 7
    assert not ax8000.check_runs.get().findings.filter(rule="raw-log-missing").exists()
    assert all(m.recomputed for m in ax8000.check_runs.get().point_metrics.all())
    ax4000 = by_system["Acme_AX-4000"].versions.get().check_runs.get()
    assert ax4000.findings.filter(rule="raw-log-missing", severity="error").count() == 7
    assert ax4000.curves[0]["points"][0]["basis"] == "claimed"


def test_step_chart_draws_only_the_step_vertices_and_a_marker_per_point():
    curve = {
        "system": "S",
        "model": "m",
        "points": [
            {
                "point": "S/m/r1",
                "concurrency": 1,
                "basis": "recomputed",
                "system_tps": 100.0,
                "tps_per_user": 110.0,
            },
            {
                "point": "S/m/r8",
                "concurrency": 8,
                "basis": "recomputed",
                "system_tps": 700.0,
                "tps_per_user": 90.0,
            },
            {
                "point": "S/m/r4",
                "concurrency": 4,
                "basis": "recomputed",
                "system_tps": 300.0,
                "tps_per_user": 80.0,
            },
        ],
        "pareto": {
            X_METRIC: {
                "points": ["S/m/r1", "S/m/r8"],
                "steps": [[110.0, 100.0], [110.0, 700.0], [90.0, 700.0]],
            }
        },
    }
    svg = str(step_chart_svg([curve]))
    path = re.search(r'<path class="step-line" d="([^"]+)"', svg).group(1)
    vertices = re.findall(r"[ML]([\d.]+),([\d.]+)", path)
    assert len(vertices) == 3  # exactly the checker's vertices: nothing interpolated in between
    (x0, y0), (x1, y1), (x2, y2) = [(float(x), float(y)) for x, y in vertices]
    assert x0 == x1 and y1 == y2 and y1 < y0  # rise vertically at the previous x, then run horizontally
    assert svg.count('class="marker') == 3 and svg.count('class="marker off-front"') == 1
    assert "Interactivity (tokens/s per user)" in svg and "System throughput (tokens/s)" in svg
    assert step_chart_svg([]) is None
