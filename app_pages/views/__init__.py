"""The thirteen pages that look at a model's attention: thin scripts that read the frame's
settings, ask the cache, and draw with viz/.

In the navigation's order: :mod:`.start` (Start here), :mod:`.translate`, :mod:`.explore`,
:mod:`.model_view`, :mod:`.head_view`, :mod:`.mask` (Causal mask), :mod:`.rollout`,
:mod:`.moves` (What moves), :mod:`.stats` (Head statistics), :mod:`.corpus`,
:mod:`.compare`, :mod:`.positions` and :mod:`.shapes` (Shapes and costs).

Outside the navigation, opened by their links, a live class's two pages: :mod:`.join` (a
student's phone) and :mod:`.class_room` (the teacher's class: how to join, the live question).
"""
