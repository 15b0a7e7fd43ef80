"""Token labels for axes and hovers: HTML-escaped, whitespace made visible, thinned out on long
axes."""

from __future__ import annotations

import html
import re
from collections.abc import Sequence

import numpy as np

from viz.style import SPECIAL_TOKEN_COLOR


def visible(token: str) -> str:
    """A token made only of whitespace (spaces, no-break or ideographic spaces) shows each as
    ``␣`` (an empty one as ``∅``); other tokens as they are."""
    token = str(token)
    if not token:
        return "∅"
    return re.sub(r"\s", "␣", token) if not token.strip() else token


def escape(tokens: Sequence[str]) -> list[str]:
    """Tokens made safe for Plotly's HTML-like text (``<bos>`` would otherwise vanish), with
    whitespace-only tokens made visible."""
    return [html.escape(visible(t), quote=False) for t in tokens]


SPECIAL_STYLE = f"<span style='color:{SPECIAL_TOKEN_COLOR}'><i>{{}}</i></span>"


LABEL_PX = 16  # the least room a horizontal label's line, or a slanted label, needs


def labels_that_fit(pixels: float) -> int:
    """How many labels fit along ``pixels`` without overlapping (at least one)."""
    return max(1, int(pixels // LABEL_PX))


def axis_ticks(tokens: Sequence[str], max_labels: int = 64, special=()) -> dict:
    """Axis settings placing token labels at integer positions.

    Plotly merges equal category labels, so positions are integers and tokens are tick text:
    repeated tokens stay distinct. Past ``max_labels`` tokens only every k-th is labelled.
    Positions in ``special`` (special tokens such as ``[CLS]``) are drawn grey and italic.

    Returns:
        dict for ``fig.update_xaxes``/``update_yaxes``: ``tickmode``, ``tickvals``, ``ticktext``.
    """
    n = len(tokens)
    step = max(1, int(np.ceil(n / max_labels)))
    positions = list(range(0, n, step))
    special = set(special)
    labels = [SPECIAL_STYLE.format(label) if i in special else label
              for i, label in zip(positions, escape([tokens[i] for i in positions]))]
    return {"tickmode": "array", "tickvals": positions, "ticktext": labels}


def check_weights(weights: np.ndarray, query_tokens: Sequence[str], key_tokens: Sequence[str],
                  ndim: int = 2) -> np.ndarray:
    """Validate a ``[..., query, key]`` array against its token axes and return it as float."""
    weights = np.asarray(weights, dtype=np.float64)
    if weights.ndim != ndim:
        raise ValueError(f"expected a {ndim}-D array of weights, got shape {weights.shape}")
    if weights.shape[-2:] != (len(query_tokens), len(key_tokens)):
        raise ValueError(
            f"weights of shape {weights.shape} do not match {len(query_tokens)} query and "
            f"{len(key_tokens)} key tokens")
    return weights
