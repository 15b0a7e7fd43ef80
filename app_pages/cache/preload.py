"""Models loaded when the server starts, before anyone asks for them: the first visitor of the
Start page and of lesson 3.7 (which runs three models side by side, and on a fresh server waited
for them one after another) finds them loaded, and the default sentence traced by each.

``ATTENTION_EXPLORER_PRELOAD`` names them, separated by commas (default :data:`PRELOAD`: the
own translator, minilm and smollm2); ``off`` loads none. ``python -m app_pages.serve run``
loads them in a background thread once Streamlit's runtime is up (its options read), one at a
time, into the cache of models the pages use (:func:`app_pages.cache.getters.get_model`), on the
device ``auto`` means; a page that asks for one meanwhile waits for that load instead of
starting its own. A model that cannot load is written to the server's log; a page that asks for
it says why.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Iterable, Mapping

VARIABLE = "ATTENTION_EXPLORER_PRELOAD"
# The Start page's model and the three families of lesson 3.7 (smollm2 converts its GGUF file
# on a server's first load, then reads the converted copy).
PRELOAD = ("own-translator", "minilm", "smollm2")
# Traced by each as it loads: the pages' default sentence (app_pages.frame.settings.DEFAULT_TEXT,
# which the cache may not import: it sits beneath the frame; a test keeps the two the same).
TEXTS = ("The cat sat on the mat",)
OFF = ("", "0", "off", "false", "no", "none")

log = logging.getLogger("attention_explorer")


def preload_specs(environ: Mapping[str, str] = os.environ) -> tuple[str, ...]:
    """The models to load when the server starts, from ``ATTENTION_EXPLORER_PRELOAD`` (unset:
    :data:`PRELOAD`; ``off``: none), each named once, in order."""
    value = environ.get(VARIABLE)
    if value is None:
        return PRELOAD
    if value.strip().lower() in OFF:
        return ()
    return tuple(dict.fromkeys(spec.strip() for spec in value.split(",") if spec.strip()))


def preload(specs: Iterable[str], device: str = "auto",
            texts: Iterable[str] | None = None) -> dict[str, float]:
    """Load each of ``specs`` into the pages' cache of models, one after another, and trace
    ``texts`` with it into the shared cache of traces (default: :data:`TEXTS`); return the
    seconds each model took (the ones that loaded; the others are in the log)."""
    import pandas  # noqa: F401  (before plotly is drawn with: see app.py)

    from app_pages.cache.getters import get_trace, load_model

    texts = TEXTS if texts is None else tuple(texts)
    took = {}
    for spec in specs:
        started = time.perf_counter()
        try:
            load_model(spec, device)
            for text in texts:
                get_trace(spec, device, text, quiet=True)
        except Exception:  # the server goes on; a page asking for it says why
            log.exception("could not preload %r", spec)
            continue
        took[spec] = time.perf_counter() - started
        log.info("preloaded %s in %.1f s", spec, took[spec])
    return took


def _when_serving(specs: tuple[str, ...], poll: float = 0.2) -> None:
    from streamlit.runtime import Runtime

    while not Runtime.exists():  # the command line's options are read before it is made
        time.sleep(poll)
    preload(specs)


def start(specs: Iterable[str] | None = None) -> threading.Thread | None:
    """Preload ``specs`` (default: :func:`preload_specs`) in a background thread once the
    server runs; None when there is nothing to load."""
    specs = preload_specs() if specs is None else tuple(specs)
    if not specs:
        return None
    thread = threading.Thread(target=_when_serving, args=(specs,), name="preload", daemon=True)
    thread.start()
    return thread
