"""Start the app's server: ``python -m app_pages.serve run app.py [Streamlit's options]`` is
``streamlit run`` with room for long links, and the lessons' models loaded as it starts.

A link holds the view's text (up to the server's ``max_chars``, 100,000 characters by default),
and one such link, percent-encoded, is a request line of up to a few megabytes. Streamlit
serves with uvicorn, whose HTTP parser (h11) refuses a request head longer than 16 KiB with a
bare "400 Bad Request" page; Streamlit has no option for it. This launcher raises uvicorn's
``h11_max_incomplete_event_size`` (its documented setting) for Streamlit's server, so such a
link opens the app, which cuts the text to ``max_chars`` and says that the text is too long for
a link (:mod:`app_pages.frame.links`).

While the server starts, a background thread loads the models of ``ATTENTION_EXPLORER_PRELOAD``
(the own translator, minilm and smollm2 unless told otherwise; :mod:`app_pages.cache.preload`),
so that the first visitor of a page does not wait for them.
"""

from __future__ import annotations

import sys

# The longest request head the server reads: a link with the longest text and target
# (100,000 characters each, up to 12 bytes a character once percent-encoded), with room to
# spare; Chromium sends no address longer than 2 MB anyway. Only a request still arriving is
# held this long, and a WebSocket message may already be far larger (server.maxMessageSize).
MAX_REQUEST_HEAD = 4 << 20


def allow_long_links(size: int = MAX_REQUEST_HEAD) -> None:
    """Make every uvicorn server started from now on read request heads of ``size`` bytes,
    unless it is configured otherwise."""
    import uvicorn

    if getattr(uvicorn.Config, "_long_links", False):
        return

    class Config(uvicorn.Config):
        _long_links = True

        def __init__(self, *args, **kwargs):
            if kwargs.get("h11_max_incomplete_event_size") is None:
                kwargs["h11_max_incomplete_event_size"] = size
            super().__init__(*args, **kwargs)

    uvicorn.Config = Config  # Streamlit's server looks it up on the module when it starts


def main() -> None:
    """``streamlit`` with the same arguments, long links allowed; ``run`` preloads the models."""
    allow_long_links()
    if sys.argv[1:2] == ["run"]:
        from app_pages.cache import preload

        preload.start()
    from streamlit.web.cli import main as streamlit

    sys.exit(streamlit(prog_name="streamlit"))


if __name__ == "__main__":
    main()
