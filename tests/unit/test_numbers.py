"""Large numbers in the reader's units (English by thousands, 中文 by ten-thousands: 万, 亿,
万亿), and the axes that write their ticks with them instead of Plotly's English 10k and 1B."""

from __future__ import annotations

import re

import numpy as np
import pytest

import i18n
import viz
from viz.lessons.complexity import complexity_lesson
from viz.lessons.generation import cache_bytes
from viz.numbers import decade_ticks, linear_ticks, short_count

CASES = [  # value, English, 中文 (written out here, not derived from the formatter's tables)
    (0, "0", "0"),
    (0.5, "0.5", "0.5"),
    (512, "512", "512"),
    (1234, "1.2k", "1234"),
    (9999, "10k", "9999"),
    (10_000, "10k", "1 万"),
    (12_345, "12k", "1.2 万"),
    (999_999, "1M", "100 万"),
    (1_500_000, "1.5M", "150 万"),
    (12_345_678, "12M", "1235 万"),
    (99_996_000, "100M", "1 亿"),
    (100_000_000, "100M", "1 亿"),
    (134_515_008, "135M", "1.3 亿"),
    (1e9, "1B", "10 亿"),
    (1e10, "10B", "100 亿"),
    (1e12, "1T", "1 万亿"),
    (1e15, "10¹⁵", "1000 万亿"),
    (1e16, "10¹⁶", "10¹⁶"),
    (1.2e16, "1.2 × 10¹⁶", "1.2 × 10¹⁶"),
    (9.99e17, "10¹⁸", "10¹⁸"),
    (-12_345, "-12k", "-1.2 万"),
]


@pytest.mark.parametrize("value, english, chinese", CASES)
def test_a_large_number_is_written_in_the_readers_units(value, english, chinese):
    with i18n.use("en"):
        assert short_count(value) == english
    with i18n.use("zh"):
        assert short_count(value) == chinese


def test_more_digits_are_kept_when_asked():
    with i18n.use("zh"):
        assert short_count(12_345, digits=3) == "1.23 万"
        assert short_count(123_456_789, digits=4) == "1.235 亿"
    with i18n.use("en"):
        assert short_count(12_345, digits=3) == "12.3k"


def test_decade_ticks_label_every_power_of_ten_in_the_readers_units():
    with i18n.use("zh"):
        ticks = decade_ticks(3, 2e9)
    assert ticks["tickmode"] == "array"
    assert ticks["tickvals"] == [1, 10, 100, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10]
    assert ticks["ticktext"] == ["1", "10", "100", "1000", "1 万", "10 万", "100 万", "1000 万",
                                 "1 亿", "10 亿", "100 亿"]
    with i18n.use("en"):
        assert decade_ticks(1, 1e9)["ticktext"][-4:] == ["1M", "10M", "100M", "1B"]
    wide = decade_ticks(1, 1e24, most=12)  # 25 powers of ten: every third one
    assert len(wide["tickvals"]) <= 12 and wide["tickvals"][:3] == [1, 1e3, 1e6]


def test_linear_ticks_are_round_and_in_the_readers_units():
    with i18n.use("zh"):
        ticks = linear_ticks(37_000)
    assert ticks["tickvals"] == [0, 10_000, 20_000, 30_000, 40_000]
    assert ticks["ticktext"] == ["0", "1 万", "2 万", "3 万", "4 万"]
    with i18n.use("en"):
        assert linear_ticks(2_600)["ticktext"] == ["0", "500", "1k", "1.5k", "2k", "2.5k", "3k"]
    assert linear_ticks(0) == {}


LATIN_SUFFIX = re.compile(r"\d\s*[kMBGT]\b")


def _axes(fig):
    layout = fig.to_plotly_json()["layout"]
    return [layout[key] for key in layout if re.match(r"[xy]axis\d*$", key)]


@pytest.mark.parametrize("n, d", [(256, 512), (1_048_576, 16_384), (1, 64)])
def test_the_complexity_axes_count_in_chinese_units(n, d):
    """§4.8 (and Shapes and costs): the log axes once read 10B 1B 100M in Chinese."""
    with i18n.use("zh"):
        fig = complexity_lesson(n, d)
    for axis in _axes(fig):
        assert axis["type"] == "log" and axis["tickmode"] == "array"
        assert "tickformat" not in axis
        assert not any(LATIN_SUFFIX.search(t) for t in axis["ticktext"]), axis["ticktext"]
        assert len(axis["tickvals"]) == len(axis["ticktext"]) <= 12
    y = _axes(fig)[1]
    assert "1 亿" in y["ticktext"] or "10 亿" in y["ticktext"]
    values = np.concatenate([np.asarray(trace.y, dtype=float) for trace in fig.data])
    # the labels span the curves: none beyond a step of the lowest or the highest value
    assert min(y["tickvals"]) <= values.min() and max(y["tickvals"]) * 1000 >= values.max()


def test_the_kv_cache_axis_counts_in_chinese_units():
    with i18n.use("zh"):
        fig = cache_bytes(["1: 猫", "2: 坐", "3: 在"], [12_000, 24_000, 36_000],
                          [12_000, 24_000, 36_000], [48_000, 96_000, 144_000], step=2)
    y = fig.layout.yaxis
    assert y.tickformat is None and y.tickmode == "array"
    assert "10 万" in y.ticktext and not any(LATIN_SUFFIX.search(t) for t in y.ticktext)


def test_rope_periods_count_in_chinese_units():
    periods = 2 * np.pi * 100_000 ** (np.arange(32) / 32)
    with i18n.use("zh"):
        fig = viz.rope_periods(periods, "RoPE")
    assert "1 万" in fig.layout.yaxis.ticktext and "10 万" in fig.layout.yaxis.ticktext
