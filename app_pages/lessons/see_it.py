"""Lesson §3.4, steps 1 and 2b: who looks at whom. The lesson's claims (sat → cat and mat, the →
mat, it → cat, 垫子 → mat) checked on the own translator: every layer and head is searched for the
pair's largest weight, and "See it" opens that head in Explore with the cell outlined."""

from __future__ import annotations

import streamlit as st

import viz.lessons.see_it as figures
from app_pages.cache.getters import get_trace
from app_pages.frame import live
from app_pages.frame.charts import chart
from app_pages.frame.errors import explained_errors
from app_pages.frame.navigation import script
from app_pages.frame.settings import settings
from app_pages.lessons.lesson import footer, header
from i18n import N_, _
from model.analysis import questions
from model.lessons.see_it import CLAIMS, CONTRAST, Claim, Found, find_pair

PATH = script("lesson_see_it")
SPEC = "own-translator"
EXPLORE = script("explore")
WHY = {  # what the lesson says each pair is for (in English, translated where shown)
    "sat_cat": N_("who sat: the verb looks for its subject"),
    "sat_mat": N_("where it sat: the verb looks for the place"),
    "the_mat": N_("the second “the” stays with the noun it belongs to"),
    "it_cat": N_("§4.1: the word “it” means the cat, the one that was hungry, not the mouse"),
    "dianzi_mat": N_("cross-attention: while writing 垫子, the decoder reads mat (word "
                     "alignment, learnt without any rule)"),
}
header(PATH)

st.markdown(_(
    "The lesson makes claims about who looks at whom: in **The cat sat on the mat**, *sat* "
    "looks at *cat* and *mat*, and the second *the* at *mat*; in **The cat chased the mouse "
    "because it was hungry**, *it* looks at *cat*; and while translating, the decoder writes "
    "垫子 looking at *mat*. Here each claim is checked on the own translator: every layer and "
    "every head is searched for the one where the pair's weight is largest. Nothing is fixed in "
    "advance: the head comes from this run. **See it** opens that head in Explore with the "
    "pair's cell outlined."))

_spec, device = settings()
traces = {}
with explained_errors(_("Could not run {model}: ").format(model=SPEC)):
    for sentence in dict.fromkeys(claim.sentence for claim in (*CLAIMS, CONTRAST)):
        traces[sentence] = get_trace(SPEC, device, sentence)


def _find(claim: Claim) -> Found | str:
    """Where the pair is largest, or why it cannot be found in this run."""
    try:
        return find_pair(traces[claim.sentence], claim)
    except ValueError as error:
        return str(error)


def _open(found: Found) -> None:
    """Point the sidebar at the claim's sentence on own-translator and ask Explore for the
    head, with the cell to outline (runs before the page, as a button's callback)."""
    st.session_state.update(model_choice=SPEC, text=found.claim.sentence, target="")
    st.session_state["open_head"] = (found.claim.kind, found.layer, found.head,
                                     (found.query, found.key, found.query_label,
                                      found.key_label))


found_all = {claim.id: _find(claim) for claim in CLAIMS}
for claim in CLAIMS:
    found = found_all[claim.id]
    with st.container(border=True):
        what, number, action = st.columns([5, 3, 3], vertical_alignment="center")
        what.markdown(f"#### {claim.label}")
        what.caption(_("{why}. In “{sentence}”.").format(why=_(WHY[claim.id]),
                                                       sentence=claim.sentence))
        if isinstance(found, str):
            number.warning(_("Not in this run: {reason}").format(reason=found))
            continue
        where = (_("encoder self-attention · layer {layer} · head {head}") if
                 claim.kind == "encoder.self" else
                 _("cross-attention · layer {layer} · head {head}")).format(
            layer=found.layer, head=found.head)
        number.metric(_("largest weight"), f"{found.weight:.2f}",
                      help=_("The largest weight of this pair over all {count} heads (every "
                             "layer) of {model}.").format(count=found.grid.size, model=SPEC))
        number.caption(where)
        if action.button(_("See it"), key=f"see_it_{claim.id}", icon=":material/visibility:",
                         on_click=_open, args=(found,), use_container_width=True,
                         help=_("Open this head in Explore, the cell outlined.")):
            st.switch_page(EXPLORE)

shown = [found for found in found_all.values() if not isinstance(found, str)]
if shown:
    st.subheader(_("Every head, searched"))
    chart(figures.pair_grid(
        [found.grid for found in shown], [found.claim.label for found in shown],
        [(found.layer, found.head) for found in shown],
        title=_("Each pair's weight in every layer and head of {model}").format(model=SPEC)),
        key="see_it_grid", name=("pairs", "every head"))
    st.caption(_("One row per pair, one column per head (layer · head; cross-attention for "
                 "垫子 → mat, encoder self-attention for the others). The outlined cell is each "
                 "row's largest: the head See it opens (the first, where several are as "
                 "large). A pair may stand out in one head only, like sat → cat, or in "
                 "several, like 垫子 → mat; most heads look elsewhere."))
contrast, it_cat = _find(CONTRAST), found_all["it_cat"]
if not isinstance(contrast, str) and not isinstance(it_cat, str):
    st.caption((_("For contrast, it → mouse peaks at {weight:.2f} (layer {layer}, head "
                  "{head}), below it → cat at {cat:.2f}: the translator leans towards the cat.")
                if contrast.weight < it_cat.weight else
                _("For contrast, it → mouse peaks at {weight:.2f} (layer {layer}, head "
                  "{head}), against it → cat at {cat:.2f}.")).format(
        weight=contrast.weight, layer=contrast.layer, head=contrast.head, cat=it_cat.weight))
# a live class: predict the word each pair's head looks at most, before the reveal
live.offer("see_it", *(
    lambda found=found: questions.most_attended(traces[found.claim.sentence], found.claim.kind,
                                                found.layer, found.head, found.query)
    for found in found_all.values() if not isinstance(found, str)))
footer(PATH)
