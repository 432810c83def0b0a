"""Tender scoring (DESIGN.md, "Tender desk"): the evaluator's criteria, each with a weight and a direction, scored
as the EU "most economically advantageous tender" discloses it in advance: w x value / best for higher-is-better,
w x best / value for lower-is-better, best over the eligible systems; total = sum of the scores; eligible = the
system's evidence meets every requirement of the phase. Values come from each system's phase evidence (the
procurement report's point, leaderboard.board.procurement), published and recomputed; nothing else. Plain functions."""

from __future__ import annotations

import math
from dataclasses import dataclass

from leaderboard.board.slo import number

HIGHER, LOWER = "higher", "lower"
MAX_CRITERIA = 8

# name -> (label, default direction): every value is read from a phase's evidence (and the row's accelerator count)
CRITERIA = {
    "system_tps": ("System throughput (tokens/s)", HIGHER),
    "system_tps_per_accelerator": ("Throughput per accelerator (tokens/s)", HIGHER),
    "interactivity": ("Interactivity (tokens/s/user)", HIGHER),
    "ttft_p90_ms": ("TTFT P90 (ms)", LOWER),
    "tpot_p90_ms": ("TPOT P90 (ms)", LOWER),
    "tokens_per_s_per_kw": ("Tokens/s per kW", HIGHER),
    "joules_per_token": ("Energy per output token (J)", LOWER),
    "cost_per_million_tokens": ("Cost per million output tokens", LOWER),
}


@dataclass(frozen=True)
class Criterion:
    name: str
    weight: float
    direction: str

    @property
    def label(self) -> str:
        return CRITERIA[self.name][0]


def criterion_value(row: dict, evidence: dict, name: str) -> float | None:
    if name == "system_tps_per_accelerator":
        tps, accelerators = number(evidence.get("system_tps")), number(row.get("accelerators"))
        return tps / accelerators if tps is not None and accelerators else None
    return number(evidence.get(name))


def _score(criterion: Criterion, value: float | None, best: float | None) -> tuple[float, str]:
    """(score, its arithmetic). A system without the figure, or a zero where it divides, scores 0 and says why."""
    w = criterion.weight
    if value is None or best is None:
        return 0.0, f"no published figure: 0 of {w:g}"
    if criterion.direction == HIGHER:
        if best == 0:
            return 0.0, f"{w:g} × {value:g} / 0: 0"
        return w * value / best, f"{w:g} × {value:g} / {best:g} = {w * value / best:.4f}"
    if value == 0:
        return 0.0, f"{w:g} × {best:g} / 0: 0"
    return w * best / value, f"{w:g} × {best:g} / {value:g} = {w * best / value:.4f}"


def score_phase(rows: list[dict], phase: str, criteria: list[Criterion]) -> dict:
    """The score sheet of one phase over the procurement report's rows: the eligible systems (their evidence for the
    phase meets it), each criterion's best, and per system each score with its arithmetic and evidence, ranked by
    total (ties by public id)."""
    eligible = [row for row in rows if (row.get(phase) or {}).get("meets")]
    best: dict[str, float | None] = {}
    for criterion in criteria:
        values = [
            v for row in eligible if (v := criterion_value(row, row[phase], criterion.name)) is not None
        ]
        pick = max if criterion.direction == HIGHER else min
        best[criterion.name] = pick(values) if values else None
    sheet = []
    for row in eligible:
        evidence = row[phase]
        scores = []
        for criterion in criteria:
            value = criterion_value(row, evidence, criterion.name)
            score, arithmetic = _score(criterion, value, best[criterion.name])
            scores.append(
                {
                    "criterion": criterion.name,
                    "label": criterion.label,
                    "weight": criterion.weight,
                    "direction": criterion.direction,
                    "value": value,
                    "best": best[criterion.name],
                    "score": score,
                    "arithmetic": arithmetic,
                    "point_url": evidence.get("point_url"),
                }
            )
        sheet.append(
            {
                "system": row.get("system"),
                "organisation": row.get("organisation"),
                "public_id": row["public_id"],
                "accelerator_label": row.get("accelerator_label") or "",
                "point": evidence.get("point"),
                "concurrency": evidence.get("concurrency"),
                "point_url": evidence.get("point_url"),
                "evidence_pack_url": row.get("evidence_pack_url"),
                "scores": scores,
                "total": math.fsum(s["score"] for s in scores),
            }
        )
    sheet.sort(key=lambda entry: (-entry["total"], entry["public_id"]))
    for rank, entry in enumerate(sheet, start=1):
        entry["rank"] = rank
    return {
        "phase": phase,
        "best": best,
        "max_total": math.fsum(c.weight for c in criteria),
        "eligible": len(eligible),
        "judged": len(rows),
        "systems": sheet,
    }


def criteria_problems(query) -> tuple[list[Criterion], list[tuple[str, str, str]]]:
    """criterion_N, weight_N (> 0) and direction_N (higher | lower; the criterion's own by default), N = 1..8: the
    criteria read, and a (parameter, label, sentence) per bad field (leaderboard.board.procurement.RequirementsError's)."""
    criteria, problems = [], []
    for index in range(1, MAX_CRITERIA + 1):
        name = (query.get(f"criterion_{index}") or "").strip()
        if not name:
            continue
        if name not in CRITERIA:
            problems.append(
                (
                    f"criterion_{index}",
                    f"Criterion {index}",
                    f"choose one of {', '.join(CRITERIA)}, not '{name[:40]}'.",
                )
            )
            continue
        raw = (query.get(f"weight_{index}") or "").strip()
        try:
            weight = float(raw)
        except ValueError:
            weight = math.nan
        if not math.isfinite(weight) or weight <= 0 or weight > 1e6:
            problems.append(
                (
                    f"weight_{index}",
                    f"Criterion {index} · Weight",
                    f"enter a weight above 0 (e.g. 40), not '{raw[:20]}'.",
                )
            )
            continue
        direction = (query.get(f"direction_{index}") or "").strip() or CRITERIA[name][1]
        if direction not in (HIGHER, LOWER):
            problems.append(
                (
                    f"direction_{index}",
                    f"Criterion {index} · Better when",
                    f"enter higher or lower, not '{direction[:20]}'.",
                )
            )
            continue
        criteria.append(Criterion(name=name, weight=weight, direction=direction))
    if not criteria and not problems:
        problems.append(
            (
                "criterion_1",
                "Criterion 1",
                "give at least one criterion (criterion_1=system_tps&weight_1=60).",
            )
        )
    return criteria, problems


def criteria_from_query(query) -> list[Criterion]:
    """The criteria of a query string; raises ValueError with a sentence per bad field, naming its parameter."""
    criteria, problems = criteria_problems(query)
    if problems:
        raise ValueError(" ".join(f"{parameter}: {sentence}" for parameter, _, sentence in problems))
    return criteria
