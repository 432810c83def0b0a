"""The buyer's normalised and cost figures of a result's points (issue 20, item 3): tokens/s per accelerator, per
node, per provisioned kW and per measured kW (where a power trace was submitted), and, from a price the buyer
enters (nothing is priced by the portal), the system's cost per hour and per million output tokens; with
per-request targets, each point's goodput (from its per-sample arrays) and the cost per million good tokens. The
inputs come from the page's query string, so a priced page can be shared. The result page and compare use it."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from checker.recompute.goodput import SloTarget, evaluate
from leaderboard.board.goodput.samples import load_samples, published_point_samples
from leaderboard.board.goodput.targets import Prices
from leaderboard.board.slo import node_count

HOURLY_PRICE_FIELDS = (
    ("price_per_accelerator_hour", "Price per accelerator-hour"),
    ("price_per_node_hour", "Price per node-hour"),
    ("price_per_system_hour", "Price per system-hour"),
)
INPUT_PRICE_FIELD = ("price_per_million_input_tokens", "Price per million input tokens")
PRICE_FIELDS = (*HOURLY_PRICE_FIELDS, ("energy_price_per_kwh", "Energy price per kWh"), INPUT_PRICE_FIELD)
# per-request targets (the SLO finder's labels): with one, every point gets its goodput and the cost per good token
TARGET_FIELDS = (
    ("ttft_ms", "TTFT per request ≤ (ms)"),
    ("tpot_ms", "TPOT per request ≤ (ms)"),
)
BUYER_FIELDS = PRICE_FIELDS + TARGET_FIELDS
_MAX_PRICE = 1e9


@dataclass
class BuyerInputs:
    """What a buyer typed: prices, optional per-request targets, the values as typed (for the form and links) and
    the errors, each naming its field by the label the form shows."""

    prices: Prices
    target: SloTarget | None
    values: dict[str, str] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)

    @property
    def cache_key(self) -> str:
        """The inputs that change the figures, in a fixed order (a page fragment is cached per price)."""
        return "&".join(f"{name}={self.values[name]}" for name, _ in BUYER_FIELDS if name in self.values)


def _read(query, fields) -> tuple[dict[str, str], dict[str, float], list[str]]:
    values, numbers, errors = {}, {}, []
    for name, label in fields:
        raw = (query.get(name) or "").strip()
        if not raw:
            continue
        values[name] = raw[:32]
        try:
            number = float(raw)
        except ValueError:
            number = math.nan
        if not math.isfinite(number) or number < 0 or number > _MAX_PRICE:
            errors.append(f"{label}: enter a number from 0 to 1,000,000,000.")
            continue
        numbers[name] = number
    return values, numbers, errors


def prices_from_query(query) -> tuple[Prices, dict[str, str], list[str]]:
    """(Prices, the values as typed (for the form and links), errors naming each field by its label). One hourly
    price at a time: two of them would price the same hour twice."""
    values, numbers, errors = _read(query, PRICE_FIELDS)
    hourly = [label for name, label in HOURLY_PRICE_FIELDS if name in values]
    if len(hourly) > 1:
        errors.append(
            f"{hourly[1]}: give one hourly price (per accelerator-hour, per node-hour or per system-hour), "
            f"not {hourly[0].lower()} as well."
        )
    if INPUT_PRICE_FIELD[0] in values and not hourly:
        errors.append(
            f"{INPUT_PRICE_FIELD[1]}: give an hourly price too (per accelerator-hour, per node-hour or per "
            "system-hour); the input tokens are priced on top of it."
        )
    prices = Prices(
        per_accelerator_hour=numbers.get("price_per_accelerator_hour"),
        per_node_hour=numbers.get("price_per_node_hour"),
        per_system_hour=numbers.get("price_per_system_hour"),
        per_kwh=numbers.get("energy_price_per_kwh"),
        per_million_input_tokens=numbers.get(INPUT_PRICE_FIELD[0]),
    )
    return prices, values, errors


def buyer_inputs_from_query(query) -> BuyerInputs:
    """Prices and optional per-request targets (TTFT and TPOT in ms, each > 0) from a query string."""
    prices, values, errors = prices_from_query(query)
    target_values, numbers, target_errors = _read(query, TARGET_FIELDS)
    for name, label in TARGET_FIELDS:
        if numbers.get(name) == 0:
            target_errors.append(f"{label}: enter a number of milliseconds above 0.")
            numbers.pop(name)
    target = None
    if numbers and not target_errors:
        target = SloTarget(ttft_ms=numbers.get("ttft_ms"), tpot_ms=numbers.get("tpot_ms"))
    return BuyerInputs(
        prices=prices, target=target, values={**values, **target_values}, errors=errors + target_errors
    )


def points_goodput(public_id: str, points: list[dict], target: SloTarget | None) -> dict[int, dict]:
    """Per concurrency, the attainment and goodput of each point of a published result at the buyer's targets,
    from the point's stored per-sample arrays (checker.recompute.goodput.evaluate, as the SLO finder counts them); a point
    without arrays (no raw log, not backfilled, altered) is absent."""
    if target is None:
        return {}
    stored = published_point_samples([public_id]).get(public_id) or {}
    out = {}
    for point in points:
        where = stored.get(point.get("point"))
        series = load_samples(*where) if where else None
        if series is not None and series.tracked:
            out[point.get("concurrency")] = evaluate(series, target)
    return out


def _figure(value) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return float(value)


def _per_million(hourly: float | None, tokens_per_s: float | None) -> float | None:
    return hourly / (tokens_per_s * 3600) * 1e6 if hourly is not None and tokens_per_s else None


def input_per_output(counted: dict) -> float | None:
    """Input tokens per output token of a point: its recomputed input token total / output token total."""
    inputs, outputs = _figure(counted.get("input_tokens")), _figure(counted.get("output_tokens"))
    return inputs / outputs if inputs is not None and outputs else None


def point_rows(
    points: list[dict],
    *,
    accelerators: int | None,
    description,
    measured: dict,
    prices: Prices,
    goodput: dict[int, dict] | None = None,
    tokens: dict[str, dict] | None = None,
) -> list[dict]:
    """Per point: system tokens/s per accelerator, per node, per provisioned kW, per measured kW, and with a price
    the cost per hour and per million output tokens (None where a count, the power or the rate is unknown); with
    `goodput` (points_goodput) the point's token goodput, attainment and cost per million good tokens. With a price
    per million input tokens, `tokens` (per point key, its recomputed input and output token totals) gives each
    point's input tokens per output token r, and the cost per million output tokens adds price x r (None where the
    point's token counts are unknown: never guessed)."""
    tokens = tokens or {}
    nodes = node_count(description)
    goodput = goodput or {}
    rows = []
    for point in points:
        tps = _figure(point.get("system_tps"))
        per_kw = _figure(point.get("system_tps_per_kw"))
        power_kw = tps / per_kw if tps is not None and per_kw else None
        trace = measured.get(point.get("concurrency")) or {}
        avg_w = _figure(trace.get("avg_power_w"))
        slo = goodput.get(point.get("concurrency"))
        good_tps = _figure(slo.get("goodput_tps")) if slo else None
        row = {
            "concurrency": point.get("concurrency"),
            "point": point.get("point"),
            "system_tps": tps,
            "per_accelerator": tps / accelerators if tps is not None and accelerators else None,
            "per_node": tps / nodes if tps is not None and nodes else None,
            "per_kw_provisioned": per_kw,
            "per_kw_measured": _figure(trace.get("measured_tps_per_kw")),
            "goodput_tps": good_tps,
            "attainment": _figure(slo.get("attainment")) if slo else None,
            "good_requests": slo.get("good_requests") if slo else None,
            "tracked_requests": slo.get("tracked_requests") if slo else None,
            "goodput_per_accelerator": good_tps / accelerators
            if good_tps is not None and accelerators
            else None,
            "cost_per_hour": None,
            "cost_per_million_tokens": None,
            "cost_per_million_good_tokens": None,
        }
        if row["attainment"] is not None:
            row["attainment_pct"] = 100 * row["attainment"]
        if prices.given:
            # energy is priced at the measured power where a trace exists, else at the provisioned power
            energy_kw = avg_w / 1000 if avg_w else power_kw
            hourly = prices.system_hour(accelerators=accelerators, nodes=nodes, power_kw=energy_kw)
            row["cost_per_hour"] = hourly
            row["cost_per_million_tokens"] = _per_million(hourly, tps)
            row["cost_per_million_good_tokens"] = _per_million(hourly, good_tps)
            if prices.per_million_input_tokens is not None:
                # the input tokens the point's requests sent, per hour at its throughput, priced on top
                ratio = input_per_output(tokens.get(point.get("point")) or {})
                input_hourly = (
                    prices.per_million_input_tokens * ratio * tps * 3600 / 1e6
                    if ratio is not None and tps is not None
                    else None
                )
                row["input_tokens_per_output_token"] = ratio
                row["input_cost_per_million_tokens"] = _per_million(input_hourly, tps)
                both = hourly + input_hourly if hourly is not None and input_hourly is not None else None
                row["cost_per_million_tokens"] = _per_million(both, tps)
                row["cost_per_million_good_tokens"] = _per_million(both, good_tps)
        rows.append(row)
    return rows
