"""Recomputation from raw logs: the real samples, a reference on generated logs, tampering, early stopping."""

from __future__ import annotations

import json
import math
import tarfile
from pathlib import Path

import numpy as np
import pytest
import tokenizers
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from checker.judge.claimed_vs_recomputed import differences
from checker.read.event_log import output_texts
from checker.recompute.chat_template import structured_output
from checker.recompute.replay import derive_official, recompute_point
from checker.recompute.stats import (
    EARLY_STOPPING_GRID,
    PERCENTILE_GRID,
    early_stopping_estimate,
    min_samples_for_early_stopping,
    percentile_key,
)
from checker.report import Findings

FIXTURES = Path(__file__).parent / "fixtures"
ARCHIVES = sorted((FIXTURES / "run_archives").glob("AX-8000_c*.tar.gz"))
TOKENIZER = tokenizers.Tokenizer.from_file(str(FIXTURES / "tokenizer" / "tokenizer.json"))


def _unpack(archive: Path, into: Path) -> Path:
    # Trusted fixture written by the official tools; members are plain files under c<C>/.
    with tarfile.open(archive) as tar:
        tar.extractall(into, filter="data")
    return next(into.iterdir())


@pytest.fixture(scope="module")
def sample_points(tmp_path_factory) -> list[Path]:
    root = tmp_path_factory.mktemp("samples")
    return [_unpack(a, root / a.name.split(".")[0]) for a in ARCHIVES]


def summary_leaves(claimed: dict, recomputed: dict, path: str = ""):
    """Every (key, claimed, recomputed) leaf that the client wrote, histograms aside."""
    for key, want in claimed.items():
        if key == "histogram":
            continue
        got = recomputed.get(key) if isinstance(recomputed, dict) else None
        here = f"{path}.{key}" if path else key
        if isinstance(want, dict):
            yield from summary_leaves(want, got or {}, here)
        else:
            yield here, want, got


RECOMPUTED_KEYS = (
    "n_samples_issued",
    "n_samples_completed",
    "n_samples_failed",
    "duration_ns",
    "qps",
    "tps",
    "ttft",
    "tpot",
    "latency",
    "input_sequence_lengths",
    "output_sequence_lengths",
    "finish_reason_counts",
)


def test_every_sample_point_is_reproduced_exactly(sample_points):
    checked = 0
    for folder in sample_points:
        findings = Findings()
        got = recompute_point(
            folder / "events.jsonl", tokenizer=TOKENIZER, findings=findings, display=str(folder)
        )
        want = json.loads((folder / "performance" / "result_summary.json").read_text())
        assert [f for f in findings if f.severity == "error"] == []
        for key in RECOMPUTED_KEYS:
            for where, claimed, recomputed in summary_leaves({key: want[key]}, {key: got[key]}):
                checked += 1
                if isinstance(claimed, int) and not isinstance(claimed, bool):
                    assert recomputed == claimed, (folder.name, where)
                elif isinstance(claimed, float):
                    assert recomputed is not None, (folder.name, where)
                    assert math.isclose(recomputed, claimed, rel_tol=1e-9, abs_tol=0.0), (folder.name, where)
                else:
                    assert recomputed == claimed, (folder.name, where)
    # 7 points x (6 scalars + 5 blocks of ~20 values + finish reasons): the comparison really ran
    assert checked > 7 * 100


def test_early_stopping_percentiles_are_present_and_reproduced(sample_points):
    c64 = next(p for p in sample_points if p.name == "c64")
    got = recompute_point(c64 / "events.jsonl", tokenizer=TOKENIZER, findings=Findings(), display="c64")
    want = json.loads((c64 / "performance" / "result_summary.json").read_text())
    # 768 samples: enough for p90 (64) and p99 (662), not for p99.9 (6,636)
    assert want["ttft"]["early_stopping_percentiles"]["99.0"] is not None
    assert (
        got["ttft"]["early_stopping_percentiles"]["99.0"]
        == want["ttft"]["early_stopping_percentiles"]["99.0"]
    )
    assert got["ttft"]["early_stopping_percentiles"]["99.9"] is None


def test_derived_official_metrics(sample_points):
    c1 = next(p for p in sample_points if p.name == "c1")
    got = recompute_point(c1 / "events.jsonl", tokenizer=TOKENIZER, findings=Findings(), display="c1")
    derived = derive_official(got, concurrency=1)
    assert derived["system_tps"] == got["tps"]
    assert derived["tps_per_user"] == pytest.approx(1000.0 / (got["tpot"]["percentiles"]["90.0"] / 1e6))
    assert derived["ttft_p90_ms"] == pytest.approx(got["ttft"]["percentiles"]["90.0"] / 1e6)


def test_tampered_summary_is_caught(sample_points):
    """Output tokens and tps inflated by 1.2 consistently: the official checker passes it, we must not."""
    c16 = next(p for p in sample_points if p.name == "c16")
    summary = json.loads((c16 / "performance" / "result_summary.json").read_text())
    for key in ("total", "min", "max", "median", "avg", "std_dev"):
        summary["output_sequence_lengths"][key] = summary["output_sequence_lengths"][key] * 1.2
    summary["tps"] *= 1.2
    got = recompute_point(c16 / "events.jsonl", tokenizer=TOKENIZER, findings=Findings(), display="c16")
    got.update(derive_official(got, concurrency=16))
    diffs = {d["key"] for d in differences(summary, got)}
    assert "tps" in diffs
    assert "output_sequence_lengths.total" in diffs


@pytest.mark.parametrize(("percentile", "minimum"), [(90.0, 64), (99.0, 662), (99.9, 6636)])
def test_early_stopping_minimum_sample_counts(percentile, minimum):
    assert min_samples_for_early_stopping(percentile / 100.0) == minimum
    values = np.arange(minimum, dtype=np.int64)
    assert early_stopping_estimate(values[:-1], percentile) is None
    assert early_stopping_estimate(values, percentile) is not None


def test_early_stopping_estimate_is_conservative():
    values = np.sort(np.random.default_rng(7).integers(1, 10**9, size=5000))
    for p in EARLY_STOPPING_GRID:
        estimate = early_stopping_estimate(values, p)
        if estimate is not None:
            assert estimate >= np.percentile(values, p, method="lower")


def test_output_texts_follow_the_client():
    assert output_texts(["TextModelOutput", ["Hel", "lo there"], None, None]) == ("Hello there", "lo there")
    assert output_texts(["TextModelOutput", "plain", None, None]) == ("plain", "")
    # streamed reasoning: counted through the chat template (the client's MessageInput), its first chunk the first
    whole, after = structured_output(["TextModelOutput", ["A", "B"], ["r1", "r2"], None])
    assert (whole.content, whole.reasoning, after.content, after.reasoning) == ("AB", "r1r2", "AB", "r2")
    assert output_texts(["TextModelOutput", "", None, None]) == ("", "")


# ---------------------------------------------------------------------------------------------
# Generated logs against a small in-memory reference


def _reference(lines: list[str]) -> dict:
    """A direct, unoptimised reading of DESIGN.md's definitions, holding everything in memory."""
    tracking, blocks, rows, done = False, [], {}, set()
    issued = completed = failed = 0
    ttft, latency, isl, osl, tpot = [], [], [], [], []
    for line in lines:
        e = json.loads(line)
        kind, ts, uuid = e["event_type"], e["timestamp_ns"], e["sample_uuid"]
        if kind == "session.ended":
            break
        if kind == "session.start_performance_tracking":
            tracking = True
            blocks.append([ts, None])
        elif kind == "session.stop_performance_tracking":
            tracking = False
        elif kind.startswith("error."):
            failed += uuid in rows
        elif kind == "sample.issued" and tracking and uuid not in rows and uuid not in done:
            issued += 1
            rows[uuid] = {"issued": ts, "first": None, "block": len(blocks) - 1}
            isl.append(len(TOKENIZER.encode(e["data"][1], add_special_tokens=False)))
        elif kind == "sample.recv_first" and uuid in rows and rows[uuid]["first"] is None:
            rows[uuid]["first"] = ts
            ttft.append(ts - rows[uuid]["issued"])
        elif kind == "sample.complete" and uuid in rows:
            row = rows.pop(uuid)
            done.add(uuid)
            completed += 1
            latency.append(ts - row["issued"])
            block = blocks[row["block"]]
            block[1] = ts if block[1] is None else max(block[1], ts)
            if e["data"] is not None:
                first, rest = e["data"][1]
                n_full = len(TOKENIZER.encode(first + rest, add_special_tokens=False))
                n_rest = len(TOKENIZER.encode(rest, add_special_tokens=False))
                if first + rest:
                    osl.append(n_full)
                if row["first"] is not None and n_rest > 0:
                    tpot.append((ts - row["first"]) / n_rest)
    duration = sum(end - start for start, end in blocks if end is not None)
    return {
        "n_samples_issued": issued,
        "n_samples_completed": completed,
        "n_samples_failed": failed,
        "duration_ns": duration,
        "ttft": ttft,
        "latency": latency,
        "isl": isl,
        "osl": osl,
        "tpot": tpot,
        "tps": sum(osl) / (duration / 1e9) if duration else None,
    }


WORDS = ["serve", "token", " cache", " the", "batch", " GPU", "é", "日本", "\n", "  ", "42", "!", "load"]


@st.composite
def event_logs(draw):
    """A client-shaped log: warmup, tracked samples with failures and late completes, accuracy."""
    text = st.lists(st.sampled_from(WORDS), min_size=0, max_size=12).map("".join)
    lines: list[dict] = []
    clock = [1_000_000]

    def tick(step: int | None = None) -> int:
        clock[0] += step if step is not None else draw(st.integers(1, 5_000_000))
        return clock[0]

    def ev(kind, uuid="", data=None, ts=None, **extra):
        lines.append(
            {
                "event_type": kind,
                "timestamp_ns": tick() if ts is None else ts,
                "sample_uuid": uuid,
                "conversation_id": "",
                "turn": None,
                "data": data,
                **extra,
            }
        )

    ev("session.started")
    for i in range(draw(st.integers(0, 3))):  # warmup: issued and first chunk, never a complete
        ev("sample.issued", f"w{i}", ["PromptData", draw(text) or "warm", None, None, None, None, None, None])
        ev("sample.recv_first", f"w{i}")
    ev("session.start_performance_tracking")
    n = draw(st.integers(1, 40))
    pending = []
    issued_at: dict[str, int] = {}
    last_first: dict[str, int] = {}
    for i in range(n):
        uuid = f"s{i}"
        ev("sample.issued", uuid, ["PromptData", draw(text) or "p", None, None, None, None, None, None])
        issued_at[uuid] = clock[0]
        fails = draw(st.booleans()) and draw(st.booleans())
        if not fails or draw(st.booleans()):
            ev("sample.recv_first", uuid)
            last_first[uuid] = clock[0]
        pending.append((uuid, fails))
        # complete some in-flight samples, sometimes with a timestamp earlier than the previous line
        while pending and draw(st.booleans()):
            done_uuid, failed = pending.pop(draw(st.integers(0, len(pending) - 1)))
            ts = clock[0] - draw(st.integers(0, 1_000)) if draw(st.booleans()) else tick()
            ts = max(ts, issued_at[done_uuid] + 1, last_first.get(done_uuid, 0))
            if failed:
                ev("error.http", done_uuid, ["ErrorData", "HTTPError", "503"])
                ev("sample.complete", done_uuid, None, ts=ts, finish_reason=None, worker_id=0)
            else:
                out = [draw(text), draw(text)]
                ev(
                    "sample.complete",
                    done_uuid,
                    ["TextModelOutput", out, None, None],
                    ts=ts,
                    finish_reason=draw(st.sampled_from(["stop", "length", "weird"])),
                    worker_id=1,
                )
    ev("session.stop_performance_tracking")
    for uuid, failed in pending:  # drain after stop still counts
        ev(
            "sample.complete",
            uuid,
            None if failed else ["TextModelOutput", ["a", draw(text)], None, None],
            finish_reason="stop",
            worker_id=0,
        )
    for i in range(draw(st.integers(0, 2))):  # accuracy phase: never tracked
        ev("sample.issued", f"a{i}", ["PromptData", "acc", None, None, None, None, None, None])
        ev("sample.recv_first", f"a{i}")
        ev("sample.complete", f"a{i}", ["TextModelOutput", ["x", "y"], None, None], finish_reason="stop")
    ev("session.ended")
    return [json.dumps(line) for line in lines]


def _close(a, b) -> bool:
    if a is None or b is None:
        return a is b
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lines=event_logs())
def test_streaming_matches_in_memory_reference(tmp_path, lines):
    path = tmp_path / "events.jsonl"
    path.write_text("\n".join(lines) + "\n")
    findings = Findings()
    got = recompute_point(path, tokenizer=TOKENIZER, findings=findings, display="events.jsonl")
    ref = _reference(lines)
    for key in ("n_samples_issued", "n_samples_completed", "n_samples_failed", "duration_ns"):
        assert got[key] == ref[key], key
    assert _close(got["tps"], ref["tps"])
    for name, series in (
        ("ttft", "ttft"),
        ("latency", "latency"),
        ("input_sequence_lengths", "isl"),
        ("output_sequence_lengths", "osl"),
        ("tpot", "tpot"),
    ):
        values = np.array(ref[series])
        block = got[name]
        assert block["total"] == pytest.approx(values.sum() if len(values) else 0, rel=1e-12)
        if len(values):
            assert block["min"] == values.min() and block["max"] == values.max()
            for p in PERCENTILE_GRID:
                assert _close(
                    block["percentiles"][percentile_key(p)], float(np.percentile(values, p, method="lower"))
                ), (name, p)
    assert not [f for f in findings if f.severity == "error"]


def test_truncated_log_and_garbage_lines_are_findings(tmp_path):
    lines = [
        {"event_type": "session.started", "timestamp_ns": 1},
        {"event_type": "session.start_performance_tracking", "timestamp_ns": 2},
        {
            "event_type": "sample.issued",
            "timestamp_ns": 3,
            "sample_uuid": "a",
            "data": ["PromptData", "hi", None],
        },
        {
            "event_type": "sample.issued",
            "timestamp_ns": 4,
            "sample_uuid": "a",
            "data": ["PromptData", "hi", None],
        },
    ]
    body = "\n".join(json.dumps(x) for x in lines).encode() + b'\n{"event_type": NaN}\n\xff\xfe\n{not json\n'
    path = tmp_path / "events.jsonl"
    path.write_bytes(body)
    findings = Findings()
    recompute_point(path, tokenizer=TOKENIZER, findings=findings, display="r1/events.jsonl", point="S/M/r1")
    rules = {f.rule: f for f in findings}
    assert rules["raw-log-duplicate-event"].line == 4
    assert rules["raw-log-nonfinite"].line == 5
    assert rules["raw-log-invalid-utf8"].line == 6
    assert rules["raw-log-invalid-json"].line == 7
    assert "raw-log-truncated" in rules
    assert all(f.file == "r1/events.jsonl" and f.point == "S/M/r1" for f in findings)


def test_overlong_line_is_skipped_not_loaded(tmp_path):
    path = tmp_path / "events.jsonl"
    path.write_bytes(
        b'{"event_type":"session.started","timestamp_ns":1}\n'
        + b"x" * 5000
        + b"\n"
        + b'{"event_type":"session.ended","timestamp_ns":9}\n'
    )
    findings = Findings()
    recompute_point(path, tokenizer=TOKENIZER, findings=findings, display="e", max_line_bytes=1000)
    too_long = [f for f in findings if f.rule == "raw-log-line-too-long"]
    assert len(too_long) == 1 and too_long[0].line == 2


def test_progress_is_reported_while_reading_a_long_log(tmp_path, monkeypatch, sample_points):
    import checker.recompute.replay as events

    monkeypatch.setattr(events, "PROGRESS_EVERY_LINES", 100)
    seen: list[int] = []
    c64 = next(p for p in sample_points if p.name == "c64")
    recompute_point(
        c64 / "events.jsonl", tokenizer=TOKENIZER, findings=Findings(), display="c64", progress=seen.append
    )
    lines = sum(1 for _ in open(c64 / "events.jsonl", "rb"))
    assert seen == list(range(100, lines + 1, 100))
