"""Lesson page (being written): its header and previous / next links."""

from __future__ import annotations

from app_pages.frame.navigation import script
from app_pages.lessons.lesson import footer, header

PATH = script("lesson_average")

header(PATH)
footer(PATH)
