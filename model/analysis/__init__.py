"""Numbers computed from a trace and a loaded model's interface, in numpy (positions use the
seed's torch formulas of :mod:`model.own.position_encoding`); never imports transformers,
streamlit or :mod:`model.hf`.

- :mod:`.statistics`: per-head statistics, aggregates over heads, span-to-span attention;
- :mod:`.rollout`: attention rollout through a stack;
- :mod:`.faithfulness`: what attention moves beside what it weighs (weight × ‖value after
  W_O‖, the sink left out and the rows renormalised, value zeroing's scores, norm-based
  rollout);
- :mod:`.moves`: the "What moves" view on any model that offers its attention's parts: the four
  methods side by side, heads ranked by ablation, the query–key map, the export's extra arrays;
- :mod:`.costs`: tensor shapes, parameter split, attention and KV-cache sizes;
- :mod:`.positions`: the sinusoidal table, RoPE and the loaded model's own positions;
- :mod:`.cuts`: what each page draws, cut from a trace (query rows, a window, a generation step,
  colour ceilings, the stages of a training run);
- :mod:`.tokens`: what a tokenizer lost or split of the input (unknown tokens, byte pieces);
- :mod:`.questions`: a live class's questions, built from the trace (the model's answer kept
  for the reveal).

The statistics and rollout are importable from here too, as before the package had rooms.
"""

from model.analysis.rollout import rollout
from model.analysis.statistics import STATS, aggregate, head_stats, span_attention

__all__ = ["STATS", "aggregate", "head_stats", "rollout", "span_attention"]
