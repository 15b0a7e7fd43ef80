"""The app's two languages, English and 中文, from one gettext catalog per language.

Every string a user sees is written in English in the code, wrapped in ``_()`` (or ``N_()``
where it is only marked, and translated later), and translated through the Chinese catalog
``i18n/locales/zh/LC_MESSAGES/messages.po``. The English text is the gettext key, so English
needs no catalog of its own. Babel manages the catalogs (``make catalog`` extracts the marked
strings into ``messages.pot`` and updates the Chinese catalog; a test fails when a marked string
has no Chinese text).

Every layer uses this package (the pages, the figures of ``viz/`` and the errors of
``model/``), so it sits beneath them all and imports nothing of the app. The language is a
context variable: each Streamlit session's run sets its own (``use``), so sessions running at
once in one server never see each other's language; the command line and the Python API speak
English unless told otherwise.

Placeholders are ``str.format`` fields: ``_("Layer {layer}").format(layer=3)``; a test checks
that every translation keeps its original's fields.
"""

from __future__ import annotations

import contextvars
import gettext
import io
import threading
from contextlib import contextmanager
from pathlib import Path

LANGUAGES = {"en": "English", "zh": "中文"}
DEFAULT = "en"
DOMAIN = "messages"
LOCALES = Path(__file__).parent / "locales"
CATALOG = LOCALES / "zh" / "LC_MESSAGES" / f"{DOMAIN}.po"
TEMPLATE = LOCALES / f"{DOMAIN}.pot"

_language: contextvars.ContextVar[str] = contextvars.ContextVar("language", default=DEFAULT)
_translations: dict[str, gettext.NullTranslations] = {}
_lock = threading.Lock()
# Strings asked for that the current catalog lacks (tests read it; see ``missing``).
_missing: set[str] = set()


def _load(language: str) -> gettext.NullTranslations:
    """The translations of ``language``, compiled once from its ``.po`` catalog by Babel (the
    catalog is the source of truth: no compiled ``.mo`` file is kept beside it)."""
    found = _translations.get(language)
    if found is not None:  # read without the lock: every string of every page asks
        return found
    with _lock:
        if language not in _translations:
            if language == DEFAULT:
                _translations[language] = gettext.NullTranslations()
            else:
                from babel.messages.mofile import write_mo
                from babel.messages.pofile import read_po

                path = LOCALES / language / "LC_MESSAGES" / f"{DOMAIN}.po"
                with path.open("rb") as source:
                    catalog = read_po(source, locale=language, domain=DOMAIN)
                compiled = io.BytesIO()
                write_mo(compiled, catalog, use_fuzzy=False)
                compiled.seek(0)
                _translations[language] = gettext.GNUTranslations(compiled)
        return _translations[language]


def normalise(value: object) -> str | None:
    """The language code a URL parameter or a browser locale names (``"zh-CN"`` → ``"zh"``),
    or None when it names none of ours."""
    code = str(value or "").strip().lower().replace("_", "-").split("-")[0]
    return code if code in LANGUAGES else None


def language() -> str:
    """The language of the current run (``"en"`` or ``"zh"``)."""
    return _language.get()


def set_language(code: str) -> None:
    """Speak ``code`` from now on in this context (a session's run, a thread)."""
    if code not in LANGUAGES:
        raise ValueError(f"unknown language {code!r}; this app speaks {', '.join(LANGUAGES)}")
    _language.set(code)


@contextmanager
def use(code: str):
    """Speak ``code`` inside the block."""
    if code not in LANGUAGES:
        raise ValueError(f"unknown language {code!r}; this app speaks {', '.join(LANGUAGES)}")
    token = _language.set(code)
    try:
        yield
    finally:
        _language.reset(token)


def _(message: str) -> str:
    """``message`` in the current language (the English text itself in English)."""
    code = _language.get()
    if code == DEFAULT or not message:
        return message
    translation = _load(code)
    translated = translation.gettext(message)
    if translated is message and message not in getattr(translation, "_catalog", {}):
        _missing.add(message)
    return translated


def N_(message: str) -> str:
    """Mark ``message`` for the catalog without translating it yet (module-level constants,
    translated with ``_()`` where they are shown)."""
    return message


def missing() -> set[str]:
    """The strings asked for in another language that its catalog lacks (a test empties and
    reads this after rendering every page in Chinese)."""
    return _missing


__all__ = ["DEFAULT", "LANGUAGES", "N_", "_", "language", "missing", "normalise", "set_language",
           "use"]
