"""Alembic's environment for the class database: run on the connection the store hands over
(``config.attributes["connection"]``), never on a URL of its own."""

from alembic import context

from app_pages.live.store import metadata

connection = context.config.attributes["connection"]
context.configure(connection=connection, target_metadata=metadata)
with context.begin_transaction():
    context.run_migrations()
