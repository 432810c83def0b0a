"""The buyer's normalised and cost figures of a result's points (issue 20, item 3): tokens/s per accelerator, per
node, per provisioned kW and per measured kW (where a power trace was submitted), and, from a price the buyer
enters (nothing is priced by the portal), the system's cost per hour and per million output tokens. The prices
come from the page's query string, so a priced page can be shared."""

from __future__ import annotations

import math

from leaderboard.goodput import Prices
from leaderboard.slo import node_count

PRICE_FIELDS = (
    ("price_per_accelerator_hour", "Price per accelerator-hour"),
    ("price_per_node_hour", "Price per node-hour"),
    ("price_per_system_hour", "Price per system-hour"),
    ("energy_price_per_kwh", "Energy price per kWh"),
)


def prices_from_query(query) -> tuple[Prices, dict[str, str], list[str]]:
    """(Prices, the values as typed (for the form and links), errors naming each field by its label)."""
    values, errors, numbers = {}, [], {}
    for name, label in PRICE_FIELDS:
        raw = (query.get(name) or "").strip()
        if not raw:
            continue
        values[name] = raw[:32]
        try:
            number = float(raw)
        except ValueError:
            number = math.nan
        if not math.isfinite(number) or number < 0 or number > 1e9:
            errors.append(f"{label}: enter a number from 0 to 1,000,000,000.")
            continue
        numbers[name] = number
    prices = Prices(
        per_accelerator_hour=numbers.get("price_per_accelerator_hour"),
        per_node_hour=numbers.get("price_per_node_hour"),
        per_system_hour=numbers.get("price_per_system_hour"),
        per_kwh=numbers.get("energy_price_per_kwh"),
    )
    return prices, values, errors


def _figure(value) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return float(value)


def point_rows(
    points: list[dict], *, accelerators: int | None, description, measured: dict, prices: Prices
) -> list[dict]:
    """Per point: system tokens/s per accelerator, per node, per provisioned kW, per measured kW, and with a price
    the cost per hour and per million output tokens (None where a count, the power or the rate is unknown)."""
    nodes = node_count(description)
    rows = []
    for point in points:
        tps = _figure(point.get("system_tps"))
        per_kw = _figure(point.get("system_tps_per_kw"))
        power_kw = tps / per_kw if tps is not None and per_kw else None
        trace = measured.get(point.get("concurrency")) or {}
        avg_w = _figure(trace.get("avg_power_w"))
        row = {
            "concurrency": point.get("concurrency"),
            "point": point.get("point"),
            "system_tps": tps,
            "per_accelerator": tps / accelerators if tps is not None and accelerators else None,
            "per_node": tps / nodes if tps is not None and nodes else None,
            "per_kw_provisioned": per_kw,
            "per_kw_measured": _figure(trace.get("measured_tps_per_kw")),
            "cost_per_hour": None,
            "cost_per_million_tokens": None,
        }
        if prices.given:
            # energy is priced at the measured power where a trace exists, else at the provisioned power
            energy_kw = avg_w / 1000 if avg_w else power_kw
            hourly = prices.system_hour(accelerators=accelerators, nodes=nodes, power_kw=energy_kw)
            row["cost_per_hour"] = hourly
            if hourly is not None and tps:
                row["cost_per_million_tokens"] = hourly / (tps * 3600) * 1e6
        rows.append(row)
    return rows
