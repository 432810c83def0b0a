"""The charts' series styles (leaderboard/board/charts.py): every colour readable against the plot area (WCAG 1.4.11,
3:1), told apart from the others under normal vision and the three dichromacies, and no two series alike in colour,
marker and dash at once.

Dichromacy is simulated with Machado, Oliveira and Fernandes (2009) matrices at severity 1.0 in linear RGB; colours
are compared as CIE76 distances in CIELAB (D65). Written here from the published formulas, independently of the
palette's choice."""

from __future__ import annotations

import itertools
import math

import pytest

from leaderboard.board.charts import SERIES_COLOURS, series_style

PLOT_AREA = "#f3f5f8"  # static/css/leaderboard.css .step-chart .plot-area
WHITE = "#ffffff"  # the tooltip's and the legend's background
SIMULATIONS = {
    "normal vision": ((1, 0, 0), (0, 1, 0), (0, 0, 1)),
    "protanopia": (
        (0.152286, 1.052583, -0.204868),
        (0.114503, 0.786281, 0.099216),
        (-0.003882, -0.048116, 1.051998),
    ),
    "deuteranopia": (
        (0.367322, 0.860646, -0.227968),
        (0.280085, 0.672501, 0.047413),
        (-0.011820, 0.042940, 0.968881),
    ),
    "tritanopia": (
        (1.255528, -0.076749, -0.178779),
        (-0.078411, 0.930809, 0.147602),
        (0.004733, 0.691367, 0.303900),
    ),
}
# Two colours closer than this (CIE76) are hard to tell apart as thin lines; the old palette had 2.6 between
# series 1 and 4 under protanopia.
MIN_DISTANCE = 15


def _linear(hex_colour: str) -> tuple[float, ...]:
    channels = [int(hex_colour[i : i + 2], 16) / 255 for i in (1, 3, 5)]
    return tuple(c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in channels)


def _contrast(a: str, b: str) -> float:
    def luminance(colour):
        r, g, b = _linear(colour)
        return 0.2126 * r + 0.7152 * g + 0.0722 * b

    high, low = sorted((luminance(a), luminance(b)), reverse=True)
    return (high + 0.05) / (low + 0.05)


def _lab(rgb: tuple[float, ...]) -> tuple[float, float, float]:
    r, g, b = rgb
    x = (0.4124 * r + 0.3576 * g + 0.1805 * b) / 0.95047
    y = 0.2126 * r + 0.7152 * g + 0.0722 * b
    z = (0.0193 * r + 0.1192 * g + 0.9505 * b) / 1.08883

    def f(t):
        return t ** (1 / 3) if t > 0.008856 else 7.787 * t + 16 / 116

    return 116 * f(y) - 16, 500 * (f(x) - f(y)), 200 * (f(y) - f(z))


def _seen(colour: str, matrix) -> tuple[float, float, float]:
    rgb = _linear(colour)
    return _lab(tuple(min(1.0, max(0.0, sum(row[j] * rgb[j] for j in range(3)))) for row in matrix))


@pytest.mark.parametrize("colour", SERIES_COLOURS)
def test_every_series_colour_has_3_to_1_against_the_plot_and_the_legend(colour):
    assert _contrast(colour, PLOT_AREA) >= 3, (colour, round(_contrast(colour, PLOT_AREA), 2))
    assert _contrast(colour, WHITE) >= 3


@pytest.mark.parametrize("vision", SIMULATIONS)
def test_series_colours_stay_apart_under_colour_vision_deficiency(vision):
    matrix = SIMULATIONS[vision]
    closest = min(
        (math.dist(_seen(a, matrix), _seen(b, matrix)), a, b)
        for a, b in itertools.combinations(SERIES_COLOURS, 2)
    )
    assert closest[0] >= MIN_DISTANCE, (
        f"{closest[1]} and {closest[2]} look alike under {vision}: {closest[0]:.1f}"
    )


def test_the_old_palette_fails_the_check_that_the_new_one_passes():
    """The check can fail: the colours issue 39 measured (series 1 and 4 under protanopia, series 10's contrast)."""
    protan = SIMULATIONS["protanopia"]
    assert math.dist(_seen("#0b5cad", protan), _seen("#8e44ad", protan)) < MIN_DISTANCE
    assert _contrast("#7cb342", PLOT_AREA) < 3


def test_no_two_series_share_colour_marker_and_dash_and_each_differs_by_more_than_colour():
    styles = [series_style(index) for index in range(len(SERIES_COLOURS))]
    assert len({s["marker"] for s in styles}) == len(styles), "each series has its own marker shape"
    assert len({tuple(s.values()) for s in styles}) == len(styles)
