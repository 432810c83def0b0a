"""The point replay gives exactly what the old per-event replay gave, on every real point of the samples.

Every real point of the samples (tests/checker/fixtures, byte-for-byte copies of /work/shared/samples:
run_archives, extension, second-system, 17 points) is replayed by checker.recompute.replay and by tests/checker/replay_reference.py (the replay before its per-event work was batched, kept
verbatim): the summaries (every metric, digest and in-flight figure), the per-sample arrays (goodput) and the
findings must be equal, not close. The token counts are also checked against the tokenizer itself, one text at
a time, and the summaries against the client's own result_summary.json.
"""

from __future__ import annotations

import json
import math
import tarfile
from pathlib import Path

import numpy as np
import pytest
import tokenizers

from checker.recompute import replay as events
from checker.recompute.tokens import TokenCounter
from checker.report import Findings
from tests.checker import replay_reference

SAMPLES = Path(__file__).parent / "fixtures"  # byte-for-byte copies of /work/shared/samples
ARCHIVES = sorted(
    [
        *SAMPLES.glob("run_archives/*.tar.gz"),
        *SAMPLES.glob("extension/*.tar.gz"),
        *SAMPLES.glob("second-system/*.tar.gz"),
    ]
)
TOKENIZER = tokenizers.Tokenizer.from_file(str(SAMPLES / "tokenizer" / "tokenizer.json"))


def _unpack(archive: Path, into: Path) -> Path:
    with tarfile.open(archive) as tar:  # trusted real samples written by the official tools
        tar.extractall(into, filter="data")
    return next(p.parent for p in into.rglob("events.jsonl"))


@pytest.fixture(scope="module")
def points(tmp_path_factory) -> list[tuple[str, Path]]:
    root = tmp_path_factory.mktemp("identity")
    return [(a.parent.name + "/" + a.name, _unpack(a, root / a.name.split(".")[0])) for a in ARCHIVES]


def _run(module, folder: Path):
    findings = Findings()
    got: dict = {}
    # The reference counts with `tokenizers` alone; the replay with tiktoken where checker.recompute.fastcount allows it.
    tokenizer = TokenCounter(TOKENIZER, fast=False) if module is replay_reference else TOKENIZER
    summary = module.recompute_point(
        folder / "events.jsonl",
        tokenizer=tokenizer,
        findings=findings,
        display="events.jsonl",
        point="S/M/r",
        declared_concurrency=4,
        on_samples=lambda s: got.setdefault("samples", s),
    )
    return summary, got["samples"], [(f.rule, f.severity, f.message, f.line) for f in findings]


def _same(a, b) -> bool:
    """Equal to the bit: floats compared exactly (NaN equal to NaN), arrays element by element."""
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple):
        return isinstance(b, list | tuple) and len(a) == len(b) and all(map(_same, a, b))
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return type(a) is type(b) and a == b


def test_the_replay_counts_real_points_with_tiktoken(points):
    counter = TokenCounter(TOKENIZER)
    assert counter.engine == "tiktoken"
    for _, folder in points:
        events.recompute_point(folder / "events.jsonl", tokenizer=counter, findings=Findings(), display="x")
    assert counter.texts > 0 and counter.fast_texts > 0.9 * counter.texts


def test_all_seventeen_real_points_are_there(points):
    assert len(points) == 17
    assert {name.split("/")[0] for name, _ in points} == {"run_archives", "extension", "second-system"}


def test_replay_equals_the_old_per_event_replay_on_every_real_point(points):
    for name, folder in points:
        summary, samples, findings = _run(events, folder)
        ref_summary, ref_samples, ref_findings = _run(replay_reference, folder)
        assert _same(summary, ref_summary), name
        assert findings == ref_findings, name
        for field in ("ttft_ns", "tpot_ns", "output_tokens", "ok"):
            assert np.array_equal(getattr(samples, field), getattr(ref_samples, field), equal_nan=True), (
                name,
                field,
            )
        assert samples.duration_ns == ref_samples.duration_ns, name


def _tracked_texts(path: Path) -> tuple[list[str], list[tuple[str, str]]]:
    """Prompts of tracked samples in issue order, and (full, after first chunk) of their completes in file order."""
    tracking, started, inflight = False, False, {}
    prompts: list[str] = []
    outputs: list[tuple[str, str]] = []
    for raw in path.read_bytes().splitlines():
        event = json.loads(raw)
        kind = event["event_type"]
        if kind == "session.start_performance_tracking":
            tracking = started = True
        elif kind == "session.stop_performance_tracking":
            tracking = False
        elif kind == "session.ended":
            break
        elif kind == "sample.issued" and tracking and event["sample_uuid"] not in inflight:
            inflight[event["sample_uuid"]] = True
            prompts.append(event["data"][1])
        elif kind == "sample.complete" and inflight.pop(event["sample_uuid"], None) and event["data"]:
            outputs.append(events.output_texts(event["data"]))
    assert started
    return prompts, outputs


def test_token_counts_are_the_tokenizers_own_one_text_at_a_time(points):
    for name, folder in points:
        summary, samples, _ = _run(events, folder)
        prompts, outputs = _tracked_texts(folder / "events.jsonl")
        count = [len(TOKENIZER.encode(t, add_special_tokens=False)) for t in prompts]
        assert summary["input_sequence_lengths"]["total"] == sum(count), name
        osl = [len(TOKENIZER.encode(full, add_special_tokens=False)) for full, _ in outputs]
        assert summary["output_sequence_lengths"]["total"] == sum(osl), name
        assert int(samples.output_tokens.sum()) == sum(osl), name


def test_replay_reproduces_the_clients_own_summary(points):
    for name, folder in points:
        summary, _, _ = _run(events, folder)
        want = json.loads((folder / "performance" / "result_summary.json").read_text())
        for key in ("n_samples_issued", "n_samples_completed", "n_samples_failed", "duration_ns"):
            assert summary[key] == want[key], (name, key)
        for key in ("ttft", "tpot", "latency", "input_sequence_lengths", "output_sequence_lengths"):
            assert summary[key]["total"] == pytest.approx(want[key]["total"], rel=1e-9), (name, key)
            assert summary[key]["percentiles"] == pytest.approx(want[key]["percentiles"], rel=1e-9), (
                name,
                key,
            )
