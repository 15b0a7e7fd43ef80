"""The smaller defects of issue 22 in the lessons, each kept fixed: 3.2's √d_model line is named
where no bar covers it, and 3.4 "Who looks at whom" outlines, of the heads as large as a row's
largest, the first, as its caption says (the ties computed here from the trace and from the
numbers the grid writes, without the lesson's code)."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

import viz.lessons.architecture as arch_fig
from model.lessons.see_it import CLAIMS, find_pair
from tests.helpers import app_test, figures, plotly_array, shown


@pytest.fixture(scope="module")
def translator():
    from model import load

    return load("own-translator", device="cpu")


# --- 3.2: the √d_model line -------------------------------------------------------------------

@pytest.mark.parametrize("d_model", [128, 512])
def test_the_root_d_model_line_is_named_in_the_legend_not_on_the_bars(d_model):
    sizes = np.array([[18.5, 3.4, 18.8, 10.5], [10.5, 68.9, 75.2, 8.3]])
    fig = arch_fig.residual_sizes(sizes, ["self-attention", "FFN"], d_model=d_model)
    root = math.sqrt(d_model)
    label = f"√d_model = {root:.1f}"
    # nothing written on the plot: the label sat on the first group's grey bar
    assert not [a for a in fig.layout.annotations if "d_model" in str(a.text)]
    (line,) = fig.layout.shapes
    assert line.y0 == line.y1 == pytest.approx(root) and line.line.dash == "dot"
    assert line.layer == "below"  # under the bars and the values written above them
    (entry,) = [t for t in fig.data if t.type == "scatter"]
    assert entry.name == label and entry.line.dash == "dot" and entry.showlegend is not False
    assert entry.line.color == line.line.color
    assert all(v is None for v in entry.y)  # a legend entry only: it draws nothing


def test_the_architecture_lessons_sizes_name_the_line_in_chinese_too():
    import i18n

    with i18n.use("zh"):
        at = app_test("lesson_architecture", lang="zh", model_choice="own-translator")
    assert not at.exception, at.exception
    sizes = next(f for f in figures(at) if any(t.get("type") == "bar" for t in f["data"]))
    names = [t.get("name") for t in sizes["data"] if t.get("type") == "scatter"]
    assert len(names) == 1 and re.fullmatch(r"√d_model = \d+\.\d", names[0]), names
    assert not [a for a in sizes["layout"].get("annotations", []) if "d_model" in a["text"]]


# --- 3.4 who looks at whom: ties ----------------------------------------------------------------

def _written(value: float, template: str) -> str:
    """What a Plotly texttemplate ``%{z:.Nf}`` writes for ``value``."""
    digits = int(re.fullmatch(r"%\{z:\.(\d)f\}", template).group(1))
    return f"{value:.{digits}f}"


def _weights(trace, claim) -> np.ndarray:
    """The pair's weight in every head, ``[layer, head]``, read from the whole stack."""
    if claim.kind == "encoder.self":
        tokens = [t.lower() for t in trace.source_tokens]
        query = [i for i, t in enumerate(tokens) if t == claim.query][claim.occurrence]
    else:  # decoder rows: row t reads target token t and writes target token t + 1
        query = list(trace.target_tokens).index(claim.query) - 1
    key = [t.lower() for t in trace.source_tokens].index(claim.key)
    return trace.stack(claim.kind)[:, :, query, key].astype(np.float64)


@pytest.mark.parametrize("claim", CLAIMS, ids=[c.id for c in CLAIMS])
def test_see_it_chooses_the_first_of_the_heads_that_write_the_largest_number(translator,
                                                                             claim):
    weights = _weights(translator.trace(claim.sentence), claim)
    largest = f"{weights.max():.3f}"
    tied = [(layer, head) for layer in range(weights.shape[0])
            for head in range(weights.shape[1]) if f"{weights[layer, head]:.3f}" == largest]
    found = find_pair(translator.trace(claim.sentence), claim)
    assert list(found.ties) == tied
    assert (found.layer, found.head) == tied[0]


def test_the_translators_last_layer_ties_on_dianzi_mat(translator):
    """The case of the issue: 垫子 → mat is 1.000 in all four heads of the last layer (the exact
    largest, by 2e-7, in the second), and 0.996 in layer 1's last head, which is not a tie."""
    claim = next(c for c in CLAIMS if c.id == "dianzi_mat")
    weights = _weights(translator.trace(claim.sentence), claim)
    last = weights.shape[0] - 1
    assert np.all(weights[last] > 0.9999)
    assert 0.99 < weights[1, 3] < 0.999
    found = find_pair(translator.trace(claim.sentence), claim)
    assert found.ties == tuple((last, head) for head in range(weights.shape[1]))
    assert (found.layer, found.head) == (last, 0)


def test_the_grids_outline_is_where_its_caption_says(translator):
    """Read off the page: in every row, the outlined cell is the first whose written number is
    the row's largest, as the caption says ("the first, where several are as large")."""
    at = app_test("lesson_see_it")
    assert not at.exception
    (grid,) = figures(at)
    heatmap = grid["data"][0]
    z = plotly_array(heatmap["z"]).reshape(len(CLAIMS), -1)
    template = heatmap["texttemplate"]
    outlined = {int(round(s["y0"] + 0.5)): int(round(s["x0"] + 0.5))
                for s in grid["layout"]["shapes"] if s["type"] == "rect"}
    assert sorted(outlined) == list(range(len(CLAIMS)))
    ties_in_a_row = 0
    for row, values in enumerate(z):
        written = [_written(v, template) for v in values]
        largest = _written(float(np.nanmax(values)), template)
        first = written.index(largest)
        assert outlined[row] == first, (row, written)
        ties_in_a_row = max(ties_in_a_row, written.count(largest))
    assert ties_in_a_row > 1  # the caption's case is on the page (垫子 → mat)
    caption = next(shown(c.value) for c in at.caption if "outlined cell" in c.value)
    assert "each row's largest" in caption and "the first, where several are as large" in caption
