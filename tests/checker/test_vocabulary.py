"""The command line speaks the official tools' names: points `r<C>`, regions by their official ids."""

from __future__ import annotations

from checker.cli.text_report import render_text
from checker.recompute.regions import REGION_LABELS, region_label
from checker.report import PointResult, Report


def test_text_report_names_points_r_and_regions_by_official_id():
    report = Report(checker_version="test", ruleset="endpoints-v1.0")
    for concurrency, region in ((1, "low_latency"), (64, "high_concurrency")):
        report.points.append(
            PointResult(
                system="Acme_AX-8000",
                model="llama3_1-8b",
                concurrency=concurrency,
                source="run-archive",
                claimed={"system_tps": 10.0},
                extra={"region": region},
            )
        )
    lines = render_text(report).splitlines()
    header = next(line for line in lines if "region" in line and "system_tps" in line)
    assert header.split()[0] == "point"
    rows = [line.split() for line in lines if line.strip().startswith("r")]
    assert [row[:2] for row in rows] == [["r1", "low_latency"], ["r64", "high_concurrency"]]


def test_every_official_region_id_has_a_label():
    for region in ("low_latency", "low_concurrency", "med_concurrency", "high_concurrency"):
        assert region_label(region) and region_label(region) != region
    assert region_label(None) == "" and region_label("nonsense") == ""
    assert "ultra-low" not in " ".join(REGION_LABELS.values())  # not the web's old private word


def test_text_report_says_what_the_portal_adds():
    text = render_text(Report(checker_version="test", ruleset="endpoints-v1.0"))
    assert "portal-only rules (submission-scope, system-desc-mismatch" in text
    assert "official checker's cross-check (--official here)" in text
    crossed = render_text(Report(checker_version="test", official={"ran": True, "errors": 0, "warnings": 0}))
    assert "(--official here)" not in crossed  # it ran: its notes are in this report already
