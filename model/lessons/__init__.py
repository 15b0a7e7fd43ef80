"""What the lessons compute, one module per lesson named as its page in
:mod:`app_pages.lessons` and its figures in :mod:`viz.lessons`.

In the lesson text's order: :mod:`.company` (§3.1 the translation company: the encoder's notes
and the decoder's look back at them), :mod:`.architecture` (§3.2–3.3, each Add & Norm's
residual stream), :mod:`.positions` (§3.4 why positions: the encoder with and without them, on
shuffled words), :mod:`.see_it` (§3.4 who looks at whom: the head where a pair's weight is
largest), :mod:`.masks` (§3.4 every mask: four masks on one head's scores, and a padded batch),
:mod:`.generation` (§3.4/3.8 generation and the KV cache), :mod:`.rnn` (§3.6 RNN against
Transformer: the own recurrent models' translations, forgetting by length, the gradient by
distance and the serial steps timed), :mod:`.families` (§3.7 the three families),
:mod:`.troubles` (§3.8 the Transformer's own troubles: attention's time against n, the KV cache
of MHA / GQA / MLA, reading past the training length, MoE's parameters), :mod:`.average` (§4.1
a weighted average, and the head where it → cat), :mod:`.qkv` (§4.2 one token's query, keys and
values), :mod:`.hand` (§4.3 attention by hand), :mod:`.scaling` (§4.4 why divide by √d_k),
:mod:`.all_at_once` (§4.5 every word at once: the loop against one product, timed),
:mod:`.multihead` (§4.6 one layer's heads from the split to W_O), :mod:`.kinds` (§4.7 the three
kinds of attention, the table derived from a trace), :mod:`.complexity` (§4.8 n²·d against
n·d²), :mod:`.implementation` (§4.9 the lesson's listing, run line by line) and
:mod:`.panorama` (§5.1–5.2 the panorama: the table's rows measured and counted, the path
lengths).

Shared: :mod:`.network` (the own network re-run with hooks, and the checks of a layer, head and
kind), :mod:`.source` (the lessons' code read from its live source, once, safely from several
sessions at once) and :mod:`.typed` (numbers a person types, checked). This room may use
:mod:`model.own`, never the Hugging Face room.
"""
