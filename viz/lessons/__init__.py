"""The lessons' figures (numpy and plotly only, like the rest of viz/), one module per lesson
named as its page in :mod:`app_pages.lessons` and its numbers in :mod:`model.lessons`.

Per lesson: :mod:`.architecture`, :mod:`.positions`, :mod:`.see_it`, :mod:`.generation`,
:mod:`.families`, :mod:`.qkv`, :mod:`.hand`, :mod:`.scaling`, :mod:`.multihead` and
:mod:`.complexity`; also :mod:`.company` (§3.1) and :mod:`.kinds` (§4.7).
Also :mod:`.implementation` (§4.9: the listing's shapes and numbers as text).
Also :mod:`.average` (§4.1) and :mod:`.all_at_once` (§4.5).
Also :mod:`.masks` (§3.4 every mask: scores, mask, softmax).
Also :mod:`.troubles` (§3.8: time and memory against n, KV caches, accuracy by length, MoE).
Shared: :mod:`.layout` (narrow charts' ticks, hover lines, the blocks' fills,
arrows, a diverging range) and :mod:`.numbers` (how the lessons write numbers).
"""
