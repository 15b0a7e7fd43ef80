"""A live class: the teacher's class, its students, questions and answers (its settings:
docs/operating.md).

- :mod:`.store` keeps them in a database through SQLAlchemy;
- :mod:`.join`: the join link, its QR code and the teacher's private link.

Neither imports streamlit, so that both are tested, and can be operated, without a page."""
