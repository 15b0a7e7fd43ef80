"""Numbers computed from a trace and a loaded model's interface (numpy, and torch only to count
parameters); never imports transformers, streamlit or :mod:`model.hf`.

- :mod:`.statistics`: per-head statistics, aggregates over heads, span-to-span attention;
- :mod:`.rollout`: attention rollout through a stack;
- :mod:`.costs`: tensor shapes, parameter split, attention and KV-cache sizes;
- :mod:`.positions`: the sinusoidal table, RoPE and the loaded model's own positions;
- :mod:`.views`: what each page draws, cut from a trace (a layer, a window, a generation step).
"""
