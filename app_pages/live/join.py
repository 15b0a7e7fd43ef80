"""How a student reaches a class: the join link, its QR code, and the teacher's private link.

The QR code is drawn by segno (ISO 18004, error correction M: a projector's glare or a finger
over a corner still reads); no streamlit here, so that the code a page shows is the code
tested."""

from __future__ import annotations

import urllib.parse

import numpy as np
import segno

from app_pages.live.store import normalise_code

JOIN_PATH = "join"  # the student's page (url_path)
CLASS_PATH = "class"  # the teacher's page


def join_link(base_url: str, code: str, lang: str = "") -> str:
    """The link a student opens: the join page with the class's code filled in (and the
    page's language, when one is given)."""
    query = urllib.parse.urlencode({"code": normalise_code(code), **({"lang": lang} if lang
                                                                     else {})})
    return f"{base_url.rstrip('/')}/{JOIN_PATH}?{query}"


def teacher_link(base_url: str, teacher_key: str) -> str:
    """The teacher's private link: whoever opens it can ask, reveal, close and export."""
    query = urllib.parse.urlencode({"teacher": teacher_key})
    return f"{base_url.rstrip('/')}/{CLASS_PATH}?{query}"


def qr_code(link: str) -> segno.QRCode:
    return segno.make_qr(link, error="m")


def qr_svg(link: str, scale: int = 8, dark: str = "#000", light: str = "#fff") -> str:
    """The link's QR code as inline SVG, dark on light whatever the page's theme (a scanner
    needs the contrast), with the standard quiet zone of 4 modules."""
    return qr_code(link).svg_inline(scale=scale, dark=dark, light=light, border=4)


def qr_pixels(link: str, scale: int = 4) -> np.ndarray:
    """The QR code as a greyscale image (0 dark, 255 light), quiet zone included."""
    modules = np.array(list(qr_code(link).matrix_iter(scale=scale, border=4)), dtype=bool)
    return np.where(modules, 0, 255).astype(np.uint8)
