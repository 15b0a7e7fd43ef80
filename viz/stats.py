"""Head statistics as a layers × heads heatmap."""

from __future__ import annotations

import html

import numpy as np
import plotly.graph_objects as go

from i18n import _
from viz.model_view import click_targets
from viz.style import SEQUENTIAL_SCALE, themed


def stats_heatmap(values, metric: str, description: str = "", interval=None,
                  counts=None) -> go.Figure:
    """``values [layer, head]`` of one metric; ``customdata`` is ``[layer, head]``.

    Args:
        values: the metric per layer and head (NaN where it does not apply).
        metric: the metric's name, for the colour bar and hover.
        description: a subtitle, plain text (user patterns in it are shown as typed).
        interval: ``(low, high)``, each ``[layer, head]``: a confidence interval of each
            value (a mean over sentences), shown in the hover.
        counts: ``[layer, head]``: the sentences each value averages, shown in the hover.
    """
    values = np.asarray(values, dtype=float)
    if values.ndim != 2:
        raise ValueError(f"expected [layer, head], got shape {values.shape}")
    n_layers, n_heads = values.shape
    layer, head = np.indices(values.shape)
    custom = np.stack([layer, head], axis=-1)
    extra, text = "", None
    if interval is not None:
        low, high = (np.asarray(a, dtype=float) for a in interval)
        n = np.zeros(values.shape, int) if counts is None else np.asarray(counts)
        text = np.vectorize(lambda a, b, c: _("95% CI {low:.3f} to {high:.3f} · {count} "
                                              "sentences").format(low=a, high=b, count=c)
                            if c >= 2 else _("{count} sentences: no interval").format(count=c),
                            otypes=[object])(low, high, n)
        extra = "<br>%{text}"
    fig = go.Figure(go.Heatmap(
        z=values, customdata=custom, colorscale=SEQUENTIAL_SCALE, text=text,
        colorbar={"title": {"text": metric}},
        hovertemplate=_("layer %{customdata[0]} · head %{customdata[1]}") + "<br>" + metric
        + " %{z:.3f}" + extra + "<extra></extra>", xgap=1, ygap=1))
    fig.add_trace(click_targets([(lay, hd, lay, hd) for lay in range(n_layers)
                                 for hd in range(n_heads)], size=14))
    description = html.escape(description, quote=False)  # plain text: never a link or a tag
    fig.update_layout(title={"text": f"{metric}<br><sup>{description}</sup>" if description
                             else metric, "y": 1, "yref": "container", "yanchor": "top",
                             "pad": {"t": 12}},
                      height=max(320, 150 + 22 * n_layers),
                      margin={"l": 60, "r": 20, "t": 120, "b": 40}, clickmode="event+select")
    fig.update_xaxes(title_text=_("head"), tickmode="array", tickvals=list(range(n_heads)),
                     side="top")
    fig.update_yaxes(title_text=_("layer"), tickmode="array", tickvals=list(range(n_layers)),
                     autorange="reversed")
    return themed(fig)
