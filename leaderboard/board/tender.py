"""The tender desk's figures (DESIGN.md, "Tender desk"): a point's power (measured where a trace exists, else
provisioned, and which), its energy per output token and cost per million output tokens, and the sizing of a site
for U concurrent users per phase from each system's sizing point. Plain functions over published snapshots (no
Django), like leaderboard.board.slo and leaderboard.board.procurement, whose point selection they reuse; nothing is
interpolated and a system that no measured point lets meet the SLO is "cannot meet", never a guess."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from leaderboard.board.slo import SloTargets, number, point_meets, point_power_kw

HOURS_PER_YEAR = 8760
DEFAULT_PUE = 1.3
PHASES = (("delivery", "users"), ("expansion", "users_expansion"))
MEASURED, PROVISIONED = "measured", "provisioned"


@dataclass(frozen=True)
class TenderPrices:
    """What the buyer pays (the portal prices nothing): per accelerator-hour and, optionally, per kWh of facility
    energy (IT power x PUE)."""

    per_accelerator_hour: float | None = None
    per_kwh: float | None = None

    @property
    def given(self) -> bool:
        return self.per_accelerator_hour is not None or self.per_kwh is not None


def point_power(point: dict, measured: dict | None) -> tuple[float | None, str | None]:
    """(kW, "measured" | "provisioned") of a point: the measured average power over its window where a power trace
    was submitted (docs/power.md), else the provisioned power of its configuration; (None, None) without either."""
    avg_w = number((measured or {}).get("avg_power_w"))
    if avg_w is not None and avg_w > 0:
        return avg_w / 1000.0, MEASURED
    provisioned = point_power_kw(point)
    return (provisioned, PROVISIONED) if provisioned is not None else (None, None)


def joules_per_token(power_kw: float | None, system_tps: float | None) -> float | None:
    """P x 1000 / system_tps: the joules one output token takes at the point's power (IT power, no PUE)."""
    return power_kw * 1000.0 / system_tps if power_kw is not None and system_tps else None


def tokens_per_s_per_kw(power_kw: float | None, system_tps: float | None) -> float | None:
    return system_tps / power_kw if power_kw and system_tps is not None else None


def cost_per_million_tokens(
    *,
    accelerators: int | None,
    system_tps: float | None,
    power_kw: float | None,
    prices: TenderPrices,
    pue: float = DEFAULT_PUE,
) -> float | None:
    """accelerators x price per accelerator-hour / (system_tps x 3600) x 10^6, plus with an energy price
    P x PUE x price per kWh / (system_tps x 3600) x 10^6. None without a price, or when a figure a given price
    needs (accelerator count, power, throughput) is unknown."""
    if not prices.given or not system_tps:
        return None
    tokens_per_hour = system_tps * 3600.0
    total = 0.0
    if prices.per_accelerator_hour is not None:
        if not accelerators:
            return None
        total += accelerators * prices.per_accelerator_hour / tokens_per_hour * 1e6
    if prices.per_kwh is not None:
        if power_kw is None:
            return None
        total += power_kw * pue * prices.per_kwh / tokens_per_hour * 1e6
    return total


def point_energy_and_cost(
    point: dict, *, accelerators: int | None, measured: dict | None, prices: TenderPrices, pue: float
) -> dict:
    """A point's power (and its source), joules per output token, tokens/s per kW and cost per million output
    tokens, as every buyer view shows them."""
    power_kw, source = point_power(point, measured)
    tps = number(point.get("system_tps"))
    return {
        "power_source": source,
        "system_power_kw": power_kw,
        "joules_per_token": joules_per_token(power_kw, tps),
        "tokens_per_s_per_kw": tokens_per_s_per_kw(power_kw, tps),
        "cost_per_million_tokens": cost_per_million_tokens(
            accelerators=accelerators, system_tps=tps, power_kw=power_kw, prices=prices, pue=pue
        ),
    }


# --- Sizing ---------------------------------------------------------------------------------------------------


def percentile_meets(targets: SloTargets) -> Callable[[dict, dict], bool]:
    """Percentile mode: ttft_p90_ms <= X and interactivity >= Y (leaderboard.board.slo.point_meets)."""
    return lambda result, point: point_meets(point, targets, accelerators=result.get("accelerators"))


def sizing_point(points: list[dict], meets: Callable[[dict], bool]) -> dict | None:
    """The point meeting the SLO with the largest concurrency (ties: higher system_tps); None when none does."""
    meeting = [p for p in points if number(p.get("concurrency")) and number(p.get("system_tps")) and meets(p)]
    if not meeting:
        return None
    return max(meeting, key=lambda p: (number(p["concurrency"]), number(p["system_tps"])))


class SizingIndex:
    """sizing_point in the percentile mode for many SLOs over the same results: every point in columns, sorted once
    by result and then by sizing_point's preference (concurrency highest, system_tps highest, first listed); an SLO
    is then one vectorised mask and the first point of each result still in it. At 10,000 results of 10-20
    points this is milliseconds where asking point_meets of every point was ~0.3 s (docs/performance.md). It
    chooses exactly what sizing_point(points, percentile_meets(targets)) chooses (tests/leaderboard/test_tender.py
    compares them on generated results, with missing, zero and non-finite figures)."""

    def __init__(self, results: list[dict]) -> None:
        import numpy as np

        self.results = results
        owners: list[int] = []
        self.points: list[dict] = []
        for index, result in enumerate(results):
            for point in result.get("points") or []:
                owners.append(index)
                self.points.append(point)

        def column(name: str):
            values = (number(point.get(name)) for point in self.points)
            return np.fromiter((math.nan if v is None else v for v in values), np.float64, len(self.points))

        owner = np.asarray(owners, dtype=np.int64)
        concurrency, tps = column("concurrency"), column("system_tps")
        # sizing_point's own condition: a concurrency and a throughput that are figures and not 0
        usable = np.isfinite(concurrency) & (concurrency != 0) & np.isfinite(tps) & (tps != 0)
        order = np.lexsort((np.arange(len(owners)), -np.nan_to_num(tps), -np.nan_to_num(concurrency), owner))
        self._np = np
        self._order, self._owner, self._usable = order, owner[order], usable[order]
        self._concurrency = concurrency[order]
        self._ttft = column("ttft_p90_ms")[order]
        self._columns = {"ttft_p90_ms": self._ttft}
        self._column = column
        self.name_rank, self.accelerators = _static_keys(results)

    def chosen(self, targets: SloTargets) -> list[dict | None]:
        """Each result's sizing point under `targets` (TTFT P90 and interactivity; no caps), None where none meets."""
        return self.choose(targets)[0]

    def choose(self, targets: SloTargets):
        """(chosen, their concurrencies): chosen as `chosen` says, and each result's sizing point's concurrency
        as a float64 array, NaN where none meets (SizedSite's arithmetic without reading a point again)."""
        np = self._np
        metric = targets.interactivity_metric
        if metric not in self._columns:
            self._columns[metric] = self._column(metric)[self._order]
        meets = (
            self._usable
            & (self._ttft <= targets.ttft_p90_ms_max)
            & (self._columns[metric] >= targets.interactivity_min)
        )
        kept = np.flatnonzero(meets)
        owners = self._owner[kept]
        first = np.ones(len(kept), dtype=bool)
        first[1:] = owners[1:] != owners[:-1]
        out: list[dict | None] = [None] * len(self.results)
        best_owner, best = owners[first], kept[first]
        points, order = self.points, self._order
        for owner, at in zip(best_owner.tolist(), order[best].tolist(), strict=True):
            out[owner] = points[at]
        concurrency = np.full(len(self.results), math.nan)
        concurrency[best_owner] = self._concurrency[best]
        return out, concurrency


def _static_keys(results: list[dict]):
    """What orders the sizing's rows and does not depend on the ask: each result's rank by (system name, result id,
    position), and its accelerator count (0 where it has none, which size_system cannot multiply)."""
    import numpy as np

    by_name = sorted(
        range(len(results)), key=lambda i: (results[i].get("system") or "", results[i]["public_id"], i)
    )
    name_rank = np.empty(len(results), dtype=np.int64)
    name_rank[by_name] = np.arange(len(results))
    accelerators = np.fromiter(
        ((number(r.get("accelerators")) or 0.0) if r.get("accelerators") else 0.0 for r in results),
        dtype=np.float64,
        count=len(results),
    )
    return name_rank, accelerators


def replicas_for(users: int, headroom: float, concurrency: float) -> int:
    """ceil(U x (1 + h) / C), taken to 1e-9 first so that 5000 x 1.1 users are 5500, not 5500.000000000001."""
    return math.ceil(round(users * (1 + headroom) / concurrency, 9))


@dataclass(frozen=True)
class SiteAsk:
    """What the buyer sizes: users per phase (the expansion optional), PUE, headroom and prices."""

    users: int
    users_expansion: int | None = None
    pue: float = DEFAULT_PUE
    headroom: float = 0.0
    prices: TenderPrices = TenderPrices()

    def phases(self) -> list[tuple[str, int]]:
        out = [("delivery", self.users)]
        if self.users_expansion is not None:
            out.append(("expansion", self.users_expansion))
        return out


def size_system(
    result: dict, point: dict | None, *, phase: str, users: int, ask: SiteAsk, measured: dict | None
) -> dict:
    """One row of the sizing: a system sized at its sizing point for one phase, or `meets: false` and no sizing."""
    row = {
        "phase": phase,
        "users": users,
        "system": result.get("system"),
        "organisation": result.get("organisation"),
        "result": result["public_id"],
        "result_url": f"/results/{result['public_id']}/",
        "accelerator_label": result.get("accelerator_label") or "",
        "meets": point is not None,
    }
    if point is None:
        return row
    concurrency = number(point["concurrency"])
    tps = number(point["system_tps"])
    accelerators, nodes = result.get("accelerators"), result.get("nodes")
    replicas = replicas_for(users, ask.headroom, concurrency)
    figures = point_energy_and_cost(
        point, accelerators=accelerators, measured=measured, prices=ask.prices, pue=ask.pue
    )
    power_kw = figures["system_power_kw"]
    it_kw = replicas * power_kw if power_kw is not None else None
    facility_kw = it_kw * ask.pue if it_kw is not None else None
    energy_mwh = facility_kw * HOURS_PER_YEAR / 1000.0 if facility_kw is not None else None
    site_accelerators = replicas * accelerators if accelerators else None
    cost_per_year = None
    if ask.prices.given:
        parts = []
        if ask.prices.per_accelerator_hour is not None:
            parts.append(
                site_accelerators * ask.prices.per_accelerator_hour * HOURS_PER_YEAR
                if site_accelerators
                else None
            )
        if ask.prices.per_kwh is not None:
            parts.append(energy_mwh * 1000.0 * ask.prices.per_kwh if energy_mwh is not None else None)
        cost_per_year = None if None in parts else sum(parts)
    url = f"/results/{result['public_id']}/#point-r{point.get('concurrency')}"
    row.update(
        {
            "point": point.get("point"),
            "point_concurrency": point.get("concurrency"),
            "point_url": url,
            "evidence": url,
            "system_tps": tps,
            "ttft_p90_ms": number(point.get("ttft_p90_ms")),
            "replicas": replicas,
            "accelerators": site_accelerators,
            "nodes": replicas * nodes if nodes else None,
            "power_source": figures["power_source"],
            "system_power_kw": power_kw,
            "it_power_kw": it_kw,
            "facility_power_kw": facility_kw,
            "facility_power_mw": facility_kw / 1000.0 if facility_kw is not None else None,
            "energy_mwh_per_year": energy_mwh,
            "cost_per_year": cost_per_year,
            "cost_per_million_tokens": figures["cost_per_million_tokens"],
            "joules_per_token": figures["joules_per_token"],
            "tokens_per_s_per_kw": figures["tokens_per_s_per_kw"],
        }
    )
    return row


class SizedSite:
    """SizedSite's rows as a read-only sequence: the order is worked out for every system (its sizing point, and
    for each phase its replicas and accelerators: arithmetic), each row's figures (power, energy, cost) when it is
    read. At the board's size (10,000 results, two phases) the page shows 25 rows a phase and the API a page;
    building all 20,000 rows for each ask was most of its second (docs/performance.md, issue 37).

    Per phase, one row per system (the results given: published, fully recomputed, newest per system), sized at its
    sizing point; systems that meet first, by fewest accelerators, then by system name; those that cannot meet the
    SLO after them with `meets: false`. `meets(result, point)` is the SLO in the buyer's mode, or `chosen` each
    result's sizing point already (SizingIndex.choose, with its `concurrency`)."""

    def __init__(
        self,
        results: list[dict],
        ask: SiteAsk,
        *,
        meets: Callable[[dict, dict], bool] | None = None,
        chosen: list[dict | None] | None = None,
        concurrency=None,
        index: SizingIndex | None = None,
        measured: dict[str, dict[int, dict]],
        decorate: Callable[[dict], None] | None = None,
    ) -> None:
        self.results, self.ask, self.measured, self.decorate = results, ask, measured, decorate
        if chosen is None:
            if meets is None:
                raise TypeError("SizedSite needs meets or chosen")
            chosen = [
                sizing_point(result.get("points") or [], lambda p, r=result: meets(r, p))
                for result in results
            ]
        self.chosen = chosen
        import numpy as np

        if index is not None and index.results is results:
            name_rank, accelerators = index.name_rank, index.accelerators
        else:
            name_rank, accelerators = _static_keys(results)
        if concurrency is None:
            concurrency = np.fromiter(
                (math.nan if point is None else number(point.get("concurrency")) for point in chosen),
                dtype=np.float64,
                count=len(chosen),
            )
        sized = ~np.isnan(concurrency)
        meeting = int(sized.sum())
        # per phase, in the rows' order: (phase, users, the result indexes)
        self.blocks: list[tuple[str, int, list[int]]] = []
        self.meeting: dict[str, int] = {}
        for phase, users in ask.phases():
            # replicas_for, element by element as Python computes it: the same IEEE product and quotient; its
            # rounding to 1e-9 only matters within a hair of an integer (not on one), where Python does it
            with np.errstate(divide="ignore", invalid="ignore"):
                quotient = users * (1 + ask.headroom) / concurrency
            replicas = np.ceil(quotient)
            whole = np.rint(quotient)
            for at in np.flatnonzero(
                sized & (quotient != whole) & (np.abs(quotient - whole) < 1e-6)
            ).tolist():
                replicas[at] = replicas_for(users, ask.headroom, float(concurrency[at]))
            site_accelerators = np.where(sized & (accelerators > 0), replicas * accelerators, math.inf)
            # meets first, then fewest accelerators, then system name and result id (np.lexsort: last key first)
            order = np.lexsort((name_rank, site_accelerators, ~sized))
            self.blocks.append((phase, users, order.tolist()))
            self.meeting[phase] = meeting
        self._length = sum(len(block[2]) for block in self.blocks)

    def __len__(self) -> int:
        return self._length

    def __bool__(self) -> bool:
        return self._length > 0

    def phase(self, name: str) -> tuple[int, int]:
        """Where a phase's rows are: (first position, how many)."""
        start = 0
        for phase, _, order in self.blocks:
            if phase == name:
                return start, len(order)
            start += len(order)
        return 0, 0

    def _row(self, at: int) -> dict:
        for block in self.blocks:
            if at < len(block[2]):
                phase, users, index = block[0], block[1], block[2][at]
                break
            at -= len(block[2])
        else:
            raise IndexError(at)
        result, point = self.results[index], self.chosen[index]
        row = size_system(
            result,
            point,
            phase=phase,
            users=users,
            ask=self.ask,
            measured=(self.measured.get(result["public_id"]) or {}).get((point or {}).get("concurrency")),
        )
        if self.decorate is not None:
            self.decorate(row)
        return row

    def __getitem__(self, item):
        if isinstance(item, slice):
            return [self._row(at) for at in range(*item.indices(self._length))]
        return self._row(range(self._length)[item])

    def __iter__(self):
        return (self._row(at) for at in range(self._length))
