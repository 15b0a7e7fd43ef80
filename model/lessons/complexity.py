"""Numbers of the lesson §4.8, the complexity of attention against a recurrent layer:
:func:`operation_counts` gives n²·d and n·d² for a chosen n and d."""

from __future__ import annotations

from dataclasses import dataclass

from i18n import _


@dataclass(frozen=True)
class Operations:
    """Operations per layer at length ``n`` and width ``d`` (seed 4.8)."""

    n: int
    d: int
    attention: int  # n²·d
    recurrent: int  # n·d²

    @property
    def ratio(self) -> float:
        """n·d² / n²·d = d / n: how many times more work the recurrent layer does."""
        return self.recurrent / self.attention


def operation_counts(n: int, d: int) -> Operations:
    """n²·d (self-attention) and n·d² (a recurrent layer) for ``n`` tokens of width ``d``."""
    if n < 1 or d < 1:
        raise ValueError(_("n and d must be at least 1"))
    n, d = int(n), int(d)
    return Operations(n=n, d=d, attention=n * n * d, recurrent=n * d * d)
