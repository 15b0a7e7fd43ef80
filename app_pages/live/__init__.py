"""A live class: the teacher's class, its students, questions and answers (its settings:
docs/operating.md).

:mod:`app_pages.live.store` keeps them in a database through SQLAlchemy and imports no
streamlit, so that the store is tested, and can be operated, without a page."""
