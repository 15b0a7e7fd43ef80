"""The lessons, one page per lesson in the seed's order, each named as its numbers in
:mod:`model.lessons` and its figures in :mod:`viz.lessons`.

In the navigation's order: :mod:`.company` (§3.1 a translation company), :mod:`.architecture`
(§3.2 the architecture), :mod:`.positions` (§3.4 why positions), :mod:`.see_it` (§3.4 who looks
at whom), :mod:`.masks` (§3.4 every mask), :mod:`.generation` (§3.4 generation and the KV
cache), :mod:`.rnn` (§3.6 RNN against Transformer), :mod:`.families` (§3.7 three families),
:mod:`.troubles` (§3.8 the Transformer's own troubles), :mod:`.average` (§4.1 a weighted
average), :mod:`.qkv` (§4.2 query, key, value), :mod:`.hand` (§4.3 by hand), :mod:`.scaling`
(§4.4 why divide by √d_k), :mod:`.all_at_once` (§4.5 every word at once), :mod:`.multihead`
(§4.6 multi-head), :mod:`.kinds` (§4.7 three kinds of attention), :mod:`.complexity` (§4.8
complexity), :mod:`.implementation` (§4.9 the minimal implementation) and :mod:`.panorama`
(§5.1–5.2 the panorama). Shared: :mod:`.lesson`, every lesson's header and its previous / next
links.
"""
