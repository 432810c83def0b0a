"""Provisioned power from system_power.json, and measured power from PTDaemon / CSV traces (docs/power.md)."""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from checker.judge.rules import run_rules
from checker.power.provisioned import provisioned_power
from checker.power.traces import scan_window_ns
from checker.report import PointResult, Report
from tests.checker.bundle_layout import BUNDLE, bundle_with_raw_logs, layout_of

OVERHEADS = {"liquid": 0.30, "air": 0.50}
POINT = Path("results/Acme_AX-8000/llama3_1-8b/r16")
MONO0, UNIX0 = 1_000_000_000_000, 1_790_000_000_000_000_000  # the manifest's clock anchor


def sample_power(system: str) -> dict:
    return json.loads((BUNDLE / "results" / system / "system_power.json").read_text())


@pytest.mark.parametrize("system", ["Acme_AX-4000", "Acme_AX-8000"])
def test_component_sum_matches_the_samples_computed_block(system):
    desc = sample_power(system)
    p = provisioned_power(desc, overheads=OVERHEADS)
    assert p.problems == []
    assert p.total_system_power_w == desc["computed"]["total_system_power_w"]
    assert p.major_components_w == desc["computed"]["major_components_w"]
    assert p.provisioned_kw == desc["provisioned_power_kw"]


def test_official_verdict_provisioned_power_message():
    report = Report()
    run_rules(layout_of(BUNDLE), report, ruleset="endpoints-v1.0-preview")
    msgs = {f.message for f in report.findings if f.rule == "power-descriptor"}
    assert "Provisioned power 6.00 kW" in msgs  # AX-4000, as in the official verdict
    r1 = next(p for p in report.points if p.key == "Acme_AX-4000/llama3_1-8b/r1")
    assert r1.extra["power"]["provisioned_kw"] == 6.0
    assert r1.extra["power"]["system_tps_per_kw"] == pytest.approx(18.6336, abs=1e-4)  # official: 18.6336


def test_liquid_cooling_and_other_methods():
    desc = sample_power("Acme_AX-4000")
    del desc["computed"], desc["provisioned_power_kw"]
    desc["cooling"] = "liquid"
    assert provisioned_power(desc, overheads=OVERHEADS).total_system_power_w == pytest.approx(4000 * 1.30)
    rack = {
        "cooling": "air",
        "scale_out": {"present": False},
        "node_sets": [
            {
                "node_set_id": 0,
                "system_node_ensemble_id": 0,
                "nodes_provisioned": 2,
                "power_method": "node_scaling",
                "nodes_in_published_rack": 8,
                "published_power": {"value_kw": 120, "source_type": "vendor_spec", "source": "https://x"},
            }
        ],
    }
    p = provisioned_power(rack, overheads=OVERHEADS)
    assert p.provisioned_kw == 30.0 and p.point_power_kw([{"system_node_ensemble_id": 0, "nodes": 1}]) == 15.0
    declared = {
        **rack,
        "declared_provisioned_power": {"value_w": 7000, "source_type": "publication", "source": "https://x"},
    }
    assert provisioned_power(declared, overheads=OVERHEADS).provisioned_kw == 7.0


def test_descriptor_disagreeing_with_itself_is_a_problem():
    desc = copy.deepcopy(sample_power("Acme_AX-4000"))
    desc["computed"]["total_system_power_w"] = 5000
    desc["provisioned_power_kw"] = 5.0
    p = provisioned_power(desc, overheads=OVERHEADS)
    assert p.provisioned_kw is None and len(p.problems) == 2


# ---------------------------------------------------------------- measured power


def ptd_line(unix_s: float, watts: float, *, channels: list[float] | None = None) -> str:
    stamp = (datetime.fromtimestamp(unix_s, UTC) + timedelta(hours=1)).strftime("%m-%d-%Y %H:%M:%S.%f")[:-3]
    line = f"Time,{stamp},Watts,{watts:.6f},Volts,230.0,Amps,{watts / 230:.4f},PF,0.98,Mark,run"
    for i, w in enumerate(channels or [], start=1):
        line += f",Ch{i},Watts,{w:.6f},Volts,230.0,Amps,{w / 230:.4f},PF,0.98"
    return line


@pytest.fixture(scope="module")
def raw_bundle(tmp_path_factory) -> Path:
    return bundle_with_raw_logs(tmp_path_factory.mktemp("raw"))


def window_unix(root: Path) -> tuple[float, float]:
    start, stop = scan_window_ns(root / POINT / "events.jsonl")
    return (start - MONO0 + UNIX0) / 1e9, (stop - MONO0 + UNIX0) / 1e9


def run_with_trace(
    root: Path, trace_name: str, content: str, *, recomputed: dict | None = None, **manifest
) -> tuple[Report, dict]:
    folder = root / POINT / "power"
    folder.mkdir(exist_ok=True)
    for old in folder.iterdir():
        old.unlink()
    (folder / trace_name).write_text(content)
    (folder / "manifest.json").write_text(
        json.dumps(
            {
                "format": "endpoints-portal-power/1",
                "meter": "Yokogawa WT310E",
                "trace": trace_name,
                "trace_format": "ptd",
                "sample_interval_s": 1.0,
                "utc_offset_s": 3600,
                "clock_anchor": {"monotonic_ns": MONO0, "unix_ns": UNIX0},
            }
            | manifest
        )
    )
    report = Report()
    if recomputed is not None:  # as check() leaves it after recomputing the point from events.jsonl
        report.points.append(PointResult("Acme_AX-8000", "llama3_1-8b", 16, "bundle", recomputed=recomputed))
    run_rules(layout_of(root), report, ruleset="endpoints-v1.0-preview")
    point = next(p for p in report.points if p.key.endswith("AX-8000/llama3_1-8b/r16"))
    return report, point.extra.get("power", {})


def rules_at(report: Report) -> set[tuple[str, str]]:
    return {
        (f.rule, f.severity)
        for f in report.findings
        if f.rule.startswith("power-") and f.point and f.point.endswith("AX-8000/llama3_1-8b/r16")
    }


def test_ptd_trace_average_energy_and_efficiency(raw_bundle):
    start, stop = window_unix(raw_bundle)
    lines = [ptd_line(t, 500.0 if start < t < stop else 9999.0) for t in frange(start - 5, stop + 5, 0.5)]
    report, power = run_with_trace(raw_bundle, "spl.txt", "\n".join(lines))
    m = power["measured"]
    assert rules_at(report) == set()
    assert m["avg_power_w"] == pytest.approx(500.0)  # samples outside the window (9999 W) are ignored
    assert m["energy_j"] == pytest.approx(500.0 * (stop - start))
    summary = json.loads((raw_bundle / POINT / "result_summary.json").read_text())
    tokens = summary["output_sequence_lengths"]["total"]
    assert m["joules_per_output_token"] == pytest.approx(500.0 * (stop - start) / tokens)
    assert m["measured_tps_per_kw"] == pytest.approx(
        power["system_tps_per_kw"] * power["point_power_kw"] / 0.5, rel=1e-6
    )


def test_recomputed_window_is_used_without_rescanning_the_log(raw_bundle):
    """After recomputation the window is the recompute's: events.jsonl is not read a second time."""
    start_ns, stop_ns = scan_window_ns(raw_bundle / POINT / "events.jsonl")
    half = [start_ns, start_ns + (stop_ns - start_ns) // 2]
    start, stop = window_unix(raw_bundle)
    lines = [ptd_line(t, 500.0) for t in frange(start - 1, stop + 1, 0.5)]
    _, power = run_with_trace(raw_bundle, "spl.txt", "\n".join(lines), recomputed={"window_ns": half})
    assert power["measured"]["window_s"] == pytest.approx((half[1] - half[0]) / 1e9)
    report, power = run_with_trace(raw_bundle, "spl.txt", "\n".join(lines), recomputed={"window_ns": None})
    assert "measured" not in power and ("power-window-coverage", "error") in rules_at(report)


def test_ptd_multichannel_sums_channels(raw_bundle):
    start, stop = window_unix(raw_bundle)
    lines = [ptd_line(t, 0.0, channels=[300.0, 200.0]) for t in frange(start - 1, stop + 1, 1.0)]
    _, power = run_with_trace(raw_bundle, "spl.txt", "\n".join(lines))
    assert power["measured"]["avg_power_w"] == pytest.approx(500.0)
    assert power["measured"]["channels"] == ["Ch1", "Ch2"]


def test_csv_trace(raw_bundle):
    start, stop = window_unix(raw_bundle)
    rows = ["timestamp,gpu0,gpu1,host"] + [f"{t:.3f},250,250,100" for t in frange(start - 1, stop + 1, 0.25)]
    report, power = run_with_trace(raw_bundle, "power.csv", "\n".join(rows), trace_format="csv")
    assert power["measured"]["avg_power_w"] == pytest.approx(600.0)
    assert rules_at(report) == set()


@pytest.mark.parametrize(
    ("shape", "expected"),
    [
        ("late_start", ("power-window-coverage", "error")),
        ("gap", ("power-gap", "warning")),
        ("slow", ("power-sample-interval", "warning")),
        ("negative", ("power-nonpositive-samples", "warning")),
        ("huge", ("power-above-provisioned", "warning")),
    ],
)
def test_trace_problems_are_findings(raw_bundle, shape, expected):
    start, stop = window_unix(raw_bundle)
    step = 2.0 if shape == "slow" else 0.5
    lines = []
    for t in frange(start - 1, stop + 1, step):
        if shape == "late_start" and t < start + (stop - start) / 2:
            continue
        if shape == "gap" and start + 3 < t < start + 10:
            continue
        watts = 20_000.0 if shape == "huge" else 500.0
        if shape == "negative" and int(t * 2) % 10 == 0:
            watts = -1.0
        lines.append(ptd_line(t, watts))
    report, _ = run_with_trace(raw_bundle, "spl.txt", "\n".join(lines))
    assert expected in rules_at(report)


def test_unreadable_trace_and_manifest(raw_bundle):
    report, power = run_with_trace(raw_bundle, "spl.txt", "Time,not a date,Watts,1")
    assert ("power-trace-unreadable", "error") in rules_at(report) and "measured" not in power
    report, _ = run_with_trace(raw_bundle, "spl.txt", ptd_line(0, 1), clock_anchor={"monotonic_ns": "x"})
    assert ("power-trace-unreadable", "error") in rules_at(report)
    report, _ = run_with_trace(raw_bundle, "spl.txt", ptd_line(0, 1), trace="../../etc/passwd")
    assert ("power-trace-unreadable", "error") in rules_at(report)


def frange(a: float, b: float, step: float):
    n = int((b - a) / step) + 1
    return [a + i * step for i in range(n)]


def _with_figure(**figure) -> dict:
    desc = sample_power("Acme_AX-8000")
    desc["node_sets"][0]["components"]["cpu"]["tdp_per_unit"] = figure
    return desc


@pytest.mark.parametrize(
    ("figure", "problem"),
    [
        (
            {"value_w": 350, "value_kw": 0.35, "source_type": "vendor_spec", "source": "https://a.example"},
            "exactly one",
        ),
        ({"source_type": "vendor_spec", "source": "https://a.example"}, "exactly one"),
        ({"value_w": 350, "source_type": "vendor_spec", "source": "the datasheet"}, "resolvable URL"),
        ({"value_w": 350, "source_type": "mlc_default", "source": "D.9"}, "Appendix D subsection"),
        ({"value_w": 350, "source_type": "my_word", "source": "https://a.example"}, "source_type"),
    ],
)
def test_sourced_values_follow_e1(figure, problem):
    """value-count, source-not-url, mlc-default-source: every figure, and the descriptor normalises nothing."""
    p = provisioned_power(_with_figure(**figure), overheads=OVERHEADS, defaults=_appendix_d())
    assert any(problem in text for text in p.problems), p.problems
    assert p.provisioned_kw is None and not p.valid


def test_an_energy_figure_is_no_power():
    """energy-figure-give-value: a TDP given only in pJ names no watts."""
    p = provisioned_power(
        _with_figure(value_pj=5, source_type="vendor_spec", source="https://a.example"), overheads=OVERHEADS
    )
    assert p.provisioned_kw is None and p.problems


def _appendix_d():
    from checker.judge.ruleset import load_ruleset
    from checker.power.sources import AppendixD

    return AppendixD(load_ruleset("endpoints-v1.0").get("power", "appendix_d"))


def _two_nodes(scale_out: dict, **node_set) -> dict:
    desc = sample_power("Acme_AX-8000")
    del desc["computed"], desc["provisioned_power_kw"]
    desc["node_sets"][0].update(nodes_provisioned=2, **node_set)
    desc["scale_out"] = scale_out
    return desc


FABRIC = {
    "present": True,
    "cabling": "passive",
    "required_bandwidth_tbps": 1.6,
    "nics": {"count_per_node": 2, "bandwidth_per_nic_gbps": 400, "counted": True},
    "switches": [{"model": "SN5610", "count": 1, "bandwidth_tbps": 51.2}],
}


def test_counted_nics_and_switches_reach_the_total():
    """Two nodes, 2 D.4 NICs (75 W) each counted into major, one SN5610 (900 W passive) outside the overhead."""
    p = provisioned_power(_two_nodes(copy.deepcopy(FABRIC)), overheads=OVERHEADS, defaults=_appendix_d())
    assert p.problems == [] and p.warnings == []
    assert p.major_components_w == 2 * (7300 + 2 * 75)
    assert p.scale_out_switch_power_w == 900
    assert p.total_system_power_w == pytest.approx(2 * 7450 * 1.5 + 900)
    assert p.sets[0]["power_w"] == pytest.approx(2 * 7450 * 1.5)
    assert any("D.4" in e for e in p.estimated)


@pytest.mark.parametrize(
    ("change", "problem", "warning"),
    [
        ({"required_bandwidth_tbps": 0.8}, "below the 1.6 Tb/s", None),
        ({"required_bandwidth_tbps": 3.2}, None, "above the 1.6 Tb/s"),
        ({"switches": [{"model": "SN5610", "count": 1, "bandwidth_tbps": 1.0}]}, "offer 1 Tb/s", None),
        ({"nics": {"count_per_node": 2, "bandwidth_per_nic_gbps": 400, "counted": False}}, "MUST", None),
        ({"cabling": None}, "cabling is missing", None),
        ({"present": False}, None, "false for 2 nodes"),
    ],
)
def test_scale_out_fabric_e4(change, problem, warning):
    fabric = {**copy.deepcopy(FABRIC), **change}
    if fabric.get("cabling") is None:
        fabric.pop("cabling")
    p = provisioned_power(_two_nodes(fabric), overheads=OVERHEADS, defaults=_appendix_d())
    assert (problem is None) == (not p.problems), p.problems
    assert problem is None or any(problem in text for text in p.problems), p.problems
    assert (warning is None) == (not p.warnings), p.warnings
    assert warning is None or any(warning in text for text in p.warnings), p.warnings


def test_two_nodes_joined_by_nothing_need_a_fabric():
    desc = _two_nodes({"present": False})
    desc["node_sets"][0]["components"]["scale_up_network"] = {"method": "none"}
    p = provisioned_power(desc, overheads=OVERHEADS)
    assert any("no scale-up network joins them" in text for text in p.problems)


def test_published_power_counts_nics_only_when_excluded():
    published = {
        "power_method": "published_system",
        "published_power": {"value_w": 9000, "source_type": "vendor_spec", "source": "https://a.example"},
    }
    desc = _two_nodes(copy.deepcopy(FABRIC), **published)
    del desc["node_sets"][0]["components"]
    p = provisioned_power(desc, overheads=OVERHEADS, defaults=_appendix_d())
    assert any("counted is true" in text for text in p.problems)
    desc["scale_out"]["nics"]["excluded_from_published_power"] = "https://a.example/nic-note"
    p = provisioned_power(desc, overheads=OVERHEADS, defaults=_appendix_d())
    assert p.problems == []
    assert p.published_node_power_w == 18000 and p.major_components_w == 2 * 150
