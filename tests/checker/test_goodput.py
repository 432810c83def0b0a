"""Goodput and SLO attainment (checker.recompute.goodput) against a reference written here from the raw events of the
real sample runs, the per-sample arrays' storage form, the --slo option of `portal check`."""

from __future__ import annotations

import json
import subprocess
import sys
import tarfile
from pathlib import Path

import numpy as np
import pytest
import tokenizers

from checker.recompute.goodput import SampleSeries, SloSpecError, SloTarget, evaluate, parse_slo
from checker.recompute.replay import recompute_point
from checker.report import Findings

FIXTURES = Path(__file__).parent / "fixtures"
ARCHIVES = sorted((FIXTURES / "run_archives").glob("AX-8000_c*.tar.gz")) + sorted(
    (FIXTURES / "second_system").glob("NB-2_c*.tar.gz")
)
TOKENIZER_PATH = FIXTURES / "tokenizer" / "tokenizer.json"
TOKENIZER = tokenizers.Tokenizer.from_file(str(TOKENIZER_PATH))


def reference_slo(events_path: Path, *, ttft_ms: float, tpot_ms: float) -> dict:
    """The definition of DESIGN.md, straight from the log: replay in file order, a sample is tracked when
    its issue lies inside performance tracking; good = completed with data, no error, ttft <= X, and tpot
    <= Y (or no tpot)."""
    tracking = False
    start = None
    latest = None
    duration_ns = 0
    samples: dict[str, dict] = {}
    for line in events_path.read_text().splitlines():
        event = json.loads(line)
        kind, ts, uuid = event["event_type"], event["timestamp_ns"], event.get("sample_uuid")
        if kind == "session.start_performance_tracking":
            tracking, start, latest = True, ts, None
        elif kind == "session.stop_performance_tracking":
            tracking = False
            duration_ns += (latest - start) if latest is not None else 0
            start = None
        elif kind == "session.ended":
            break
        elif kind == "sample.issued" and tracking:
            samples[uuid] = {"issued": ts, "first": None, "done": None, "data": None, "error": False}
        elif uuid in samples and samples[uuid]["done"] is None:
            sample = samples[uuid]
            if kind == "sample.recv_first" and sample["first"] is None:
                sample["first"] = ts
            elif kind.startswith("error."):
                sample["error"] = True
            elif kind == "sample.complete":
                sample["done"], sample["data"] = ts, event.get("data")
                latest = ts if latest is None else max(latest, ts)
    if start is not None and latest is not None:
        duration_ns += latest - start
    seconds = duration_ns / 1e9
    counts = {"good": 0, "ttft": 0, "tpot": 0}
    tokens = {"good": 0, "ttft": 0, "tpot": 0}
    for sample in samples.values():
        data = sample["data"]
        if sample["done"] is None or data is None or sample["error"] or sample["first"] is None:
            continue
        assert not data[2], "the sample runs stream no reasoning"
        chunks = data[1] if isinstance(data[1], list) else [data[1]]
        full, after = "".join(chunks), "".join(chunks[1:])
        osl = len(TOKENIZER.encode(full, add_special_tokens=False).ids) if full else 0
        after_tokens = len(TOKENIZER.encode(after, add_special_tokens=False).ids) if after else 0
        ttft_ok = sample["first"] - sample["issued"] <= ttft_ms * 1e6
        tpot_ok = after_tokens == 0 or (sample["done"] - sample["first"]) / after_tokens <= tpot_ms * 1e6
        for name, met in (("good", ttft_ok and tpot_ok), ("ttft", ttft_ok), ("tpot", tpot_ok)):
            if met:
                counts[name] += 1
                tokens[name] += osl
    return {
        "tracked": len(samples),
        "counts": counts,
        "rps": {name: counts[name] / seconds for name in counts},
        "tps": {name: tokens[name] / seconds for name in tokens},
    }


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, tuple[Path, SampleSeries, dict]]:
    """Every sample run: its events.jsonl, the replay's per-sample arrays and summary."""
    root = tmp_path_factory.mktemp("goodput")
    out = {}
    for archive in ARCHIVES:
        name = archive.name.split(".")[0]
        with tarfile.open(archive) as tar:
            tar.extractall(root / name, filter="data")
        events = next((root / name).iterdir()) / "events.jsonl"
        kept: list[SampleSeries] = []
        summary = recompute_point(
            events, tokenizer=TOKENIZER, findings=Findings(), display=name, on_samples=kept.append
        )
        out[name] = (events, kept[0], summary)
    return out


TARGETS = [(110.0, 12.5), (300.0, 50.0), (90.0, 11.0), (1000.0, 9.0)]


@pytest.mark.parametrize(("ttft_ms", "tpot_ms"), TARGETS)
def test_goodput_matches_the_definition_on_every_sample_run(runs, ttft_ms, tpot_ms):
    partial = 0
    for name, (events, series, _) in runs.items():
        want = reference_slo(events, ttft_ms=ttft_ms, tpot_ms=tpot_ms)
        got = evaluate(series, SloTarget(ttft_ms=ttft_ms, tpot_ms=tpot_ms))
        assert got["tracked_requests"] == want["tracked"], name
        assert got["good_requests"] == want["counts"]["good"], name
        assert got["ttft_good_requests"] == want["counts"]["ttft"], name
        assert got["tpot_good_requests"] == want["counts"]["tpot"], name
        assert got["attainment"] == pytest.approx(want["counts"]["good"] / want["tracked"], rel=1e-12)
        for prefix, key in (("", "good"), ("ttft_", "ttft"), ("tpot_", "tpot")):
            assert got[f"{prefix}goodput_rps"] == pytest.approx(want["rps"][key], rel=1e-12), name
            assert got[f"{prefix}goodput_tps"] == pytest.approx(want["tps"][key], rel=1e-12), name
        partial += 0 < got["good_requests"] < got["tracked_requests"]
    if (ttft_ms, tpot_ms) == (110.0, 12.5):
        assert partial >= 5  # targets inside the samples' spread: the test can tell good from bad samples


def test_arrays_agree_with_the_recomputed_summary(runs):
    for name, (_, series, summary) in runs.items():
        assert series.tracked == summary["n_samples_issued"], name
        assert series.duration_ns == summary["duration_ns"], name
        assert int(series.output_tokens.sum()) == round(summary["tps"] * summary["duration_ns"] / 1e9), name
        tpot = series.tpot_ns[~np.isnan(series.tpot_ns)]
        assert np.percentile(tpot, 90, method="lower") == summary["tpot"]["percentiles"]["90.0"], name


def test_a_failed_request_is_a_violation(tmp_path):
    """A request that failed (error event, complete with null data) is tracked and never good."""
    lines = [
        {"event_type": "session.started", "timestamp_ns": 0},
        {"event_type": "session.start_performance_tracking", "timestamp_ns": 10},
    ]
    for index in range(4):
        uuid = f"s{index}"
        lines.append({"event_type": "sample.issued", "timestamp_ns": 100 + index, "sample_uuid": uuid,
                      "data": ["PromptData", "hello", [1, 2, 3]]})  # fmt: skip
        lines.append(
            {"event_type": "sample.recv_first", "timestamp_ns": 1_000_000 + index, "sample_uuid": uuid}
        )
    lines.append({"event_type": "error.http", "timestamp_ns": 2_000_000, "sample_uuid": "s3",
                  "data": ["ErrorData", "http", "503"]})  # fmt: skip
    for index in range(4):
        data = None if index == 3 else ["TextModelOutput", ["hi", " there friend"], None, None]
        lines.append({"event_type": "sample.complete", "timestamp_ns": 3_000_000 + index, "sample_uuid": f"s{index}",
                      "data": data, "finish_reason": "stop"})  # fmt: skip
    lines += [
        {"event_type": "session.stop_performance_tracking", "timestamp_ns": 4_000_000},
        {"event_type": "session.ended", "timestamp_ns": 4_000_001},
    ]
    path = tmp_path / "events.jsonl"
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    kept: list[SampleSeries] = []
    recompute_point(path, tokenizer=TOKENIZER, findings=Findings(), display="e", on_samples=kept.append)
    got = evaluate(kept[0], SloTarget(ttft_ms=10.0, tpot_ms=10.0))
    assert got["tracked_requests"] == 4
    assert got["good_requests"] == 3
    assert got["attainment"] == 0.75
    assert got["ttft_attainment"] == 0.75  # the failed request got its first chunk in time, still a violation


def test_npz_round_trip_is_exact_and_small(runs):
    _, series, _ = runs["AX-8000_c64"]
    data = series.to_npz()
    back = SampleSeries.from_npz(data)
    assert np.array_equal(back.ttft_ns, series.ttft_ns)
    assert np.array_equal(back.tpot_ns, series.tpot_ns, equal_nan=True)
    assert np.array_equal(back.output_tokens, series.output_tokens)
    assert np.array_equal(back.ok, series.ok)
    assert back.duration_ns == series.duration_ns
    assert len(data) < 30 * series.tracked  # bytes per sample, compressed
    with pytest.raises(ValueError):
        SampleSeries.from_npz(b"not an npz")


def test_parse_slo_reads_targets_and_says_how_to_write_them():
    assert parse_slo("ttft_ms=300,tpot_ms=50") == SloTarget(ttft_ms=300.0, tpot_ms=50.0)
    assert parse_slo("ttft_ms=300, interactivity=20") == SloTarget(ttft_ms=300.0, tpot_ms=50.0)
    assert parse_slo("tpot_ms=40") == SloTarget(ttft_ms=None, tpot_ms=40.0)
    for bad, words in (
        ("ttft=300", "ttft_ms=MS"),
        ("ttft_ms=-1", "positive"),
        ("ttft_ms=abc", "positive"),
        ("tpot_ms=5,interactivity=20", "not both"),
        ("", "at least one"),
    ):
        with pytest.raises(SloSpecError, match=words):
            parse_slo(bad)


def test_portal_check_slo_prints_and_reports_every_point(runs, tmp_path):
    archives = sorted((FIXTURES / "second_system").glob("NB-2_c*.tar.gz"))
    out = tmp_path / "report.json"
    result = subprocess.run(
        [sys.executable, "-m", "checker.cli.main", "check", *map(str, archives), "--tokenizer", str(TOKENIZER_PATH),
         "--json", str(out), "--slo", "ttft_ms=300,tpot_ms=50"],
        capture_output=True, text=True, timeout=300, cwd=Path(__file__).parents[2],
    )  # fmt: skip
    assert result.returncode in (0, 1), result.stderr
    assert "SLO per request: TTFT <= 300 ms and TPOT <= 50 ms" in result.stdout
    report = json.loads(out.read_text())
    for point in report["points"]:
        slo = point["slo"]
        assert set(slo) >= {"ttft_ms", "tpot_ms", "tracked_requests", "good_requests", "attainment",
                            "goodput_rps", "goodput_tps"}  # fmt: skip
        events, _, _ = runs[f"NB-2_c{point['concurrency']}"]
        want = reference_slo(events, ttft_ms=300.0, tpot_ms=50.0)
        assert slo["good_requests"] == want["counts"]["good"]
        assert f"{100 * slo['attainment']:.1f} %" in result.stdout
    bad = subprocess.run(
        [sys.executable, "-m", "checker.cli.main", "check", str(archives[0]), "--tokenizer", str(TOKENIZER_PATH),
         "--slo", "ttft=3"],
        capture_output=True, text=True, timeout=300, cwd=Path(__file__).parents[2],
    )  # fmt: skip
    assert bad.returncode == 2 and "ttft_ms=MS" in bad.stderr
