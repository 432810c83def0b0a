"""Engagement (section 4.5.3): the nodes a point declares it engages (nodes-used), and whether its declared
parallelism engages every provisioned accelerator (maximal-engagement)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from checker.judge.rules.common import short, text
from checker.judge.rules.state import Point, RuleRun


def _parallelism(run: RuleRun, point: Point) -> dict[str, Any] | None:
    """TP/PP/EP/DP from the point's system_desc.json (top level, else config_summary); None if none is declared."""
    described = point.system_description
    if described is None:
        return None
    config_summary = described.get("config_summary")
    summary: dict = config_summary if isinstance(config_summary, dict) else {}
    fields = run.ruleset.get("engagement", "parallelism_fields", default=[]) or []
    values: dict[str, Any] = {}
    for name in fields:
        value = described.get(name, summary.get(name))
        if value is None and name in described:
            value = summary.get(name)
        if isinstance(value, int) and not isinstance(value, bool):
            values[name] = value
    if not values:
        return None
    flag = described.get("disaggregated", summary.get("disaggregated"))
    if flag is None:
        flag = summary.get("disaggregated")
    values["disaggregated"] = flag is True or (
        isinstance(flag, int) and not isinstance(flag, bool) and flag > 1
    )
    return values


@dataclass(frozen=True)
class Engagement:
    """What one point engages: its node sets (from system_power.json) and its declared parallelism."""

    sets: list[dict]
    parallelism: dict[str, Any] | None
    replica: int | None  # A_replica = TP x PP x EP
    dp: int | None
    per_node_known: bool  # accelerators per node known for every node set


def _engagement_of(run: RuleRun, point: Point, provisioned: Any) -> Engagement:
    sets = provisioned.sets
    parallelism = _parallelism(run, point)
    replica: int | None = None
    dp: int | None = None
    if parallelism is not None:
        replica = (
            parallelism.get("tensor_parallel", 1)
            * parallelism.get("pipeline_parallel", 1)
            * parallelism.get("expert_parallel", 1)
        )
        dp = parallelism.get("data_parallel", 1)
    per_node_known = bool(sets) and all(
        node_set.get("accelerators_per_node") is not None for node_set in sets
    )
    return Engagement(sets, parallelism, replica, dp, per_node_known)


def check_engagement(run: RuleRun, point: Point, provisioned: Any) -> None:
    """Section 4.5.3 at one point: the nodes it declares (nodes-used), then whether its parallelism engages
    every provisioned accelerator (maximal-engagement)."""
    if not point.yaml_ok:
        return
    engagement = _engagement_of(run, point, provisioned)
    declared = point.yaml.get("nodes_used")
    if declared is not None:
        check_nodes_used(run, point, engagement, declared)
    check_maximal_engagement(run, point, engagement)


def check_nodes_used(run: RuleRun, point: Point, engagement: Engagement, declared: Any) -> None:
    """nodes-used: per node type, the nodes the point engages (at most N_s), and not more than it needs."""
    sets = engagement.sets
    problems, by_set = _declared_nodes(declared, sets)
    spare_detail = None
    if not problems:
        spare_detail = _spare_nodes(engagement, by_set, problems)
    _report_nodes_used(run, point, sets, by_set, problems, spare_detail)


def _declared_nodes(declared: Any, sets: list[dict]) -> tuple[list[str], dict[Any, int]]:
    """The problems of point.yaml's nodes_used, and the nodes it declares per node set (by the set's id())."""
    problems: list[str] = []
    by_set: dict[Any, int] = {}
    seen: set = set()
    entries = declared if isinstance(declared, list) else None
    if entries is None:
        problems.append(
            f"nodes_used must be a list of {{system_node_ensemble_id, nodes}}, got {short(declared)}"
        )
    for entry in entries or []:
        ensemble = entry.get("system_node_ensemble_id") if isinstance(entry, dict) else None
        nodes = entry.get("nodes") if isinstance(entry, dict) else None
        if type(ensemble) is not int or type(nodes) is not int:
            problems.append(f"entry {short(entry)} needs integer system_node_ensemble_id and nodes")
            continue
        if ensemble in seen:
            problems.append(f"system_node_ensemble_id {ensemble} is declared twice")
            continue
        seen.add(ensemble)
        matches = [node_set for node_set in sets if node_set.get("ensemble") == ensemble]
        if len(matches) != 1:
            problems.append(
                f"system_node_ensemble_id {ensemble} matches {len(matches)} node sets in "
                "system_power.json; it must resolve to exactly one"
            )
            continue
        if not 1 <= nodes <= matches[0]["nodes"]:
            problems.append(
                f"system_node_ensemble_id {ensemble}: nodes {nodes} must be a positive whole number "
                f"no greater than N_s = {matches[0]['nodes']}"
            )
            continue
        by_set[id(matches[0])] = nodes
    return problems, by_set


def _spare_nodes(engagement: Engagement, by_set: dict[Any, int], problems: list[str]) -> str | None:
    """How the declared nodes could be fewer (None when they cannot); too few for the parallelism is a problem."""
    sets, parallelism, replica, dp = (
        engagement.sets,
        engagement.parallelism,
        engagement.replica,
        engagement.dp,
    )
    per_node_known = engagement.per_node_known
    spare_detail = None
    if (
        parallelism is not None
        and replica is not None
        and dp is not None
        and not parallelism["disaggregated"]
        and per_node_known
    ):
        engaged = {id(node_set): by_set.get(id(node_set), node_set["nodes"]) for node_set in sets}
        capacity = sum(engaged[id(node_set)] * node_set["accelerators_per_node"] for node_set in sets)
        used = dp * replica
        if capacity < used:
            problems.append(
                f"the declared nodes hold {capacity} accelerators, but the point's parallelism "
                f"(DP {dp} x TP*PP*EP {replica}) engages {used}"
            )
        else:
            spare = [
                node_set
                for node_set in sets
                if engaged[id(node_set)] > 0 and capacity - node_set["accelerators_per_node"] >= used
            ]
            if spare:
                per_node = spare[0]["accelerators_per_node"] or 1
                spare_detail = (
                    f"ceil({used} / {per_node}) = {-(-used // per_node)} nodes"
                    if len(sets) == 1
                    else f"{used} accelerators fit in fewer nodes"
                )
    return spare_detail


def _report_nodes_used(
    run: RuleRun,
    point: Point,
    sets: list[dict],
    by_set: dict[Any, int],
    problems: list[str],
    spare_detail: str | None,
) -> None:
    file = point.file("point.yaml")
    if problems:
        run.findings.error(
            "nodes-used",
            f"r{point.concurrency}: " + "; ".join(problems),
            file=file,
            point=point.key,
            pointer="/nodes_used",
            fix="Declare, per node type of system_power.json, the nodes this point engages.",
        )
    elif spare_detail:
        run.findings.warning(
            "nodes-used",
            f"r{point.concurrency}: nodes_used declares more nodes than the point engages "
            f"({spare_detail}); the extra nodes only raise this point's power denominator.",
            file=file,
            point=point.key,
            pointer="/nodes_used",
        )
    else:
        run.findings.info(
            "nodes-used",
            f"r{point.concurrency}: nodes_used "
            + ", ".join(
                f"set {node_set.get('node_set_id')}: {by_set.get(id(node_set), node_set['nodes'])}/{node_set['nodes']}"
                for node_set in sets
            ),
            file=file,
            point=point.key,
        )


def _engagement_checkable(run: RuleRun, point: Point, engagement: Engagement) -> bool:
    """Whether the point declares what maximal-engagement needs; a warning or an error says what is missing."""
    file = point.file("point.yaml")
    parallelism, replica, dp = engagement.parallelism, engagement.replica, engagement.dp
    label = f"Point {point.concurrency}"
    if parallelism is None:
        run.findings.warning(
            "maximal-engagement",
            f"{label}: system_desc.json declares no tensor/pipeline/expert/data "
            "parallelism, so section 4.5.3's engagement cannot be checked.",
            file=file,
            point=point.key,
            fix="Declare the point's parallelism in its system_desc.json.",
        )
        return False
    if parallelism["disaggregated"]:
        run.findings.warning(
            "maximal-engagement",
            f"{label}: disaggregated serving \u2014 A_replica = TP x PP x EP does "
            "not describe a prefill/decode split, so engagement is left to peer review.",
            file=file,
            point=point.key,
        )
        return False
    if not engagement.per_node_known:
        run.findings.warning(
            "maximal-engagement",
            f"{label}: accelerators per node are not known for every node set, "
            "so A_provisioned cannot be derived.",
            file=file,
            point=point.key,
            fix="Give accelerator.count_per_node in system_power.json or accelerators_per_node in "
            "system_desc.json.",
        )
        return False
    assert replica is not None and dp is not None  # both come with the declared parallelism
    if (
        replica < 1
        or dp < 1
        or min(parallelism.get(k, 1) for k in ("tensor_parallel", "pipeline_parallel", "expert_parallel")) < 1
    ):
        run.findings.error(
            "maximal-engagement",
            f"{label}: TP, PP, EP and DP must each be at least 1.",
            file=point.file("system_desc.json"),
            point=point.key,
        )
        return False
    return True


def check_maximal_engagement(run: RuleRun, point: Point, engagement: Engagement) -> None:
    """maximal-engagement: DP = floor(A_provisioned / A_replica), or a declared dp_shortfall (section 8.3)."""
    if not _engagement_checkable(run, point, engagement):
        return
    file = point.file("point.yaml")
    sets, replica, dp = engagement.sets, engagement.replica, engagement.dp
    assert replica is not None and dp is not None  # both come with the declared parallelism
    label = f"Point {point.concurrency}"
    a_provisioned = sum(node_set["nodes"] * node_set["accelerators_per_node"] for node_set in sets)
    dp_max = a_provisioned // replica
    formula = f"floor({a_provisioned} / {replica}) = {dp_max}"
    shortfall = point.yaml.get("dp_shortfall")
    if dp > dp_max:
        run.findings.error(
            "maximal-engagement",
            f"{label}: DP {dp} x A_replica {replica} = {dp * replica} accelerators, "
            f"more than the {a_provisioned} provisioned ({formula}).",
            file=file,
            point=point.key,
            fix="Provision the accelerators the point uses in system_power.json.",
        )
    elif dp == dp_max:
        if shortfall is not None:
            run.findings.warning(
                "maximal-engagement",
                f"{label}: DP {dp} = {formula}, engaging {dp * replica} of "
                f"{a_provisioned}; dp_shortfall is declared but there is no shortfall.",
                file=file,
                point=point.key,
                pointer="/dp_shortfall",
                fix="Remove dp_shortfall.",
            )
        else:
            run.findings.info(
                "maximal-engagement",
                f"{label}: DP {dp} = {formula}, engaging {dp * replica} of {a_provisioned}",
                file=file,
                point=point.key,
            )
    elif not isinstance(shortfall, dict):
        run.findings.error(
            "maximal-engagement",
            f"{label}: DP {dp} is below {formula}, and the point declares no dp_shortfall (section 8.3).",
            file=file,
            point=point.key,
            pointer="/dp_shortfall",
            fix="Run DP = floor(A_provisioned / A_replica) replicas, or declare dp_shortfall "
            "(dp_actual, dp_formula, reason).",
        )
    elif (
        shortfall.get("dp_actual") != dp
        or shortfall.get("dp_formula") != dp_max
        or not text(shortfall.get("reason"))
    ):
        run.findings.error(
            "maximal-engagement",
            f"{label}: dp_shortfall declares DP {short(shortfall.get('dp_actual'))} "
            f"of {short(shortfall.get('dp_formula'))} (reason {short(shortfall.get('reason'))}), but the "
            f"point runs DP {dp} of {formula}.",
            file=file,
            point=point.key,
            pointer="/dp_shortfall",
        )
    else:
        run.findings.warning(
            "maximal-engagement",
            f"{label}: DP {dp} below {formula}, declared as a shortfall: "
            f"{shortfall.get('reason')!r} \u2014 subject to Methodology objection at peer review.",
            file=file,
            point=point.key,
            pointer="/dp_shortfall",
        )
