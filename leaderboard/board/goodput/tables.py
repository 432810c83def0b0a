"""The GoodputIndex of a benchmark's public snapshot as a table file (one .npy per array, memory-mapped and shared
by every web process on the host; written by the publish worker after a publication commits), opened once per
snapshot in each process, and the answer cache of its rankings."""

from __future__ import annotations

import logging
from collections import OrderedDict

import numpy as np

from checker.recompute.goodput import SampleSeries
from leaderboard.board.goodput.index import GoodputIndex, write_table
from leaderboard.board.goodput.samples import load_samples, published_point_samples
from leaderboard.board.goodput.targets import GoodputTargets
from portal.errors import UnavailableError

logger = logging.getLogger(__name__)

# model_id -> (the snapshot list it was built from, its index), in this process
_indexes: dict[str, tuple[list[dict], GoodputIndex]] = {}


def table_directory(model_id: str, results: list[dict], stored: dict[str, dict[str, tuple[str, str]]]):
    """Where the goodput table of this snapshot is kept (setting PORTAL_GOODPUT_TABLE_DIR): named by the model and
    a SHA-256 of what it holds (every ranked result's points and the SHA-256 of their arrays), so a publication,
    retraction or backfill names a new table and a stale one is never read."""
    import hashlib
    import json
    import re

    from django.conf import settings

    digest = hashlib.sha256(model_id.encode())
    for result in results:
        if result.get("retracted"):
            continue
        keys = stored.get(result["public_id"]) or {}
        points = [
            (p.get("point"), (keys.get(p.get("point")) or ("", ""))[1]) for p in result.get("points") or []
        ]
        digest.update(json.dumps([result["public_id"], points]).encode())
    safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", model_id)[:80]
    return settings.PORTAL_GOODPUT_TABLE_DIR / f"{safe}-{digest.hexdigest()[:32]}"


def _stored_series(stored: dict[str, dict[str, tuple[str, str]]]):
    """series_of(result, point) for write_table: the point's stored arrays, read when asked."""

    def series_of(result: dict, point: dict) -> SampleSeries | None:
        where = (stored.get(result["public_id"]) or {}).get(point.get("point"))
        return load_samples(*where) if where else None

    return series_of


def _build_index(results: list[dict], stored: dict[str, dict[str, tuple[str, str]]]) -> GoodputIndex:
    """The index in memory (every point's arrays at once): only when its table cannot be written."""
    series_of = _stored_series(stored)
    samples: dict[tuple[int, int], SampleSeries] = {}
    for result_index, result in enumerate(r for r in results if not r.get("retracted")):
        for point_index, point in enumerate(result.get("points") or []):
            series = series_of(result, point)
            if series is not None:
                samples[(result_index, point_index)] = series
    return GoodputIndex(results, samples)


def goodput_table(results: list[dict], model_id: str, directory=None) -> tuple[GoodputIndex, bool]:
    """The GoodputIndex of a snapshot from its table file (memory-mapped, shared by every process on the host),
    building and writing the file when it is not there yet. `directory`: the table's name when already known
    (goodput_index), so that nothing is read from the database when the file is there. Returns (index, whether
    it was built here)."""
    if directory is not None:
        index = GoodputIndex.load(directory, results)
        if index is not None:
            return index, False
    stored = published_point_samples([r["public_id"] for r in results if not r.get("retracted")])
    directory = table_directory(model_id, results, stored)
    index = GoodputIndex.load(directory, results)
    if index is not None:
        return index, False
    try:
        write_table(directory, results, _stored_series(stored))
    except OSError as error:
        return _index_in_memory(results, stored, directory, error), True
    index = GoodputIndex.load(directory, results)
    if index is None:
        return _index_in_memory(results, stored, directory, None), True
    return index, True


# A board this small is answered from memory when its table cannot be written (a read-only or full disk): about 2,000
# samples a point, a few arrays of 8 bytes each, ~150 MB. A larger one would take the web process down with it (the
# 10,000-result board's arrays are 12.6 GB, docs/performance.md): it is refused with a 503 until the table is there.
IN_MEMORY_POINTS_MAX = 2_000


def _index_in_memory(results: list[dict], stored, directory, error: OSError | None) -> GoodputIndex:
    points = sum(len(keys) for keys in stored.values())
    if points > IN_MEMORY_POINTS_MAX:
        logger.error(
            "goodput table %s cannot be written or read (%s); %d points are too many to rank in memory",
            directory,
            error,
            points,
        )
        raise UnavailableError(
            "The per-request ranking of this benchmark cannot be prepared right now (its goodput table could not be "
            "written). Ask again in a minute, or use the percentile mode, which is always there.",
            code="goodput-unavailable",
        )
    logger.warning("goodput table %s cannot be written (%s); answering from memory", directory, error)
    return _build_index(results, stored)


def _snapshot_fingerprint(results: list[dict]) -> str:
    """What a table's name must agree with, cheap to hash: the snapshot's ranked results and their point counts."""
    import hashlib

    listed = "|".join(
        f"{r['public_id']}:{len(r.get('points') or [])}" for r in results if not r.get("retracted")
    )
    return hashlib.sha256(listed.encode()).hexdigest()[:32]


def goodput_index(publications, model_id: str) -> GoodputIndex:
    """The GoodputIndex of a benchmark's public snapshot, opened once per snapshot object in each process (a
    publication, retraction or backfill starts a new public generation, hence a new snapshot): from the table
    file the publish worker wrote (goodput_table_build_task), or built here when it is not there yet. The
    table's name is worked out (from the points' array keys in the database) by one process per generation and
    shared through the cache, so the others only map the file."""
    from django.conf import settings

    from leaderboard.board.cache import public_cached, settle_large
    from leaderboard.board.exports import snapshot_results_cached

    results = snapshot_results_cached(publications, model_id)
    entry = _indexes.get(model_id)
    if entry is None or entry[0] is not results:

        def name() -> str:
            stored = published_point_samples([r["public_id"] for r in results if not r.get("retracted")])
            return table_directory(model_id, results, stored).name

        table = public_cached(f"goodput:table:{model_id}:{_snapshot_fingerprint(results)}", name, memo=False)
        entry = (results, goodput_table(results, model_id, settings.PORTAL_GOODPUT_TABLE_DIR / table)[0])
        _indexes[model_id] = entry
        settle_large(results)
    return entry[1]


RANKINGS_KEPT = 256  # answers kept in each process (a ranking of 1,000 rows is ~28 KB: int32 counts)
_rankings: OrderedDict[tuple, dict[str, np.ndarray]] = OrderedDict()


def goodput_ranking(index: GoodputIndex, model_id: str, targets: GoodputTargets) -> dict[str, np.ndarray]:
    """index.ranking(targets) through the answer cache: kept per public generation, table and targets (the
    validated numbers, so 300 and 300.0 are one answer, and the page, the API, its CSV and every page of it share
    it), in this process and in the shared cache. A publication, retraction or backfill starts a new generation:
    an answer of the old one is never read again."""
    import json

    from leaderboard.board.cache import public_cached, public_generation

    generation, _ = public_generation()
    if (
        generation is None or index.table is None
    ):  # the cache is unreachable, or a table only this process has
        return index.ranking(targets)
    asked = json.dumps(
        [targets.ttft_ms, targets.tpot_ms, targets.attainment, targets.power_kw_max, targets.accelerators_max]
    )
    name = f"goodput:answer:{model_id}:{index.table}:{asked}"
    key = (generation, name)
    ranking = _rankings.get(key)
    if ranking is not None:
        _rankings.move_to_end(key)
        return ranking
    ranking = public_cached(name, lambda: index.ranking(targets), generation=generation, memo=False)
    _rankings[key] = ranking
    while len(_rankings) > RANKINGS_KEPT:
        _rankings.popitem(last=False)
    return ranking


def goodput_tables_build(publications, keep: int = 2) -> list[str]:
    """Write the goodput table of every benchmark with a published result (the publish worker, after a
    publication commits), and remove all but the newest `keep` tables of each model. Returns the tables built."""
    import shutil

    from django.conf import settings

    from leaderboard.board.exports import snapshot_results

    built = []
    models = sorted(set(publications.values_list("submission__benchmark__model_id", flat=True)))
    for model_id in models:
        results = snapshot_results(publications, model_id)
        stored = published_point_samples([r["public_id"] for r in results if not r.get("retracted")])
        directory = table_directory(model_id, results, stored)
        if not (directory / "complete").exists():
            write_table(directory, results, _stored_series(stored))
            built.append(directory.name)
        prefix = directory.name.rsplit("-", 1)[0] + "-"
        root = settings.PORTAL_GOODPUT_TABLE_DIR
        tables = sorted(
            (
                p
                for p in root.iterdir()
                if p.is_dir() and p.name.startswith(prefix) and len(p.name) == len(directory.name)
            ),
            key=lambda p: p.stat().st_mtime,
            reverse=True,
        )
        for old in [t for t in tables if t != directory][max(0, keep - 1) :]:
            shutil.rmtree(old, ignore_errors=True)
    return built
