"""The demo's sample submissions (real findings and curves at once) and the server-side step chart."""

from __future__ import annotations

import re

from submissions.charts import X_METRIC, step_chart_svg


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
