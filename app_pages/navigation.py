"""The app's pages, in navigation order, each declaring whether it reads the sidebar's text."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class PageSpec:
    """One page of the navigation.

    Args:
        path: the page's script, relative to the app's folder.
        title, icon: as shown in the navigation.
        group: the navigation section.
        reads_text: the page analyses the sidebar's shared text (else the sidebar hides it).
        default: the page a bare URL opens.
    """

    path: str
    title: str
    icon: str
    group: str
    reads_text: bool = True
    default: bool = False


START = "Start"
LOOK = "Look at attention"
PARTS = "Understand the parts"
PAGES = (
    PageSpec("app_pages/start.py", "Start here", "👋", START, reads_text=False, default=True),
    PageSpec("app_pages/translate.py", "Translate", "🈯", START, reads_text=False),
    PageSpec("app_pages/explore.py", "Explore", "🔍", START),
    PageSpec("app_pages/model_view.py", "Model view", "🧱", LOOK),
    PageSpec("app_pages/head_view.py", "Head view", "🔗", LOOK),
    PageSpec("app_pages/mask.py", "Causal mask", "🎭", LOOK),
    PageSpec("app_pages/rollout.py", "Rollout", "🌊", LOOK),
    PageSpec("app_pages/stats.py", "Head statistics", "📊", LOOK),
    PageSpec("app_pages/positions.py", "Positions", "🕰️", PARTS, reads_text=False),
    PageSpec("app_pages/shapes.py", "Shapes and costs", "📐", PARTS),
)
