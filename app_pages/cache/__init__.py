"""What the server keeps between reruns and sessions: loaded models, traces and pages' results,
shared between sessions, one computation at a time per session, within the server's limits.

- :mod:`.getters`: every result a page asks for, one getter each (all of the app's Streamlit
  caching);
- :mod:`.shared`: the one cache of traces and analyses every session shares, bounded in bytes,
  and the slots that bound the computations running at once;
- :mod:`.limits`: the server's limits (``ATTENTION_EXPLORER_*``) and the checks made with them
  before anything runs;
- :mod:`.memory`: freed memory given back to the system;
- :mod:`.preload`: the models loaded as the server starts (``ATTENTION_EXPLORER_PRELOAD``).
"""
