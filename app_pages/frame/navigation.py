"""The app's pages, in navigation order, each declaring whether it reads the sidebar's text and
which of its widgets a link carries."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from app_pages.live.join import CLASS_PATH, JOIN_PATH
from i18n import N_


@dataclass(frozen=True)
class PageSpec:
    """One page of the navigation.

    Args:
        path: the page's script, relative to the app's folder.
        url_path: the page's path in the URL ("" for the default page), written out so that
            moving a script never breaks a shared link.
        title, icon: as shown in the navigation (the title in English, translated when shown).
        group: the navigation section (in English, translated when shown).
        reads_text: the page analyses the sidebar's shared text (else the sidebar hides it).
        default: the page a bare URL opens.
        link: what a link to the page carries besides the sidebar's settings: ``(URL
            parameter, session-state key of the widget, type)`` for each widget, the type
            turning the URL's text into the widget's value (``int``, ``str``, ...).
    """

    path: str
    url_path: str
    title: str
    icon: str
    group: str
    reads_text: bool = True
    default: bool = False
    link: tuple[tuple[str, str, Callable[[str], object]], ...] = ()


VIEWS, LESSON = "app_pages/views/", "app_pages/lessons/"  # where the page scripts live

START = N_("Start")
LOOK = N_("Look at attention")
MANY = N_("Many sentences")
PARTS = N_("Understand the parts")
LESSONS = N_("Lessons")


def int_or_text(value: str) -> int | str:
    """A link's value that is a number or a word (Translate's heads: 3 or "average")."""
    return int(value) if value.strip().lstrip("-").isdigit() else value


TRUE = ("1", "true", "yes", "on")  # a link's words for on (and for off)
FALSE = ("0", "false", "no", "off")


def flag(value: str) -> bool:
    """A link's on/off value (one of :data:`TRUE`: on)."""
    return value.strip().lower() in TRUE


# Parameters holding a user's text: left out of a link, longest first, when it grows too long.
TEXT_PARAMS = ("text", "target", "sentence", "sentences", "a", "b", "source", "chinese",
               "queries", "keys")


def _widgets(kind: str = "", layer: str = "", head: str = "", step: str = ""
             ) -> tuple[tuple[str, str, Callable[[str], object]], ...]:
    """A page's link: the session keys of its kind, layer, head and step widgets."""
    return tuple((param, key, kind_) for param, key, kind_ in (
        ("kind", kind, str), ("layer", layer, int), ("head", head, int), ("step", step, int))
        if key)


# the heatmap pages' sink toggle (app_pages/frame/sink.py), carried as ?sink=1
SINK_LINK = ("sink", "sink_out", flag)

PAGES = (
    PageSpec(VIEWS + "start.py", "", N_("Start here"), "👋", START, reads_text=False,
             default=True),
    PageSpec(VIEWS + "translate.py", "translate", N_("Translate"), "🈯", START,
             reads_text=False,
             link=(("sentence", "translate_text", str),
                   *_widgets(layer="dec_layer", step="step"), ("head", "dec_head", int_or_text),
                   SINK_LINK)),
    PageSpec(VIEWS + "explore.py", "explore", N_("Explore"), "🔍", START,
             link=(*_widgets("kind", "layer", "head"), SINK_LINK)),
    PageSpec(VIEWS + "model_view.py", "model_view", N_("Model view"), "🧱", LOOK,
             link=(*_widgets("mv_kind"), SINK_LINK)),
    PageSpec(VIEWS + "head_view.py", "head_view", N_("Head view"), "🔗", LOOK,
             link=_widgets("hv_kind", "hv_layer")),
    PageSpec(VIEWS + "mask.py", "mask", N_("Causal mask"), "🎭", LOOK,
             link=_widgets("mask_kind", "mask_layer", "mask_head", "mask_step")),
    PageSpec(VIEWS + "rollout.py", "rollout", N_("Rollout"), "🌊", LOOK,
             link=_widgets("ro_kind", "ro_layer")),
    PageSpec(VIEWS + "moves.py", "what_moves", N_("What moves"), "🧲", LOOK,
             link=_widgets("wm_kind", "wm_layer", "wm_head")),
    PageSpec(VIEWS + "stats.py", "stats", N_("Head statistics"), "📊", LOOK,
             link=(*_widgets("st_kind"), SINK_LINK)),
    PageSpec(VIEWS + "corpus.py", "corpus", N_("Corpus"), "📚", MANY, reads_text=False,
             link=(("sentences", "cp_pasted", str), ("queries", "cp_queries", str),
                   ("keys", "cp_keys", str), ("before", "cp_before", flag),
                   ("kind", "cp_kind", str), ("statistic", "cp_metric", str),
                   ("layer", "cp_layer", int), ("head", "cp_head", int))),
    # Compare's link holds each mode's boxes and choices: two sentences (a, b, kind, layer,
    # head), two models (each model's kind, layer and head: _a the sidebar's, _b the second),
    # and the training stages (their sentence, target, layer and head)
    PageSpec(VIEWS + "compare.py", "compare", N_("Compare"), "⚖️", MANY, reads_text=False,
             link=(("mode", "cmp_mode", str), ("a", "cmp_a", str), ("b", "cmp_b", str),
                   ("sentence", "cmp_text", str), ("second", "cmp_model_b", str),
                   ("source", "cmp_stage_source", str), ("chinese", "cmp_stage_target", str),
                   *_widgets("cmp_kind", "cmp_layer", "cmp_head"),
                   ("kind_a", "cmp_ma_kind", str), ("layer_a", "cmp_ma_layer", int),
                   ("head_a", "cmp_ma_head", int), ("kind_b", "cmp_mb_kind", str),
                   ("layer_b", "cmp_mb_layer", int), ("head_b", "cmp_mb_head", int),
                   ("stage_layer", "cmp_stage_layer", int),
                   ("stage_head", "cmp_stage_head", int), SINK_LINK)),
    PageSpec(VIEWS + "positions.py", "positions", N_("Positions"), "🕰️", PARTS,
             reads_text=False),
    PageSpec(VIEWS + "shapes.py", "shapes", N_("Shapes and costs"), "📐", PARTS),
    # The lessons, in the seed's order (its section numbers are in each page's header).
    PageSpec(LESSON + "company.py", "lesson_company", N_("3.1 A translation company"), "🏢",
             LESSONS, reads_text=False),
    PageSpec(LESSON + "architecture.py", "lesson_architecture", N_("3.2 The architecture"), "🏛️",
             LESSONS, reads_text=False),
    PageSpec(LESSON + "positions.py", "lesson_positions", N_("3.4 Why positions"), "🔀", LESSONS,
             reads_text=False),
    PageSpec(LESSON + "see_it.py", "lesson_see_it", N_("3.4 Who looks at whom"), "👀", LESSONS,
             reads_text=False),
    PageSpec(LESSON + "masks.py", "lesson_masks", N_("3.4 Every mask"), "🙈", LESSONS,
             reads_text=False),
    PageSpec(LESSON + "generation.py", "lesson_generation",
             N_("3.4 Generation and the KV cache"), "🧮", LESSONS, reads_text=False,
             link=(("generator", "gen_model", str),
                   *_widgets(layer="gen_layer", step="gen_step"))),
    PageSpec(LESSON + "rnn.py", "lesson_rnn", N_("3.6 RNN against Transformer"), "🔁",
             LESSONS, reads_text=False),
    PageSpec(LESSON + "families.py", "lesson_families", N_("3.7 Three families"), "👪", LESSONS,
             reads_text=False),
    PageSpec(LESSON + "troubles.py", "lesson_troubles",
             N_("3.8 The Transformer's own troubles"), "🚧", LESSONS, reads_text=False),
    PageSpec(LESSON + "average.py", "lesson_average", N_("4.1 A weighted average"), "⚖",
             LESSONS, reads_text=False),
    PageSpec(LESSON + "qkv.py", "lesson_qkv", N_("4.2 Query, key, value"), "🔑", LESSONS,
             reads_text=False, link=_widgets("qkv_kind", "qkv_layer", "qkv_head", "qkv_step")),
    PageSpec(LESSON + "hand.py", "lesson_hand", N_("4.3 By hand"), "✍️", LESSONS,
             reads_text=False, link=_widgets(step="hand_step")),
    PageSpec(LESSON + "scaling.py", "lesson_scaling", N_("4.4 Why divide by √dₖ"), "➗", LESSONS,
             reads_text=False),
    PageSpec(LESSON + "all_at_once.py", "lesson_all_at_once", N_("4.5 Every word at once"),
             "⚡", LESSONS, reads_text=False),
    PageSpec(LESSON + "multihead.py", "lesson_multihead", N_("4.6 Multi-head"), "🐙", LESSONS,
             reads_text=False, link=_widgets("mh_kind", "mh_layer", step="mh_step")),
    PageSpec(LESSON + "kinds.py", "lesson_kinds", N_("4.7 Three kinds of attention"), "🧭",
             LESSONS, reads_text=False),
    PageSpec(LESSON + "complexity.py", "lesson_complexity", N_("4.8 Complexity"), "📈", LESSONS,
             reads_text=False),
    PageSpec(LESSON + "implementation.py", "lesson_implementation",
             N_("4.9 The minimal implementation"), "🧑‍💻", LESSONS, reads_text=False),
    PageSpec(LESSON + "panorama.py", "lesson_panorama", N_("5.1–5.2 The panorama"), "🗺️",
             LESSONS, reads_text=False),
)
LESSON_PAGES = tuple(page for page in PAGES if page.group == LESSONS)
# A live class's two pages, reached by their links and never listed in the navigation: the
# student's (a phone's screen: the current question and nothing else) and the teacher's private
# one (its link holds the teacher's key).
CLASS = N_("Live class")
HIDDEN_PAGES = (
    PageSpec(VIEWS + "join.py", JOIN_PATH, N_("Join a class"), "🙋", CLASS, reads_text=False),
    PageSpec(VIEWS + "class_room.py", CLASS_PATH, N_("Live class"), "🧑‍🏫", CLASS,
             reads_text=False),
)
ALL_PAGES = PAGES + HIDDEN_PAGES


def script(url_path: str) -> str:
    """The script of the page whose URL path is ``url_path`` ("" the default page): pages name
    each other by URL, which never moves, and switch to the script this returns."""
    for page in ALL_PAGES:
        if page.url_path == url_path:
            return page.path
    raise KeyError(f"no page has the URL path {url_path!r}")
