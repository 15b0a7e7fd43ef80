"""The Streamlit side of the app: thin pages (widgets, cached loads, figures), listed explicitly
in app.py.

- :mod:`.frame`: what every page sits in (settings, the sidebar, the run, charts, links, the
  navigation);
- :mod:`.cache`: all Streamlit caching and the server's limits;
- :mod:`.views`: the twelve pages that look at a model's attention;
- :mod:`.lessons`: one page per lesson;
- :mod:`.live`: the live class's database (classes, students, questions, answers);
- :mod:`.serve`: starts the server (``make run``) with room for a long link's request line.

Named app_pages, not pages: Streamlit runs a `pages/` folder beside the main script as an
old-style multipage app on a fresh server's first request, bypassing app.py.
"""
