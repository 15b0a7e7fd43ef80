"""Figures as a projector and a 1024 px screen show them: every text in a presentation-mode
figure 18 px or more, marks and values in cells that fit their cells, token labels that never
overlap at any length (353 and 2,000 tokens), the Causal mask two by two, and a step of it that
builds in well under a second."""

from __future__ import annotations

import math
import re

import numpy as np
import plotly.graph_objects as go
import pytest

import viz
from tests.helpers import plotly_array
from viz import labels, present
from viz.lessons.families import family_panels
from viz.lessons.multihead import concat_bars, heads_flow
from viz.sizes import PROJECTOR_CHART_PX, SCREEN_CHART_PX, SMALL_PROJECTOR_CHART_PX

FLOOR = 18
SEED = "The cat sat on the mat".split()
ZH = ["<bos>", "猫[1/3]", "猫[2/3]", "猫[3/3]", "坐", "在", "垫[1/2]", "垫[2/2]", "子", "上", "。",
      "吗"]
PARAGRAPH = ("The cat sat on the mat because it was tired after chasing the mouse around the old "
             "house all morning, and the dog watched from the sofa while the rain fell. ").split()


def _tokens(n: int) -> list[str]:
    return [PARAGRAPH[i % len(PARAGRAPH)] for i in range(n)]


def _causal(n: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    allowed = np.tril(np.ones((n, n), bool))
    scores = rng.normal(scale=40, size=(n, n))  # own-translator's run to ±160
    weights = np.where(allowed, rng.random((n, n)), 0)
    return scores, allowed, weights / weights.sum(1, keepdims=True)


def _mask(n: int, tokens=None, steps: int = 4, projector: bool = True) -> go.Figure:
    scores, allowed, weights = _causal(n)
    tokens = tokens or _tokens(n)
    return viz.mask_view(scores, allowed, weights, tokens, tokens, steps=steps,
                         projector=projector, title="decoder.self · layer 0 · head 0")


def _heatmap(n: int) -> go.Figure:
    _, allowed, weights = _causal(n)
    return viz.attention_heatmap(weights, _tokens(n), _tokens(n), allowed=allowed,
                                 title="decoder.self · layer 0 · head 0")


def _grid(n: int, heads: int = 6) -> go.Figure:
    _, allowed, weights = _causal(n)
    return viz.heads_grid(np.stack([weights] * heads), _tokens(n), _tokens(n), allowed=allowed,
                          cols=3)


def _figures(seed_trace) -> dict[str, go.Figure]:
    """The views the issue names, and every builder of viz (as tests/unit/test_theme.py)."""
    q, k = seed_trace.axes("decoder.self")
    allowed = seed_trace.mask("decoder.self")
    w = seed_trace.weights("decoder.self", 1, 2)
    shapes = {"input": (1, 6, 512), "q": (1, 8, 6, 64), "pattern": (1, 8, 6, 6),
              "z": (1, 8, 6, 64), "concat": (1, 6, 512), "output": (1, 6, 512)}
    rng = np.random.default_rng(1)
    figures = {
        "mask 12, projector": _mask(12, ZH),
        "mask 12, screen layout": _mask(12, ZH, projector=False),
        "mask 3 steps": _mask(7, SEED + ["."], steps=3),
        "mask 96": _mask(96),
        "heatmap 12": _heatmap(12),
        "heatmap 353": _heatmap(353),
        "grid 353": _grid(353),
        "grid seed": viz.heads_grid(seed_trace.layer_weights("decoder.self", 1), q, k,
                                    allowed=allowed),
        "model view": viz.model_view(seed_trace, "decoder.self", title="t"),
        "families": family_panels(allowed, w, q, k, mask_title="mask: 21 of 36 allowed",
                                  head_title="layer 0 · head 0"),
        "multihead flow": heads_flow(shapes, 8, font_size=18),
        "multihead concat": concat_bars(rng.normal(size=64), rng.normal(size=64), 8,
                                        title="Token 2: sat"),
        "bars": viz.distribution_bars(w[3], list(k), highlight=1, title="t"),
        "head view": viz.head_view(seed_trace.layer_weights("decoder.self", 1), q, k,
                                   heads=[0, 1, 2], title="t"),
    }
    return figures


_SIZES = re.compile(r"font-size:\s*(\d+(?:\.\d+)?)px")


def text_fonts(fig: go.Figure) -> list[tuple[str, float]]:
    """Every text a figure draws (hovers aside) and the size it is drawn at: the figure's
    font where an element sets none; sizes set in markup; a sub- or superscript at 70 % of its
    text unless it sets its own size."""
    spec = fig.to_plotly_json()
    layout = spec["layout"]
    base = layout.get("font", {}).get("size", 12)
    found = []

    def text(where: str, value, size) -> None:
        if value is None or value == "":
            return
        value = str(value)
        size = size or base
        found.append((where, size))
        found.extend((f"{where} (markup)", float(s)) for s in _SIZES.findall(value))
        for tag in re.findall(r"<(sub|sup)>(.*?)</\1>", value, flags=re.DOTALL):
            inner = _SIZES.findall(tag[1])
            found.append((f"{where} <{tag[0]}>", float(inner[0]) if inner else 0.7 * size))

    title = layout.get("title", {})
    text("title", title.get("text"), title.get("font", {}).get("size"))
    legend = layout.get("legend", {}).get("font", {}).get("size") or base
    for trace in spec["data"]:
        if trace.get("showlegend") is not False and trace.get("name") and (
                trace.get("type") not in ("heatmap",) and layout.get("showlegend") is not False):
            found.append(("legend", legend))
        if trace.get("texttemplate") or trace.get("text") is not None:
            size = trace.get("textfont", {}).get("size") or base
            for one in np.atleast_1d(size):
                found.append((f"{trace.get('name')} text", float(one)))
        bar = trace.get("colorbar")
        if bar is not None and trace.get("showscale") is not False and trace.get(
                "coloraxis") is None:
            found.append(("colorbar ticks", bar.get("tickfont", {}).get("size") or base))
    for annotation in layout.get("annotations", ()):
        text(f"annotation {annotation.get('text')!r}", annotation.get("text"),
             annotation.get("font", {}).get("size"))
    for key, axis in layout.items():
        if re.fullmatch(r"[xy]axis\d*", key):
            if axis.get("visible") is not False and axis.get("showticklabels") is not False:
                tick = axis.get("tickfont", {}).get("size") or base
                found.append((f"{key} ticks", tick))
                for label in axis.get("ticktext") or ():
                    text(f"{key} label", label, tick)
            axis_title = axis.get("title", {})
            text(f"{key} title", axis_title.get("text"), axis_title.get("font", {}).get("size"))
        if re.fullmatch(r"coloraxis\d*", key) and axis.get("showscale") is not False:
            bar = axis.get("colorbar", {})
            found.append((f"{key} ticks", bar.get("tickfont", {}).get("size") or base))
            bar_title = bar.get("title", {})
            text(f"{key} title", bar_title.get("text"), bar_title.get("font", {}).get("size"))
    return found


@pytest.fixture(scope="module")
def figures(seed_trace):
    return _figures(seed_trace)


def test_every_text_in_a_presentation_mode_figure_is_18_px_or_more(figures):
    for name, figure in figures.items():
        shown = present.for_projector(figure)
        fonts = text_fonts(shown)
        assert fonts, name
        small = [(where, size) for where, size in fonts if size < FLOOR]
        assert not small, (name, small[:6])
        assert not shown.layout.title.text or shown.layout.title.font.size >= 26, name


def test_the_projectors_figures_keep_the_screens_fonts_out_of_the_screen(figures):
    # the screen is fitted, not enlarged: small text there stays as it was
    shown = present.for_screen(figures["heatmap 12"])
    assert shown.layout.xaxis.tickfont.size is None or shown.layout.xaxis.tickfont.size < FLOOR


def _cell(fig: go.Figure, xref: str, width_px: float) -> tuple[float, float]:
    trace = next(t for t in fig.data if t.type == "heatmap" and (t.xaxis or "x") == xref)
    return present._cells(fig, trace, width_px)


def test_marks_in_cells_are_18_px_or_more_and_fit_their_cells():
    for n, tokens in ((6, SEED), (12, ZH)):
        shown = present.for_projector(_mask(n, tokens))
        marks = [a for a in shown.layout.annotations if a.name == "mark"]
        assert {a.text for a in marks} == {"✓", "✗", "−∞"}
        for mark in marks:
            cell_w, cell_h = _cell(shown, mark.xref, SMALL_PROJECTOR_CHART_PX)
            assert mark.font.size >= FLOOR
            assert present.text_width(mark.text, mark.font.size) <= cell_w
            assert mark.font.size * labels.LINE <= cell_h
    # cells too small for an 18 px mark leave their marks out rather than shrink them
    scores, allowed, weights = _causal(12)
    crowded = present.for_projector(viz.mask_view(scores, allowed, weights, ZH, ZH, columns=4),
                                    width_px=600, narrow_px=600)
    assert not [a for a in crowded.layout.annotations if a.name == "mark"]


def test_the_causal_mask_on_a_projector_is_two_by_two_with_values_in_cells_up_to_12_tokens():
    for n in (6, 9, 12):
        figure = _mask(n, ZH[:n])
        assert figure.layout.meta["projector"]  # laid out for a projector: its height kept
        shown = present.for_projector(figure)
        assert shown.layout.height == figure.layout.height
        layout = shown.layout
        x, x2, x3 = layout.xaxis.domain, layout.xaxis2.domain, layout.xaxis3.domain
        y, y3 = layout.yaxis.domain, layout.yaxis3.domain
        assert x2[0] > x[1] and x3 == x and y3[1] < y[0]  # ① ② above ③ ④
        values = {t.name: t.texttemplate for t in shown.data}
        for panel in ("scores", "masked scores", "weights"):
            assert values[panel], (n, panel)  # written at 1920×1080
        for trace in shown.data:
            if trace.texttemplate:
                assert trace.textfont.size >= FLOOR
                digits = trace.texttemplate.removeprefix("%{z:").removesuffix("}")
                z = plotly_array(trace.z).astype(float)
                widest = max(present.text_width(format(v, digits), FLOOR)
                             for v in z[np.isfinite(z)])
                cell = _cell(shown, trace.xaxis or "x", PROJECTOR_CHART_PX)[0]
                assert widest <= cell, (n, trace.name)
        assert shown.layout.height <= 1000  # the whole 2×2 on a 1080 px screen
    # 1280 px: the cells of 12 tokens cannot hold two-digit scores; the page hides them there
    wide_only = present.for_projector(_mask(12, ZH)).layout.meta["wide_only"]
    assert {panel["subplot"] for panel in wide_only} >= {"xy", "x3y3"}
    assert all(1280 < panel["below_px"] <= 1920 for panel in wide_only)


def test_the_page_hides_values_a_narrower_projector_cannot_hold():
    from app_pages.frame.charts import _wide_only_css

    css = _wide_only_css(present.for_projector(_mask(12, ZH)), "mask_view")
    assert ".st-key-mask_view .subplot.xy .heatmap-label" in css
    assert re.search(r"@media \(max-width: \d{4}px\)", css)
    assert _wide_only_css(present.for_projector(_mask(5, SEED[:5])), "mask_view") == ""


def test_a_step_of_the_mask_builds_its_marks_at_once(monkeypatch):
    # adding 288 annotations one by one (each copying all before it) took 4-10 s a step
    def refuse(*args, **kwargs):
        raise AssertionError("annotations added one by one")

    monkeypatch.setattr(go.Figure, "add_annotation", refuse)
    for steps in (2, 3, 4):
        for projector in (False, True):
            figure = _mask(12, ZH, steps=steps, projector=projector)
            assert len([a for a in figure.layout.annotations if a.name == "mark"]) >= 144


# --- token labels never overlap ----------------------------------------------------------------

def _overlaps(fig: go.Figure, width_px: float) -> list[str]:
    """Pairs of tick labels whose boxes overlap (more than 1 px), each label's box from
    viz.present.text_width at its font, its angle and the figure's geometry; neighbouring
    panels of a row included. Rows (y) are one line apart at least."""
    layout = fig.layout
    left, _, _, _, plot_w, plot_h = labels.plot_box(fig, width_px)
    bad = []
    rows: dict[float, list] = {}
    for name in labels.token_axes(fig):
        axis = layout[name]
        font = axis.tickfont.size or layout.font.size or labels.FONT_PX
        values = list(axis.tickvals)
        span = labels._span(fig, name, values) or (max(values) + 1)
        lo, hi = axis.domain or (0, 1)
        if name.startswith("y"):
            pitch = (hi - lo) * plot_h / span * min(
                (b - a for a, b in zip(values, values[1:])), default=span)
            if pitch + 1 < font * labels.LINE:
                bad.append(f"{name}: rows {pitch:.1f} px apart at {font} px")
            continue
        start = labels._start(fig, name, values)
        xs = [lo * plot_w + (v - start) * (hi - lo) * plot_w / span for v in values]
        spans = [(a, b) for a, b in labels.label_spans(xs, axis.ticktext, font, axis.tickangle)]
        rows.setdefault(round(labels._anchor_domain(layout, name)[0], 3), []).extend(
            (a, b, f"{name}:{t}") for (a, b), t in zip(spans, axis.ticktext))
        if spans and spans[0][0] < -left - 1:
            bad.append(f"{name}: {axis.ticktext[0]} runs off the figure's left edge")
    for labelled in rows.values():
        labelled.sort()
        right, last = -math.inf, ""
        for left_end, right_end, label in labelled:
            if right - left_end > 1:
                bad.append(f"{last} / {label}")
            if right_end > right:
                right, last = right_end, label
    return bad


def _pitch_px(fig: go.Figure, axis) -> float:
    _, _, _, _, plot_w, _ = labels.plot_box(fig, SCREEN_CHART_PX)
    name = next(n for n in labels.token_axes(fig) if fig.layout[n] is axis)
    span = labels._span(fig, name, list(axis.tickvals))
    lo, hi = axis.domain or (0, 1)
    return (axis.tickvals[1] - axis.tickvals[0]) * (hi - lo) * plot_w / span


@pytest.mark.parametrize("n", [12, 353, 2000])
def test_token_labels_never_overlap_at_any_length(n):
    for name, figure in {"heatmap": _heatmap(n), "grid": _grid(n)}.items():
        screen = present.for_screen(figure)
        assert not _overlaps(screen, SCREEN_CHART_PX), (name, n, _overlaps(screen, 560)[:4])
        projector = present.for_projector(figure)
        assert not _overlaps(projector, SMALL_PROJECTOR_CHART_PX), (name, n)
        assert not _overlaps(projector, PROJECTOR_CHART_PX), (name, n)
        x = screen.layout[next(a for a in labels.token_axes(screen) if a.startswith("x"))]
        assert len(x.ticktext) >= (12 if n == 12 and name == "heatmap" else 1)
        if x.tickangle == labels.UPRIGHT and len(x.tickvals) > 1:  # standing, never in a band
            pitch = _pitch_px(screen, x)
            font = x.tickfont.size or labels.FONT_PX
            assert pitch >= labels.AIRED * font * labels.LINE - 1 or n == 12, pitch
        # the labels kept are the original ones (cut short), at their positions
        assert all(len(labels._plain(t)) <= labels.MAX_LABEL_CHARS for t in x.ticktext)
    for columns in (2, 4):
        mask = viz.mask_view(*_causal(96), _tokens(96), _tokens(96), columns=columns)
        assert not _overlaps(present.for_screen(mask), SCREEN_CHART_PX), columns


def test_a_chart_fitted_again_starts_from_every_label():
    figure = _heatmap(120)
    screen = present.for_screen(figure)
    wide = present.for_projector(figure, width_px=PROJECTOR_CHART_PX,
                                 narrow_px=PROJECTOR_CHART_PX)
    assert len(wide.layout.xaxis.ticktext) > len(screen.layout.xaxis.ticktext)
    half = present.for_screen(figure, width_px=SCREEN_CHART_PX / 2)
    assert len(half.layout.xaxis.ticktext) < len(screen.layout.xaxis.ticktext)
    kept = figure.layout.meta["ticks"]["xaxis"]
    assert len(kept[1]) == 120  # every label, for the next fit


def test_subtitles_stay_below_the_toolbar_and_wrap_to_the_width():
    figure = _heatmap(353)
    for shown, width, sub_px in ((present.for_screen(figure), SCREEN_CHART_PX, 12),
                                 (present.for_projector(figure), SMALL_PROJECTOR_CHART_PX, 18)):
        title = shown.layout.title
        assert title.yref == "container" and title.yanchor == "top"
        assert (1 - title.y) * shown.layout.height >= present.MODEBAR_PX - 1  # under the toolbar
        lines = re.split(r"<br>", title.text)
        assert len(lines) >= 2
        for line in lines:
            size = float((re.findall(r"font-size:(\d+)px", line) or [title.font.size])[0])
            assert present.text_width(line, size) <= width, line
        assert f"font-size:{sub_px}px" in title.text
        needed = present.MODEBAR_PX + sum(
            float((re.findall(r"font-size:(\d+)px", line) or [title.font.size])[0])
            * labels.LINE for line in lines)
        assert shown.layout.margin.t >= needed


def test_short_axes_keep_every_label_standing_if_need_be():
    fits = labels.fit_axis(range(7), ["&lt;bos&gt;", "The", "cat", "sat", "on", "the", "mat"],
                           120, 11, horizontal=True)
    assert fits["tickangle"] == labels.UPRIGHT and len(fits["ticktext"]) == 7
    flat = labels.fit_axis(range(3), ["猫", "坐", "在"], 300, 18, horizontal=True)
    assert flat["tickangle"] == 0
    long = labels.fit_axis(range(300), [f"w{i}" for i in range(300)], 300, 12, horizontal=True)
    assert long["tickangle"] != labels.UPRIGHT and len(long["ticktext"]) < 300
    rows = labels.fit_axis(range(300), [f"w{i}" for i in range(300)], 600, 12,
                           horizontal=False)
    assert 600 / len(rows["ticktext"]) >= 12 * labels.LINE - 1
    assert math.isclose(len(rows["ticktext"]), 600 / (12 * labels.LINE), rel_tol=0.2)
