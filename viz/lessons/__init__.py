"""The lessons' figures (numpy and plotly only, like the rest of viz/), one module per lesson
named as its page in :mod:`app_pages.lessons` and its numbers in :mod:`model.lessons`.

In the lesson text's order: :mod:`.company` (§3.1), :mod:`.architecture` (§3.2),
:mod:`.positions`, :mod:`.see_it`, :mod:`.masks` (scores, mask, softmax) and
:mod:`.generation` (§3.4), :mod:`.rnn` (§3.6: forgetting by length, the gradient by distance,
one pass timed), :mod:`.families` (§3.7), :mod:`.troubles` (§3.8: time and memory against n,
KV caches, accuracy by length, MoE), :mod:`.average` (§4.1), :mod:`.qkv` (§4.2), :mod:`.hand`
(§4.3), :mod:`.scaling` (§4.4), :mod:`.all_at_once` (§4.5), :mod:`.multihead` (§4.6),
:mod:`.kinds` (§4.7), :mod:`.complexity` (§4.8), :mod:`.implementation` (§4.9: the listing's
shapes and numbers as text) and :mod:`.panorama` (§5.1–5.2: the information path against n).

Shared: :mod:`.layout` (narrow charts' ticks, hover lines, the blocks' fills, arrows, a
diverging range) and :mod:`.numbers` (how the lessons write numbers).
"""
