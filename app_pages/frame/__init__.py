"""The frame every page sits in.

- :mod:`.settings`: the settings every page shares (language, presentation mode, model, device,
  text) in session state, their defaults and names;
- :mod:`.sidebar`: the shared sidebar that sets them, and the model and text box at the top
  of the pages that read text;
- :mod:`.classroom`: presentation mode's large text, the keys that step a page from
  anywhere, and tables a projector can read;
- :mod:`.run`: the run of the chosen model on the sidebar's text, through the cache;
- :mod:`.errors`: an expected error explained as one message on the page (a leaf: the cache
  uses it too);
- :mod:`.charts`: every figure drawn through one function, bounded, with its exports;
- :mod:`.controls`: controls several pages share (attention kind, metric, token window, step);
- :mod:`.widgets`: widgets that survive their options changing;
- :mod:`.events`: chart selection events, parsed in one place;
- :mod:`.links`: links that reopen a view (the URL's query parameters);
- :mod:`.markdown`: user text shown in markdown as it is;
- :mod:`.sink`: the heatmap pages' sink toggle (the sink left out, rows renormalised, the mass
  left out said);
- :mod:`.navigation`: the pages, in navigation order, with their URL paths;
- :mod:`.live`: a live class on the teacher's pages (start, the join code and QR code, the
  questions a page prepares, the live count and the reveal).
"""
