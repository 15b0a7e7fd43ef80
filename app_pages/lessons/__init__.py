"""The lessons, one page per lesson in the seed's order, with their shared header and footer
(:mod:`.lesson`); each lesson's numbers come from :mod:`model.lessons` and figures from
:mod:`viz.lessons`."""
