"""Lesson §3.1, a translation company: the notes are the encoder's output of a run hooked here
(independently of the lesson's code), the figure's edges are the trace's last cross-attention
averaged over heads, and another sentence changes them on the page."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from model.lessons.company import company_of, default_step
from tests.helpers import app_test, figures, messages, shown
from viz.lessons.company import company_figure


@pytest.fixture(scope="module")
def translator():
    from model import load

    return load("own-translator", device="cpu")


def _encoder_output(translator, trace) -> torch.Tensor:
    """The encoder's output, read by a plain torch forward hook on the encoder module."""
    seen = {}
    handle = translator.network.encoder.register_forward_hook(
        lambda module, args, out: seen.setdefault("memory", out.detach().clone()))
    try:
        with torch.inference_mode():
            translator.network(src_ids=torch.tensor([list(trace.source_ids)]),
                               tgt_ids=torch.tensor([list(trace.target_ids)]))
    finally:
        handle.remove()
    return seen["memory"]


@pytest.mark.parametrize("text", ["The cat sat on the mat", "The dog chased the cat"])
def test_the_notes_are_the_encoders_output_of_a_hooked_run(translator, text):
    trace = translator.trace(text)
    company = company_of(translator, trace)
    memory = _encoder_output(translator, trace)
    assert company.notes_shape == tuple(memory.shape)
    assert company.notes.shape == tuple(memory.shape[1:]) == (len(trace.source_tokens),
                                                              translator.config.d_model)
    np.testing.assert_allclose(company.notes, memory[0].double().numpy(), atol=1e-6)
    memory_again, _mask = translator.network.encode(torch.tensor([list(trace.source_ids)]))
    np.testing.assert_allclose(company.notes, memory_again[0].detach().double().numpy(), atol=1e-5)


def test_the_edges_are_the_last_layers_cross_attention_averaged_over_heads(translator):
    trace = translator.trace("The cat sat on the mat")
    company = company_of(translator, trace)
    stack = trace.stack("decoder.cross").astype(np.float64)  # [layer, head, query, key]
    expected = stack[-1].mean(axis=0)
    np.testing.assert_allclose(company.cross, expected, atol=1e-6)
    assert company.layer == stack.shape[0] - 1
    for step in range(len(company.written)):
        fig = company_figure(company.source_words, company.written, company.cross,
                             company.discussion, step=step, d_model=company.d_model)
        edges = [t for t in fig.data if t.name == "cross"]
        assert len(edges) == len(company.source_words)
        np.testing.assert_allclose([e.customdata[0] for e in edges], expected[step], atol=1e-6)
        assert company.top_note(step) == int(np.argmax(expected[step]))
    # the lesson's sentence: writing 垫子 reads the note of "mat" most
    step = company.written.index("垫子")
    assert company.source_words[company.top_note(step)] == "mat"
    assert default_step(company) == step


def _edges(at) -> np.ndarray:
    (fig,) = figures(at)
    return np.array([t["customdata"][0] for t in fig["data"] if t.get("name") == "cross"])


def test_another_sentence_changes_the_notes_and_the_edges_on_the_page(translator):
    at = app_test("lesson_company")
    assert not at.exception, at.exception
    first = _edges(at)
    trace = translator.trace("The cat sat on the mat")
    np.testing.assert_allclose(first, trace.mean_weights("decoder.cross", 2)[3], atol=1e-6)
    assert any("[6 × 128]" in shown(m.value) for m in at.markdown)
    at.text_input(key="co_text").set_value("The dog chased the cat").run()
    assert not at.exception, at.exception
    second = _edges(at)
    other = translator.trace("The dog chased the cat")
    step = at.selectbox(key="co_step").value
    np.testing.assert_allclose(second, other.mean_weights("decoder.cross", 2)[step], atol=1e-6)
    assert first.shape != second.shape or not np.allclose(first, second)
    assert any("[5 × 128]" in shown(m.value) for m in at.markdown)


def test_a_word_outside_the_vocabulary_is_refused_with_the_models_message():
    at = app_test("lesson_company", co_text="The zebra sat on the mat")
    assert not at.exception, at.exception
    assert "zebra" in messages(at.error)
    assert not figures(at)
