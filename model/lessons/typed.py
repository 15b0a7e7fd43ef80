"""Numbers a person types into a lesson (a table cell, a number box), checked: shared by the
hand calculation (:mod:`.hand`) and the scaling lesson (:mod:`.scaling`)."""

from __future__ import annotations

import math

from i18n import _

LARGEST_INPUT = 100.0  # larger numbers are no hand calculation (and eˣ would overflow)


def checked_number(value, what: str) -> float:
    """A number a person typed: ``value`` as a float from −:data:`LARGEST_INPUT` to
    :data:`LARGEST_INPUT`, or a ValueError naming ``what`` and the accepted range (an empty
    cell or box, text, NaN, infinity, or a number too large for arithmetic by hand; a number box
    holds None for an empty box and for what it cannot hold: NaN, ±∞)."""
    if value is None or (isinstance(value, str) and not value.strip()):
        raise ValueError(_("{what} is empty or not a number: write a number from −{limit:g} "
                           "to {limit:g}.").format(what=what, limit=LARGEST_INPUT))
    if isinstance(value, bool):
        raise ValueError(_("{what} holds “{value}”, which is not a number.").format(
            what=what, value=value))
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ValueError(_("{what} holds “{value}”, which is not a number.").format(
            what=what, value=str(value)[:20])) from None
    if math.isnan(number):
        raise ValueError(_("{what} is empty or not a number: write a number from −{limit:g} "
                           "to {limit:g}.").format(what=what, limit=LARGEST_INPUT))
    if not abs(number) <= LARGEST_INPUT:
        raise ValueError(_("{what} is {value}: keep every number between −{limit:g} and "
                           "{limit:g}.").format(what=what, value=f"{number:g}",
                                                limit=LARGEST_INPUT))
    return number
