"""The lessons, one page per lesson in the seed's order, each named as its numbers in
:mod:`model.lessons` and its figures in :mod:`viz.lessons`.

In the navigation's order: :mod:`.architecture` (§3.2 the architecture), :mod:`.positions`
(§3.4 why positions), :mod:`.see_it` (§3.4 who looks at whom), :mod:`.generation` (§3.4
generation and the KV cache), :mod:`.families` (§3.7 three families), :mod:`.qkv` (§4.2 query,
key, value), :mod:`.hand` (§4.3 by hand), :mod:`.scaling` (§4.4 why divide by √d_k),
:mod:`.multihead` (§4.6 multi-head) and :mod:`.complexity` (§4.8 complexity). Shared:
:mod:`.lesson`, every lesson's header and its previous / next links.
"""
