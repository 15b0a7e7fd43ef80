"""Export for slides and papers: PNG (3×), SVG, PDF rendered on the server by kaleido, offline
HTML, the shown matrix as CSV, the trace as .npz, a page's figures as one ZIP."""

from __future__ import annotations

import csv
import io
import json
import struct
import xml.etree.ElementTree as ElementTree
import zipfile
from pathlib import Path

import numpy as np
import pytest

import viz
from tests.helpers import CHROMIUM, SEED_SENTENCE, app_test, chromium_page
from viz import export


@pytest.fixture(scope="module")
def heatmap(seed_trace):
    weights = seed_trace.weights("encoder.self", 1, 2)
    tokens = [str(t) for t in seed_trace.source_tokens]
    return weights, tokens, viz.attention_heatmap(weights, tokens, tokens, title="layer 1 head 2")


def _rows(data: bytes) -> list[list[str]]:
    return list(csv.reader(io.StringIO(data.decode("utf-8-sig"))))


def test_file_names_name_the_view_and_keep_chinese():
    stem = export.file_stem("smollm2", "The cat sat / on: the mat?", "decoder.self", "layer 7",
                            "head 4")
    assert stem == "smollm2_The-cat-sat-on-the-mat_decoder.self_layer-7_head-4"
    assert export.file_stem("own-translator", "猫 坐 在") == "own-translator_猫-坐-在"
    assert export.file_stem("", None) == "figure"
    assert len(export.file_stem("x" * 500)) <= 80


def test_the_csv_holds_the_shown_weights_with_every_label(heatmap):
    weights, tokens, _ = heatmap
    allowed = np.tril(np.ones_like(weights, dtype=bool))
    rows = _rows(export.matrix_csv(np.where(allowed, weights, np.nan), tokens, tokens))
    assert rows[0][1:] == tokens and [r[0] for r in rows[1:]] == tokens
    read = np.array([[float(v) if v else np.nan for v in r[1:]] for r in rows[1:]])
    np.testing.assert_array_equal(read[allowed], weights[allowed])  # full precision
    assert np.isnan(read[~allowed]).all()  # masked cells stay empty
    with pytest.raises(ValueError, match="does not match"):
        export.matrix_csv(weights, tokens[:2], tokens)


def test_a_figure_table_reads_the_heatmap_with_its_tokens(heatmap):
    weights, tokens, figure = heatmap
    rows = _rows(export.figure_table(figure))
    assert rows[0][1:] == tokens
    np.testing.assert_allclose(np.array([[float(v) for v in r[1:]] for r in rows[1:]]),
                               weights, rtol=1e-6)


def test_the_zip_holds_every_file():
    data = export.bundle({"a.csv": b"1,2", "猫.svg": b"<svg/>"})
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        assert sorted(archive.namelist()) == ["a.csv", "猫.svg"]
        assert archive.read("猫.svg") == b"<svg/>"


def test_every_chart_offers_its_exports_and_the_page_a_zip_and_the_trace():
    at = app_test("explore", model_choice="own-random", text=SEED_SENTENCE)
    assert not at.exception
    buttons = at.get("download_button")
    labels = [b.proto.label for b in buttons]
    assert labels.count("PNG") == len(at.get("plotly_chart")) == 2
    for label in ("SVG", "PDF", "HTML", "CSV"):
        assert labels.count(label) == 2
    assert "All 2 figures of this page (ZIP)" in labels and "This trace (.npz)" in labels
    config = json.loads(at.get("plotly_chart")[0].proto.config)["toImageButtonOptions"]
    assert config == {"format": "png", "scale": 3,
                      "filename": "own-random_The-cat-sat-on-the-mat_encoder.self_layer-0_head-0"}


@pytest.mark.slow
@pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="kaleido needs Chromium")
def test_images_render_on_the_server_large_and_with_the_tokens(heatmap):
    _, tokens, figure = heatmap
    png = export.image(figure, "png")
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", png[16:24])
    assert width >= 1800 and height > 0
    root = ElementTree.fromstring(export.image(figure, "svg"))
    texts = {t.text for t in root.iter() if t.tag.endswith("text")}
    assert set(tokens) <= texts
    assert export.image(figure, "pdf")[:5] == b"%PDF-"
    with pytest.raises(ValueError, match="unknown image format"):
        export.image(figure, "bmp")


@pytest.mark.slow
@pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="kaleido needs Chromium")
def test_a_pages_png_is_rendered_at_the_width_shown_on_an_opaque_background():
    from PIL import Image

    from app_pages.frame.charts import FIGURES
    from viz.sizes import SCREEN_CHART_PX

    at = app_test("explore", model_choice="own-random", text=SEED_SENTENCE)
    assert not at.exception
    files = at.session_state[FIGURES]
    png = next(make for name, make in files.items() if name.endswith("head-0.png"))()
    image = Image.open(io.BytesIO(png)).convert("RGBA")
    assert image.width == SCREEN_CHART_PX * export.IMAGE_SCALE  # as a 1024 px screen shows it
    assert image.getpixel((0, 0)) == (255, 255, 255, 255)  # the light theme's page, opaque


@pytest.mark.slow
@pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="needs Debian's chromium")
def test_the_html_file_draws_the_chart_offline(heatmap, tmp_path):
    _, tokens, figure = heatmap
    page_file = tmp_path / "figure.html"
    page_file.write_bytes(export.html(figure, "layer 1 head 2"))
    requested = []
    with chromium_page() as page:
        page.context.set_offline(True)
        page.route("**/*", lambda route: (requested.append(route.request.url), route.abort())
                   if not route.request.url.startswith("file:") else route.continue_())
        page.goto(page_file.as_uri())
        page.wait_for_selector(".js-plotly-plot .xtick text", timeout=30_000)
        assert page.locator(".js-plotly-plot .xtick text").all_text_contents() == tokens
        assert page.title() == "layer 1 head 2"
    assert not requested  # nothing fetched from a network


def test_a_download_is_made_in_the_language_of_the_page_that_offered_it():
    # Streamlit makes a deferred download in a thread of its own, which speaks English
    import threading

    import i18n
    import viz
    from app_pages.frame.charts import export_files

    figure = viz.distribution_bars(np.array([0.2, 0.8]), ["猫", "坐"])
    with i18n.use("zh"):
        files = export_files(figure, "bars")
        header = i18n._("trace")
    made = []
    thread = threading.Thread(target=lambda: made.append(files["bars.csv"]().decode("utf-8-sig")))
    thread.start()
    thread.join(30)
    assert made and made[0].startswith(header + ",") and header != "trace"


# --- python -m model export --out ---------------------------------------------------------------

def _export_to(out, *extra: str) -> list[str]:
    return ["export", "--model", "own-random", "--text", SEED_SENTENCE, "--out", str(out),
            "--device", "cpu", *extra]


def _one_error_line(capsys) -> str:
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in err, err
    return lines[0]


def _must_not_load(*args, **kwargs):
    raise AssertionError("the model was loaded")


def test_export_keeps_an_existing_file_unless_forced(tmp_path, capsys, monkeypatch):
    import model
    from model.__main__ import main

    out = tmp_path / "trace.npz"
    out.write_bytes(b"keep me")
    with monkeypatch.context() as patched:
        patched.setattr(model, "load", _must_not_load)  # refused before the model loads
        assert main(_export_to(out)) == 2
    line = _one_error_line(capsys)
    assert "already exists" in line and "--force" in line
    assert out.read_bytes() == b"keep me"
    assert main(_export_to(out, "--force")) == 0
    with np.load(out) as data:
        assert list(data["source_tokens"]) == ["The", "cat", "sat", "on", "the", "mat"]


@pytest.mark.parametrize("case", ["a folder", "a missing folder", "inside a file"])
def test_export_refuses_an_output_it_cannot_write_before_loading(tmp_path, capsys, monkeypatch,
                                                                 case):
    import model
    from model.__main__ import main

    (tmp_path / "DIR.npz").mkdir()
    (tmp_path / "file.txt").write_text("x")
    out, message = {"a folder": (tmp_path / "DIR.npz", "is a folder"),
                    "a missing folder": (tmp_path / "nope" / "t.npz", "does not exist"),
                    "inside a file": (tmp_path / "file.txt" / "t.npz", "is not a folder")}[case]
    monkeypatch.setattr(model, "load", _must_not_load)
    assert main(_export_to(out, "--force")) == 2
    assert message in _one_error_line(capsys)


def test_the_export_help_explains_force(capsys):
    from model.__main__ import main

    assert main(["export", "--help"]) == 0
    assert "--force" in capsys.readouterr().out
