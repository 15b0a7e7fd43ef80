"""Every figure reads in Streamlit's light and dark themes.

Streamlit draws a figure on its page background (white, or #0e1117 in the dark theme) and gives
text the theme's colour unless the figure sets one. So: backgrounds must be transparent, no text
on the background may carry its own colour, and every colour drawn on the background must stand
out from both backgrounds (WCAG contrast: 3:1 for text, 2:1 for marks).
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import viz
from model.analysis.positions import rope_offset_scores, rope_thetas, sinusoidal
from model.analysis.statistics import head_stats
from viz import style
from viz.rollout import DrawnRollout

THEMES = {"light": "#ffffff", "dark": "#0e1117"}
TEXT_PATHS = ("font", "title.font", "legend.font", "hoverlabel.font")


def rgba(color: str) -> tuple[list[float], float]:
    """``[r, g, b]`` (0..255) and alpha of a CSS hex, rgb() or rgba() colour."""
    color = color.strip()
    if color.startswith("#"):
        digits = color[1:] if len(color) == 7 else "".join(c * 2 for c in color[1:4])
        return [int(digits[i:i + 2], 16) for i in (0, 2, 4)], 1.0
    if color == "white":
        return [255, 255, 255], 1.0
    numbers = [float(x) for x in re.findall(r"[\d.]+", color)]
    return numbers[:3], numbers[3] if len(numbers) > 3 else 1.0


def on(color: str, background: str) -> list[float]:
    """``color`` as seen over ``background`` (alpha blended)."""
    (front, alpha), (back, _) = rgba(color), rgba(background)
    return [alpha * f + (1 - alpha) * b for f, b in zip(front, back)]


def luminance(rgb) -> float:
    def channel(v):
        v /= 255
        return v / 12.92 if v <= 0.03928 else ((v + 0.055) / 1.055) ** 2.4

    r, g, b = (channel(v) for v in rgb)
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast(color: str, background: str) -> float:
    a, b = luminance(on(color, background)), luminance(rgba(background)[0])
    return (max(a, b) + 0.05) / (min(a, b) + 0.05)


@pytest.fixture(scope="module")
def figures(seed_trace):
    q, k = seed_trace.axes("decoder.self")
    w = seed_trace.weights("decoder.self", 1, 2)
    allowed = seed_trace.mask("decoder.self")
    table = sinusoidal(32, 64)
    return {
        "attention_heatmap": viz.attention_heatmap(w, q, k, allowed=allowed, title="t",
                                                   special=seed_trace.special("decoder.self")),
        "heads_grid": viz.heads_grid(seed_trace.layer_weights("decoder.self", 1), q, k,
                                     allowed=allowed),
        "head_view": viz.head_view(seed_trace.layer_weights("decoder.self", 1), q, k,
                                   heads=[0, 1, 2], title="t"),
        "mask_view": viz.mask_view(seed_trace.scores("decoder.self", 1, 2), allowed, w, q, k),
        "model_view": viz.model_view(seed_trace, "decoder.self"),
        "stats_heatmap": viz.stats_heatmap(head_stats(seed_trace, "decoder.self")["entropy"],
                                           "entropy", "spread"),
        "difference_heatmap": viz.difference_heatmap(w - w.T, q, k, title="t", subtitle="s"),
        "rollout_heatmap": viz.rollout_heatmap(DrawnRollout(w, 1, 0.5), q, k, allowed=allowed,
                                               title="t"),
        "distribution_bars": viz.distribution_bars(w[3], list(k), highlight=1, title="t"),
        "complexity_curves": viz.complexity_curves(512, 7),
        "sinusoidal_heatmap": viz.sinusoidal_heatmap(table),
        "clock_hands": viz.clock_hands(table, [0, 2, 16]),
        "similarity_matrix": viz.similarity_matrix(table @ table.T, "t"),
        "rope_circles": viz.rope_circles(rope_thetas(64)[[0, 4, 12]], 16),
        "rope_offsets": viz.rope_offsets(rope_offset_scores(12)),
        "rope_periods": viz.rope_periods(2 * np.pi / rope_thetas(64), "t"),
    }


def test_every_builder_is_covered(figures):
    builders = {name for name in viz.__all__}
    assert builders <= set(figures), builders - set(figures)


def _get(obj, path: str):
    for part in path.split("."):
        obj = obj.get(part) if isinstance(obj, dict) else None
    return obj


def _axes(layout: dict):
    return [v for k, v in layout.items() if re.fullmatch(r"[xy]axis\d*|coloraxis\d*", k)]


@pytest.mark.parametrize("theme", sorted(THEMES))
def test_figures_let_the_theme_show_through_and_stand_out_on_it(figures, theme):
    background = THEMES[theme]
    for name, fig in figures.items():
        spec = fig.to_plotly_json()
        layout = spec["layout"]
        for key in ("paper_bgcolor", "plot_bgcolor"):
            assert rgba(layout[key])[1] == 0, f"{name}: {key} {layout[key]} is not transparent"
        # text on the background takes the theme's colour
        for path in TEXT_PATHS:
            assert _get(layout, f"{path}.color") is None, f"{name}: layout.{path} has a colour"
        for axis in _axes(layout):
            for path in ("tickfont.color", "title.font.color", "colorbar.tickfont.color",
                         "colorbar.title.font.color"):
                assert _get(axis, path) is None, f"{name}: an axis sets {path}"
            for text in axis.get("ticktext") or ():  # coloured labels (special tokens)
                for color in re.findall(r"color:\s*([^;'\"]+)", str(text)):
                    assert contrast(color, background) >= 3, f"{name}: label colour {color}"
        for trace in spec["data"]:
            assert _get(trace, "textfont.color") is None, f"{name}: {trace.get('name')} text"
            marks = []
            if trace["type"] == "scatter":
                marks += [_get(trace, "line.color"), _get(trace, "marker.color")]
            if trace["type"] == "bar":
                marker = _get(trace, "marker.color")
                marks += marker if isinstance(marker, list) else [marker]
            for color in marks:
                if not isinstance(color, str) or rgba(color)[1] == 0:
                    continue  # per-point arrays, or invisible click targets
                if rgba(color)[1] < 1 and trace.get("meta", {}).get("weight") is not None:
                    continue  # head-view lines: opacity is the attention weight
                assert contrast(color, background) >= 2, f"{name}: mark colour {color}"
        for shape in layout.get("shapes", ()):
            color = _get(shape, "line.color")
            if color:
                assert contrast(color, background) >= 2, f"{name}: line {color}"


@pytest.mark.parametrize("theme", sorted(THEMES))
def test_head_colours_read_on_both_backgrounds(theme):
    for color in style.HEAD_COLORS:
        assert contrast(color, THEMES[theme]) >= 2, color


def test_text_written_inside_cells_reads_on_its_cell(figures):
    annotations = figures["mask_view"].to_plotly_json()["layout"]["annotations"]
    minus_inf = [a for a in annotations if a["text"] == "−∞"]
    marks = [a for a in annotations if a["text"] in ("✓", "✗")]
    assert minus_inf and marks
    for a in minus_inf:
        assert contrast(a["font"]["color"], style.NEG_INF_COLOR) >= 4.5
    for a in marks:
        cell = style.ALLOWED_COLOR if a["text"] == "✓" else style.MASK_COLOR
        assert contrast(a["font"]["color"], cell) >= 4.5
