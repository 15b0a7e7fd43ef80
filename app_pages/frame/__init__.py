"""The frame every page sits in: settings and the sidebar, the run of the chosen model, charts
and their exports, controls and widgets, chart events, links and the navigation."""
