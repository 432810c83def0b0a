"""Claimed (result_summary.json) against recomputed, key by key."""

from __future__ import annotations

import math
from typing import Any

from checker.recompute.numbers import finite
from checker.report import Findings

# What a raw log can confirm; run_config and version are not recomputed.
COMPARED_TOP_KEYS = (
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
    "system_tps",
    "tps_per_user",
    "ttft_p90_ms",
)
COMPARED_BLOCK_KEYS = (
    "total",
    "min",
    "max",
    "median",
    "avg",
    "std_dev",
    "percentiles",
    "early_stopping_percentiles",
    "histogram",
)


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def path_parts(path: str) -> list[str]:
    """ "ttft.percentiles.99.9" -> ["ttft", "percentiles", "99.9"] (a percentile key keeps its dot)."""
    parts = path.split(".", 2)
    if len(parts) == 3 and parts[1] in ("percentiles", "early_stopping_percentiles"):
        return parts
    return path.split(".")


def relative_difference(a: float, b: float) -> float:
    scale = max(abs(a), abs(b))
    if scale == 0:
        return 0.0
    try:
        return float(abs(a - b) / scale)
    except OverflowError:
        return math.inf


def _isfinite(value: float) -> bool:
    return finite(value) is not None


def _percentile_table(table: Any) -> dict[float, Any] | None:
    """{"90": x} and {"90.0": x} read as the same key."""
    if not isinstance(table, dict):
        return None
    out: dict[float, Any] = {}
    for key, value in table.items():
        try:
            out[float(key)] = value
        except (TypeError, ValueError):
            continue
    return out


def differences(claimed: dict, recomputed: dict, *, rel_tol: float = 1e-9) -> list[dict]:
    """Every key where claimed and recomputed disagree: integers exactly, floats within rel_tol."""
    found: list[dict] = []

    def compare(path: str, want: Any, got: Any) -> None:
        pointer = "/" + "/".join(path_parts(path))
        if _number(want) and _number(got):
            if isinstance(want, int) and isinstance(got, int):
                if want != got:
                    found.append(
                        {
                            "key": path,
                            "pointer": pointer,
                            "claimed": want,
                            "recomputed": got,
                            "relative": relative_difference(want, got),
                        }
                    )
                return
            if not (_isfinite(want) and _isfinite(got)) or relative_difference(want, got) > rel_tol:
                found.append(
                    {
                        "key": path,
                        "pointer": pointer,
                        "claimed": want,
                        "recomputed": got,
                        "relative": relative_difference(want, got)
                        if _isfinite(want) and _isfinite(got)
                        else None,
                    }
                )
            return
        if want is None and got is None:
            return
        if want != got:
            found.append(
                {"key": path, "pointer": pointer, "claimed": want, "recomputed": got, "relative": None}
            )

    for key in COMPARED_TOP_KEYS:
        if key not in claimed or key not in recomputed:
            continue
        want, got = claimed[key], recomputed[key]
        if isinstance(got, dict) and key == "finish_reason_counts":
            if not isinstance(want, dict):
                compare(key, want, got)
                continue
            for reason, count in got.items():
                if reason in want:
                    compare(f"{key}.{reason}", want[reason], count)
            continue
        if isinstance(got, dict):
            if not isinstance(want, dict):
                compare(key, want, None)
                continue
            for sub in COMPARED_BLOCK_KEYS:
                if sub not in want or sub not in got:
                    continue
                if sub in ("percentiles", "early_stopping_percentiles"):
                    w, g = _percentile_table(want[sub]), _percentile_table(got[sub])
                    if w is None or g is None:
                        compare(f"{key}.{sub}", want[sub], got[sub])
                        continue
                    for p, value in g.items():
                        if p in w:
                            compare(f"{key}.{sub}.{p!r}", w[p], value)
                elif sub == "histogram":
                    _compare_histogram(compare, key, want[sub], got[sub])
                else:
                    compare(f"{key}.{sub}", want[sub], got[sub])
            continue
        compare(key, want, got)
    return found


def _compare_histogram(compare, key: str, want: Any, got: dict) -> None:
    """Bucket edges (floats) and counts (exactly), bucket by bucket; a different number of buckets is one difference."""
    if not isinstance(want, dict) or not all(isinstance(want.get(k), list) for k in ("buckets", "counts")):
        compare(f"{key}.histogram", want, got)
        return
    for part in ("buckets", "counts"):
        w, g = want[part], got[part]
        if len(w) != len(g):
            compare(f"{key}.histogram.{part}", f"{len(w)} entries", f"{len(g)} entries")
            continue
        for i, (a, b) in enumerate(zip(w, g, strict=True)):
            if part == "counts":
                compare(f"{key}.histogram.counts.{i}", a, b)
            elif isinstance(a, list) and len(a) == 2:
                compare(f"{key}.histogram.buckets.{i}.0", a[0], b[0])
                compare(f"{key}.histogram.buckets.{i}.1", a[1], b[1])
            else:
                compare(f"{key}.histogram.buckets.{i}", a, b)


def _show(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.12g}"
    text = repr(value)
    return text if len(text) <= 40 else f"{text[:24]}... ({len(text)} characters)"


def report_differences(
    claimed: dict, recomputed: dict, *, findings: Findings, file: str, point: str, rel_tol: float = 1e-9
) -> int:
    """One `raw-log-consistency` error per differing key; returns how many."""
    diffs = differences(claimed, recomputed, rel_tol=rel_tol)
    for d in diffs:
        rel = f" (relative difference {d['relative']:.3g})" if d["relative"] is not None else ""
        findings.error(
            "raw-log-consistency",
            f"{d['key']}: result_summary.json claims {_show(d['claimed'])}, the raw log gives "
            f"{_show(d['recomputed'])}{rel}.",
            file=file,
            pointer=d["pointer"],
            point=point,
            fix="Upload the result_summary.json the client wrote for this events.jsonl, unedited.",
        )
    return len(diffs)
