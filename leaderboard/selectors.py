"""Reads for the public leaderboard: only published results, whoever asks."""

from __future__ import annotations

from catalog.selectors import benchmark_list


def leaderboard_benchmarks():
    """Benchmarks that have (or will have) a public leaderboard."""
    return benchmark_list()
