"""Presentation mode: figures restyled for a projector, the colour-blind-safe palettes, and the
views shown one step at a time."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
import pytest

import viz
from tests.helpers import ROOT, figures
from viz import present
from viz.sizes import PROJECTOR_CHART_PX, SMALL_PROJECTOR_CHART_PX


def _heatmap(tokens):
    n = len(tokens)
    weights = np.tril(np.ones((n, n)))
    weights /= weights.sum(1, keepdims=True)
    return viz.attention_heatmap(weights, tokens, tokens, allowed=weights > 0, title="head 0")


def test_a_projector_gets_large_fonts_and_values_in_small_matrices():
    fig = present.for_projector(_heatmap(["猫", "坐", "在", "垫子", "上"]))
    layout = fig.layout
    assert layout.title.font.size >= 24
    assert layout.xaxis.tickfont.size >= 18 and layout.yaxis.tickfont.size >= 18
    assert layout.xaxis.tickangle == 0  # short Chinese labels stand upright, side by side
    weights = fig.data[0]
    assert weights.texttemplate == "%{z:.2f}"
    assert all(trace.texttemplate is None for trace in fig.data[1:])  # not the grey mask


def test_long_axes_are_slanted_and_thinned_so_that_large_labels_never_overlap():
    from viz import labels

    tokens = [f"token{i}" for i in range(120)]
    fig = present.for_projector(_heatmap(tokens))
    x = fig.layout.xaxis
    assert x.tickangle in (labels.SLANT, labels.UPRIGHT, 0)
    assert x.tickfont.size == present.TICK_PX
    # fitted to the narrower projector: neighbouring labels' boxes stay apart there
    _, _, _, _, plot_w, _ = labels.plot_box(fig, SMALL_PROJECTOR_CHART_PX)
    pitch = (x.tickvals[1] - x.tickvals[0]) * plot_w / 120
    spans = labels.label_spans([0, pitch], x.ticktext[:2], present.TICK_PX, x.tickangle)
    assert spans[0][1] <= spans[1][0] + 1
    assert fig.data[0].texttemplate is None  # 120 tokens: no values in the cells
    # the labels kept are the original ones, at their positions
    original = _heatmap(tokens).layout.meta["ticks"]["xaxis"]
    assert set(zip(x.tickvals, x.ticktext)) <= set(zip(*original))


def test_a_chart_in_half_the_width_keeps_its_labels_apart():
    tokens = ["The", "cat", "sat", "on", "the", "mat", "because", "it", "was", "tired"] * 3
    full = present.for_projector(_heatmap(tokens))
    half = present.for_projector(_heatmap(tokens), width_px=PROJECTOR_CHART_PX / 2)
    assert len(half.layout.xaxis.ticktext) < len(full.layout.xaxis.ticktext)


def test_the_projector_copy_leaves_the_original_alone():
    original = _heatmap(["a", "b", "c"])
    before = original.to_json()
    present.for_projector(original)
    assert original.to_json() == before


@pytest.mark.parametrize("palette", ["cividis", "viridis"])
def test_a_colour_blind_safe_palette_replaces_the_blue_of_the_weights(palette):
    fig = present.with_palette(_heatmap(["a", "b", "c"]), palette)
    scale = go.Heatmap(colorscale=present.PALETTES[palette]).colorscale
    assert fig.layout.coloraxis.colorscale == scale
    diverging = viz.mask_view(np.zeros((2, 2)), np.tril(np.ones((2, 2), bool)),
                              np.array([[1, 0], [0.5, 0.5]]), ["a", "b"], ["a", "b"])
    swapped = present.with_palette(diverging, palette)
    # scores keep their red-blue diverging scale; only the weights change
    assert swapped.layout.coloraxis.colorscale == diverging.layout.coloraxis.colorscale
    assert swapped.layout.coloraxis2.colorscale == scale
    assert present.with_palette(diverging, "default") is diverging


@pytest.mark.parametrize("steps", [1, 2, 3, 4])
def test_the_mask_view_reveals_its_panels_one_step_at_a_time(steps):
    allowed = np.tril(np.ones((3, 3), bool))
    fig = viz.mask_view(np.ones((3, 3)), allowed, allowed / allowed.sum(1, keepdims=True),
                        list("abc"), list("abc"), steps=steps)
    drawn = {int((t.xaxis or "x").removeprefix("x") or 1) for t in fig.data
             if t.visible is not False}
    assert drawn == set(range(1, steps + 1))
    assert len(fig.layout.annotations) >= 4  # every panel keeps its title
    with pytest.raises(ValueError):
        viz.mask_view(np.ones((3, 3)), allowed, allowed, list("abc"), list("abc"), steps=5)


def test_presentation_mode_steps_through_the_causal_mask_with_next_and_previous():
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=300)
    for key, value in {"device": "cpu", "model_choice": "own-translator",
                       "present": True}.items():
        at.session_state[key] = value
    at.switch_page("app_pages/views/mask.py").run()
    assert not at.exception
    assert at.slider(key="mask_step").value == 1  # a class starts at ①
    (fig,) = figures(at)
    assert fig["layout"]["title"]["font"]["size"] >= 24
    at.button(key="mask_step_next").click().run()
    at.button(key="mask_step_next").click().run()
    assert at.slider(key="mask_step").value == 3
    at.button(key="mask_step_back").click().run()
    assert at.slider(key="mask_step").value == 2
    (fig,) = figures(at)
    shown = {trace.get("xaxis", "x") for trace in fig["data"] if trace.get("visible") is not False}
    assert shown == {"x", "x2"}
    # two by two, laid out for the projector: ① ② above ③ ④, ✓ and ✗ at 18 px or more
    layout = fig["layout"]
    assert layout["meta"]["projector"]
    assert layout["xaxis3"]["domain"] == layout["xaxis"]["domain"]
    assert layout["yaxis3"]["domain"][1] < layout["yaxis"]["domain"][0]
    marks = [a for a in layout["annotations"] if a.get("name") == "mark"]
    assert marks and all(a["font"]["size"] >= present.FLOOR_PX for a in marks)
    # its files are rendered at the width a 1920×1080 projector shows it, opaque
    from app_pages.frame.charts import FIGURES

    files = at.session_state[FIGURES]
    page = next(make for name, make in files.items() if name.endswith(".html"))().decode()
    assert f'"width":{PROJECTOR_CHART_PX}' in page.replace(" ", "")
    assert '"paper_bgcolor":"#ffffff"' in page.replace(" ", "")


def test_translate_steps_forward_with_the_next_button():
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=300)
    at.session_state["device"] = "cpu"
    at.switch_page("app_pages/views/translate.py").run()
    step = at.slider(key="step").value
    at.button(key="step_next").click().run()
    assert at.slider(key="step").value == step + 1


def test_cells_too_narrow_for_a_number_stay_empty_and_marks_too_small_are_left_out():
    n = 12
    allowed = np.tril(np.ones((n, n), bool))
    fig = viz.mask_view(np.ones((n, n)) * 12.345, allowed, allowed / allowed.sum(1, keepdims=True),
                        [f"w{i}" for i in range(n)], [f"w{i}" for i in range(n)], columns=4)
    shown = present.for_projector(fig)
    # four panels in a row: 12 cells of about 28 px cannot hold "12" at 18 px
    assert all(trace.texttemplate is None for trace in shown.data)
    # nor ✓, ✗ and −∞ at 18 px on the narrower projector: they are left out, not shrunk
    marks = [a for a in shown.layout.annotations if a.name == "mark"]
    assert all(a.font.size >= present.FLOOR_PX for a in marks)
    titles = [a for a in shown.layout.annotations if a.xref == "paper"]
    assert titles and all(a.font.size >= 20 for a in titles)
    # the same matrices at full width hold their numbers
    wide = present.for_projector(_heatmap([f"w{i}" for i in range(n)]))
    assert wide.data[0].texttemplate == "%{z:.2f}"
    # and two by two, laid out for a projector, they do too
    grid = present.for_projector(viz.mask_view(
        np.ones((n, n)) * 12.345, allowed, allowed / allowed.sum(1, keepdims=True),
        [f"w{i}" for i in range(n)], [f"w{i}" for i in range(n)], projector=True))
    assert {t.name for t in grid.data if t.texttemplate} == {"scores", "masked scores",
                                                              "weights"}
