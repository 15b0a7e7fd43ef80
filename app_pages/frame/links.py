"""Links that reopen a view: the URL's query parameters hold the view's state.

The page is the URL's path (``/explore``); the parameters hold the sidebar's settings (model,
device, text, target, language, presentation mode, palette) and the page's own widgets that its
:class:`~app_pages.frame.navigation.PageSpec` names (attention kind, layer, head, step). A fresh
session reads them once (:func:`restore_settings`, then :func:`restore_page`); every run writes
the current view back (:func:`publish`), so the address bar is always a link to what is shown.

A value a link cannot hold is said on the page, never a traceback: an unknown language, model
or device is named and the default used; a layer or head the model does not have is said by
the widget that replaces it (:mod:`app_pages.frame.widgets`); a text too long for a link is left out
of it, and the link panel says so.

A session reads its link in two steps: the language and the presentation mode before anything
is drawn (the page titles of the navigation are in the language), the page's own widgets once
the navigation has named the page.
"""

from __future__ import annotations

from urllib.parse import unquote, urlencode, urlsplit

import streamlit as st

import i18n
import model
from app_pages.cache.getters import limits, policy
from app_pages.frame import widgets
from app_pages.frame.markdown import literal
from app_pages.frame.navigation import ALL_PAGES, FALSE, TEXT_PARAMS, TRUE, PageSpec, flag
from app_pages.frame.settings import (
    DEVICES,
    OTHER,
    PALETTES,
    PRECISIONS,
    current_text,
    precision,
    settings,
)
from i18n import N_, _

RESTORED = "_link_restored"  # the session has read its URL
NOTES = "_link_notes"  # what the link asked for that could not be shown, said once
# The longest query a link holds: links are pasted into slides, chats and e-mails, and some
# servers and proxies refuse request lines longer than about 2,000 characters.
MAX_QUERY = 2000
# What a link's parameters are called in a message about them (translated when shown).
PARAMETER_NAMES = {"layer": N_("layer"), "head": N_("head"), "step": N_("step"),
                   "kind": N_("attention")}


def _first(params, name: str) -> str | None:
    """The parameter's value; None when absent or empty (``?layer=`` is no layer)."""
    value = params.get(name)
    return None if value is None or not str(value).strip() else str(value).strip()


def _note(template: str, **fields) -> None:
    """Keep a note (its English template, translated when shown, and its fields)."""
    st.session_state.setdefault(NOTES, []).append((template, fields))


def restore_settings() -> None:
    """First of a fresh session's two steps: the settings that come before anything is drawn
    (language, presentation mode, palette) and the sidebar's, from the URL's parameters into
    session state, where the widgets read their values; a value out of place becomes a note
    shown by :func:`notes`."""
    if st.session_state.get(RESTORED):
        return
    params = st.query_params

    page = unknown_page(st.context.url or "", st.get_option("server.baseUrlPath") or "")
    if page:  # Streamlit opens the start page (and says so in English)
        _note(N_("The link's page “{value}” does not exist; this is the start page."),
              value=page[:40])

    lang = _first(params, "lang")
    if lang is not None:
        code = i18n.normalise(lang)
        if code is None:
            _note(N_("The link's language “{value}” is not one this app speaks (en, zh); it "
                     "is shown in English."), value=lang[:20])
            code = i18n.DEFAULT
        st.session_state["lang"] = code
    present = _first(params, "present")
    if present is not None:
        if present.lower() in TRUE + FALSE:
            st.session_state["present"] = present.lower() in TRUE
        else:
            _note(N_("The link's presentation mode “{value}” is neither 1 nor 0; it is off."),
                  value=present[:20])
    palette = _first(params, "palette")
    if palette is not None:
        if palette in PALETTES:
            st.session_state["palette"] = palette
        else:
            _note(N_("The link's colours “{value}” are not one of {known}; the default is "
                     "used."), value=palette[:20], known=", ".join(PALETTES))
    spec_text = _first(params, "model")
    if spec_text is not None:
        spec_text = spec_text.strip()[:model.MAX_SPEC]
        if spec_text in model.BUNDLED:
            st.session_state["model_choice"] = spec_text
        elif spec_text and policy().other:
            st.session_state.update(model_choice=OTHER, model_other=spec_text)
        else:
            _note(N_("The link names a model this server does not offer (“{value}”); the "
                     "default model is shown."), value=spec_text[:80])
    for key, choices, refused in (
            ("device", DEVICES, N_("The link's device “{value}” is not one of auto, cpu, "
                                   "cuda; auto is used.")),
            ("dtype", PRECISIONS, N_("The link's precision “{value}” is not one of auto, "
                                     "float32, bfloat16, float16; auto is used."))):
        value = _first(params, key)
        if value is not None:
            if value in choices:
                st.session_state[key] = value
            else:
                _note(refused, value=value[:20])


def unknown_page(url: str, base: str = "") -> str:
    """The page a URL names when it is none of the app's ("" for a known page or none);
    ``base``: the path the server serves the app under (``server.baseUrlPath``)."""

    path = urlsplit(url).path.strip("/")
    base = base.strip("/")
    if base and (path == base or path.startswith(base + "/")):
        path = path[len(base):]
    last = path.rsplit("/", 1)[-1]
    known = {page.url_path for page in ALL_PAGES}
    return "" if not last or last in known else unquote(last)


def restore_page(spec: PageSpec) -> None:
    """Second step, once the page is known: the text and the page's own widgets."""
    if st.session_state.get(RESTORED):
        return
    st.session_state[RESTORED] = True

    params = st.query_params
    max_chars = limits().max_chars
    texts = (("text", "text", str), ("target", "target", str)) if spec.reads_text else ()
    for param, key, convert in (*texts, *spec.link):
        value = _first(params, param)
        if value is None:
            continue
        try:
            st.session_state[key] = value[:max_chars] if convert is str else convert(value)
        except ValueError:
            _note(N_("The link's {name} “{value}” is not a number; the default is shown."),
                  name=PARAMETER_NAMES.get(param, param), value=value[:20])
            continue
        widgets.from_link(key)  # a value the widget does not offer is said when it is drawn


def notes() -> None:
    """Say, once, what the link asked for that this view cannot show."""
    for template, fields in st.session_state.pop(NOTES, []):
        name = fields.get("name")  # (read first: Babel would take a literal key for a message)
        if name is not None:
            fields = {**fields, "name": _(name)}
        st.warning(literal(_(template).format(**fields)), icon=":material/link_off:")


def current(spec: PageSpec, text: str | None, uploaded: bool) -> tuple[dict[str, str], str]:
    """The parameters of a link to this view, and why part of it was left out ("" if
    nothing was)."""

    model_spec, device = settings()
    params = {"lang": i18n.language()}
    if st.session_state.get("present"):
        params["present"] = "1"
    if st.session_state.get("palette") not in (None, "default"):
        params["palette"] = str(st.session_state["palette"])
    if model_spec:
        params["model"] = model_spec
    if device != "auto":
        params["device"] = str(device)
    if precision() != "auto":
        params["dtype"] = precision()
    left_out = ""
    if spec.reads_text:
        if uploaded:
            left_out = _("A link cannot carry an uploaded file: it opens this view with the "
                         "text box's text.")
        if text is not None:
            params["text"] = text
        target = str(st.session_state.get("target", "")).strip()
        if target:
            params["target"] = target
    for param, key, convert in spec.link:
        if key in st.session_state and st.session_state[key] is not None:
            value = st.session_state[key]
            if convert is flag:
                value = "1" if value else "0"
            if convert is not str or str(value).strip():  # an empty text box is no parameter
                params[param] = str(value)
    if len(urlencode(params)) > MAX_QUERY:
        texts = sorted((name for name in TEXT_PARAMS if name in params),
                       key=lambda name: -len(params[name]))
        for name in texts:  # the longest texts go first, until the link fits
            del params[name]
            if len(urlencode(params)) <= MAX_QUERY:
                break
        left_out = _("This text is too long for a link (links hold about {limit:,} characters "
                     "once encoded): the link opens this view with the default text. Download "
                     "the trace (.npz) or the figures to share it.").format(limit=MAX_QUERY)
    return params, left_out


def publish(spec: PageSpec, text: str | None, uploaded: bool = False) -> tuple[str, str]:
    """Write this view into the URL's parameters; return the whole link and why part of it
    was left out ("" if nothing was)."""
    params, left_out = current(spec, text, uploaded)
    if dict(st.query_params.to_dict()) != params:
        st.query_params.from_dict(params)
    return _address(spec) + "?" + urlencode(params), left_out


def _address(spec: PageSpec) -> str:
    """The page's address: the server's origin and the app's path, as the browser opened it
    (a base path kept; the page it opened, known or not, replaced by ``spec``'s)."""
    return f"{app_root()}/{spec.url_path}"


def app_root() -> str:
    """The app's address without a page: the server's origin and its base path, as the
    browser opened it."""
    url = st.context.url or ""
    parts = urlsplit(url)
    base = f"{parts.scheme}://{parts.netloc}" if parts.scheme and parts.netloc else ""
    path = parts.path.rstrip("/")
    last = path.rsplit("/", 1)[-1]
    if last and (last in _page_paths() or unknown_page(
            url, st.get_option("server.baseUrlPath") or "")):
        path = path[:-len(last)].rstrip("/")
    return f"{base}{path}"


def _page_paths() -> list[str]:

    return [page.url_path for page in ALL_PAGES]


# Streamlit's page pushes a new history entry whenever the app changes the URL's parameters
# (``handlePageInfoChanged``), and :func:`publish` changes them on every run that changes the
# view, twice after a page switch (Streamlit clears them before it switches, then the new page
# writes its own): going from a lesson's "See it" to Explore took three presses of Back to
# undo, and every widget changed on a page one more, each reopening the same view (a session
# reads its link once). This makes a change of the parameters on the same page replace the
# page's entry, so that the history holds one entry per page visited; a change of page
# (Streamlit's own push, to another path) still pushes. It is installed once per browser page
# (a script element rendered again does not run again, and the flag keeps a second copy from
# wrapping the first). The first page a tab opens keeps the entry it was opened with, bare,
# before its parameters: the first run writes them before the script has run.
ONE_ENTRY_PER_PAGE = """<script>
(() => {
  if (window.__attentionExplorerHistory) return;
  window.__attentionExplorerHistory = true;
  const push = window.history.pushState.bind(window.history);
  window.history.pushState = function (state, title, url) {
    try {
      const next = new URL(url, window.location.href);
      if (next.origin === window.location.origin
          && next.pathname === window.location.pathname) {
        return window.history.replaceState(state, title, url);
      }
    } catch (error) { /* a URL it cannot read: as Streamlit asked */ }
    return push(state, title, url);
  };
})();
</script>"""
# A code block's copy button floats over its top right corner (24 px, 12 px from the edge, on
# hover): the link's text keeps out of that corner, so no character of it (the port, at the end
# of the first line in the narrow sidebar) is ever under the button. (The panel is drawn twice
# a run into one slot, so its container cannot carry a key to select it by: the sidebar's code
# blocks are the link's.) The element of the script and this style (nothing else: nothing to
# see) takes no gap in the sidebar.
PANEL_STYLE = """<style>
[data-testid="stSidebar"] [data-testid="stCode"] pre { padding-right: 2.75rem; }
[data-testid="stElementContainer"]:has(> [data-testid="stHtml"] > script:first-child
                                        + style:last-child) { display: none; }
</style>"""


def panel(spec: PageSpec, slot, uploaded: bool = False) -> None:
    """The link to this view in ``slot`` (in the sidebar), with a copy button, and what it
    leaves out; the history keeps one entry per page visited (:data:`ONE_ENTRY_PER_PAGE`)."""

    try:
        text = current_text()[0] if spec.reads_text else None
    except ValueError:  # a file that cannot be read: the page said so
        text = None
    link, left_out = publish(spec, text, uploaded)
    with slot.container():
        st.html(ONE_ENTRY_PER_PAGE + PANEL_STYLE, unsafe_allow_javascript=True)
        with st.expander(_("Link to this view"), icon=":material/link:"):
            st.caption(_("Opens this page with the same model, text, language and settings. "
                         "Copy it with the button at its right."))
            st.code(link, language=None, wrap_lines=True)
            if left_out:
                st.info(left_out)
