"""What a buyer asks of the SLO finder per request (targets, an attainment goal, optional caps and prices), the
conventions every answer states, and a row's figures per accelerator, per node, per kW and per million tokens."""

from __future__ import annotations

from dataclasses import dataclass

CONVENTIONS = (
    "Per request, from the raw logs: a tracked request is good when it completed without an error, its time to "
    "first token is within the TTFT target and its time per output token within the TPOT target (a request "
    "with nothing after its first chunk is judged on TTFT alone). Attainment is good requests ÷ tracked "
    "requests: failed and unfinished requests count as violations, as AIPerf and GuideLLM count them "
    "(inference-perf leaves failed requests out, vLLM's goodput ignores them, so their figures read higher "
    "on runs with failures). Goodput is good requests (or their output tokens) per second of the measured "
    "window. A result qualifies at its best measured point meeting the goal; nothing is interpolated."
)


@dataclass(frozen=True)
class GoodputTargets:
    """What a buyer asks per request, and of how many requests."""

    ttft_ms: float | None
    tpot_ms: float | None
    attainment: float  # the share of requests that must be good, 0 < attainment <= 1
    power_kw_max: float | None = None
    accelerators_max: int | None = None


@dataclass(frozen=True)
class Prices:
    """What a buyer pays (the portal prices nothing itself): one hourly price, and optionally energy."""

    per_accelerator_hour: float | None = None
    per_node_hour: float | None = None
    per_system_hour: float | None = None
    per_kwh: float | None = None
    # Optional, on top of an hourly price: what the buyer pays per million input (prompt) tokens, priced per output
    # token at each point's own input/output token ratio (leaderboard.board.normalised.point_rows).
    per_million_input_tokens: float | None = None

    @property
    def given(self) -> bool:
        return any(
            v is not None for v in (self.per_accelerator_hour, self.per_node_hour, self.per_system_hour)
        )

    def system_hour(
        self, *, accelerators: int | None, nodes: int | None, power_kw: float | None
    ) -> float | None:
        """The system's cost per hour at a point, or None when a count (or the power, for energy) is unknown."""
        if self.per_system_hour is not None:
            hourly = self.per_system_hour
        elif self.per_node_hour is not None:
            hourly = self.per_node_hour * nodes if nodes else None
        elif self.per_accelerator_hour is not None:
            hourly = self.per_accelerator_hour * accelerators if accelerators else None
        else:
            return None
        if hourly is None:
            return None
        if self.per_kwh is not None:
            if power_kw is None:
                return None
            hourly += power_kw * self.per_kwh
        return hourly


def divided(name: str, value, *, accelerators, nodes, power) -> dict:
    """A figure per accelerator, per node and per provisioned kW (None where it or the divisor is unknown)."""
    return {
        f"{name}_per_accelerator": value / accelerators if value is not None and accelerators else None,
        f"{name}_per_node": value / nodes if value is not None and nodes else None,
        f"{name}_per_kw": value / power if value is not None and power else None,
    }


def costs(row: dict, *, accelerators: int | None, nodes: int | None, prices: Prices) -> dict:
    """A row's cost per hour at the buyer's prices, and per million tokens and per million good tokens."""
    hourly = prices.system_hour(accelerators=accelerators, nodes=nodes, power_kw=row.get("power_kw"))
    out: dict = {"cost_per_hour": hourly}
    for name, key in (
        ("system_tps", "cost_per_million_tokens"),
        ("goodput_tps", "cost_per_million_good_tokens"),
    ):
        rate = row.get(name)
        out[key] = hourly / (rate * 3600) * 1e6 if hourly is not None and rate else None
    return out


def normalised(row: dict, *, accelerators: int | None, nodes: int | None, prices: Prices | None) -> dict:
    """Per accelerator, per node and per provisioned kW figures of a row, and its cost per million tokens."""
    out: dict = {}
    for name in ("goodput_tps", "system_tps"):
        out.update(
            divided(name, row.get(name), accelerators=accelerators, nodes=nodes, power=row.get("power_kw"))
        )
    out["nodes"] = nodes
    if prices is not None and prices.given:
        out.update(costs(row, accelerators=accelerators, nodes=nodes, prices=prices))
    return out
