"""Physical consistency: what a recomputation alone does not catch (DESIGN.md, "Physical consistency").

A point's raw log and its summary can agree with each other and still describe a run that did not happen at the
declared concurrency (a concurrency-32 run relabelled as 16 in every file), or the same run can be filed under
two points. These rules judge the replayed log against the declared concurrency:

- `in-flight-max` (error): tracked requests in flight, replayed in file order, never exceed the declared C.
- `in-flight-mean` (error): their time-weighted mean over the tracked window is close to C (a concurrency-C run
  keeps C in flight): at least C x (1 - max latency / duration - slack); the drain of the last requests costs at
  most one maximum latency of the window.
- `implied-concurrency` (error): system_tps / tps_per_user, at most C x (TPOT P90 / mean TPOT) x (1 - TTFT
  share) x (1 + slack): tps_per_user is read at TPOT P90 while throughput follows the mean rate, and a user
  waiting for the first token streams nothing.
- `raw-log-duplicate` (error): no two points carry the same raw log (SHA-256) or tracked sample sequence.
- `concurrency-declared` (error): folder name, point.yaml, config.yaml and result_summary.json declare one C.

The figures (max and mean in flight, implied concurrency and the bounds) go to the point's `physical` block of
the report (docs/report-format.md) whether or not a rule fires.
"""

from __future__ import annotations

from typing import Any

from checker.judge.rules.common import dig, short
from checker.judge.rules.state import Point, RuleRun
from checker.recompute.numbers import finite

DEFAULT_MEAN_SLACK = 0.02
DEFAULT_IMPLIED_SLACK = 0.05


def _slack(run: RuleRun, key: str, default: float) -> float:
    value = finite(run.ruleset.get("physical", key, default=default))
    return default if value is None or value < 0 else value


def _declared_pattern(point: Point) -> bool:
    """The in-flight and implied-concurrency rules hold for a fixed-concurrency, single-turn, non-Offline point."""
    return point.offline != "dedicated" and not point.agentic


def check_point_physics(run: RuleRun, point: Point) -> None:
    """in-flight-max, in-flight-mean and implied-concurrency for one point; figures into extra["physical"]."""
    concurrency = point.concurrency
    physical: dict[str, Any] = {"declared_concurrency": concurrency}
    point.result.extra["physical"] = physical
    if concurrency <= 0 or not _declared_pattern(point):
        return
    recomputed = point.result.recomputed if isinstance(point.result.recomputed, dict) else None
    in_flight = recomputed.get("in_flight") if recomputed else None
    if isinstance(in_flight, dict):
        _check_in_flight(run, point, recomputed or {}, in_flight, physical)
    _check_implied(run, point, physical)


def _check_in_flight(
    run: RuleRun, point: Point, recomputed: dict, in_flight: dict, physical: dict[str, Any]
) -> None:
    concurrency = point.concurrency
    events = point.file("events")
    peak = in_flight.get("max")
    mean = finite(in_flight.get("mean"))
    physical["max_in_flight"] = peak
    physical["mean_in_flight"] = mean
    if isinstance(peak, int) and peak > concurrency:
        line = in_flight.get("over_declared_line")
        run.findings.error(
            "in-flight-max",
            f"r{concurrency}: the raw log keeps up to {peak} tracked requests in flight at once (more than "
            f"{concurrency} from line {line} on), but the point declares concurrency {concurrency}.",
            file=events,
            line=line if isinstance(line, int) else None,
            point=point.key,
            fix=f"File the run under the concurrency it ran at ({peak} or more): its folder name, point.yaml, "
            "config.yaml and result_summary.json; or re-run the point at the declared concurrency.",
        )
    duration_ns = finite(recomputed.get("duration_ns"))
    longest_ns = finite(dig(recomputed, "latency", "max"))
    if mean is None or duration_ns is None or duration_ns <= 0 or longest_ns is None:
        return
    slack = _slack(run, "in_flight_mean_slack", DEFAULT_MEAN_SLACK)
    drain = min(1.0, longest_ns / duration_ns)
    lowest = concurrency * max(0.0, 1.0 - drain - slack)
    physical["mean_in_flight_min"] = lowest
    if mean < lowest:
        run.findings.error(
            "in-flight-mean",
            f"r{concurrency}: the raw log keeps {mean:.2f} tracked requests in flight on average over the "
            f"tracked window, below {lowest:.2f} (concurrency {concurrency} less the drain of one maximum "
            f"latency, {drain:.1%} of the window, and {slack:.0%}); a concurrency-{concurrency} run keeps "
            f"{concurrency} in flight.",
            file=events,
            point=point.key,
            fix=f"Declare the concurrency the client actually held (about {mean:.0f}), or re-run the point so that "
            f"the client keeps {concurrency} requests in flight.",
        )


def _check_implied(run: RuleRun, point: Point, physical: dict[str, Any]) -> None:
    summary = point.summary or {}
    concurrency = point.concurrency
    system_tps = point.system_tps()
    tpot_p90_ms = point.tpot_p90_ms()
    if system_tps is None or tpot_p90_ms is None or tpot_p90_ms <= 0:
        return
    implied = system_tps * tpot_p90_ms / 1000.0  # system_tps / tps_per_user
    physical["implied_concurrency"] = implied
    tpot_mean_ns = finite(dig(summary, "tpot", "avg"))
    if tpot_mean_ns is None or tpot_mean_ns <= 0:
        return
    spread = (tpot_p90_ms * 1e6) / tpot_mean_ns
    ttft_mean = finite(dig(summary, "ttft", "avg"))
    latency_mean = finite(dig(summary, "latency", "avg"))
    ttft_share = 0.0
    if ttft_mean is not None and latency_mean is not None and latency_mean > 0:
        ttft_share = min(max(ttft_mean / latency_mean, 0.0), 1.0)
    slack = _slack(run, "implied_concurrency_slack", DEFAULT_IMPLIED_SLACK)
    highest = concurrency * spread * (1.0 - ttft_share) * (1.0 + slack)
    physical["implied_concurrency_max"] = highest
    physical["tpot_p90_over_mean"] = spread
    physical["ttft_share"] = ttft_share
    if implied > highest:
        run.findings.error(
            "implied-concurrency",
            f"r{concurrency}: system_tps {system_tps:.1f} / tps_per_user {1000.0 / tpot_p90_ms:.1f} implies "
            f"{implied:.1f} users streaming at once ({point.basis}), more than concurrency {concurrency} allows "
            f"({highest:.1f}: TPOT P90 / mean {spread:.3f}, TTFT share {ttft_share:.1%}, slack {slack:.0%}).",
            file=point.file("result_summary.json"),
            point=point.key,
            fix="Declare the concurrency the run was made at; a curve point cannot stream more users than it "
            "keeps in flight.",
        )


def check_raw_log_duplicates(run: RuleRun) -> None:
    """raw-log-duplicate: one raw log (or one tracked sample sequence) under two points of the inputs."""
    seen: dict[tuple[str, str], Point] = {}
    for point in run.points:
        recomputed = point.result.recomputed if isinstance(point.result.recomputed, dict) else {}
        reported = False
        for kind, label in (
            ("raw_log_sha256", "the same raw log (SHA-256 {digest})"),
            (
                "tracked_sequence_sha256",
                "the same tracked sample sequence (digest {digest} of the ordered uuids)",
            ),
        ):
            digest = recomputed.get(kind)
            if not isinstance(digest, str) or not digest:
                continue
            first = seen.setdefault((kind, digest), point)
            if first is point or reported:
                continue
            reported = True
            run.findings.error(
                "raw-log-duplicate",
                f"{point.file('events')} and {first.file('events')} carry {label.format(digest=digest[:16] + '…')}: "
                f"{point.key} and {first.key} are one run filed twice.",
                file=point.file("events"),
                point=point.key,
                fix=f"Upload the raw log of the run made for {point.key}; every point is its own run.",
            )


def check_declared_concurrency(run: RuleRun, point: Point) -> None:
    """concurrency-declared: the folder name, point.yaml, config.yaml and result_summary.json name one C."""
    declared: list[tuple[str, Any]] = []
    if point.folder_concurrency is not None:
        declared.append((f"folder {point.folder_name}/", point.folder_concurrency))
    if point.yaml_ok and point.yaml.get("concurrency") is not None:
        declared.append(("point.yaml concurrency", point.yaml.get("concurrency")))
    if point.offline != "dedicated":  # a dedicated Offline run has its own load pattern
        target = dig(point.config, "settings", "load_pattern", "target_concurrency")
        if target is not None:
            declared.append(("config.yaml settings.load_pattern.target_concurrency", target))
        stored = dig(point.stored, "run_config", "load_pattern", "target_concurrency")
        if stored is not None:
            declared.append(("result_summary.json run_config.load_pattern.target_concurrency", stored))
    values = {short(value) for _, value in declared}
    if len(values) <= 1:
        return
    listed = "; ".join(f"{where} = {short(value)}" for where, value in declared)
    run.findings.error(
        "concurrency-declared",
        f"r{point.concurrency}: the files of this point declare different concurrencies ({listed}).",
        file=point.file("point.yaml"),
        point=point.key,
        fix="Declare the concurrency the client ran at in every file: the folder name (r<C> / c<C>), point.yaml "
        "`concurrency`, and the client's config.yaml and result_summary.json as it wrote them.",
    )
