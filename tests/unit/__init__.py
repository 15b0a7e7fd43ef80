"""Functions, figures, models and the CLI, without a page."""
