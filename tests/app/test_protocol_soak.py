"""The protocol soak (``bench.protocol_soak``): its client speaks Streamlit's websocket protocol
well enough to walk the served app, two sessions at once, each drawing charts with no failure."""

from __future__ import annotations

import json

import pytest


@pytest.mark.slow
def test_two_protocol_sessions_walk_the_served_app(tmp_path, monkeypatch):
    from bench import protocol_soak

    monkeypatch.setenv("STREAMLIT_SERVER_FILE_WATCHER_TYPE", "none")
    out = tmp_path / "soak.json"
    assert protocol_soak.main(["--sessions", "2", "--timeout", "90", "--max-seconds", "150",
                               "--json", str(out)]) == 0
    fig = json.loads(out.read_text(encoding="utf-8"))

    assert fig["failures"] == 0, fig["problems"]
    assert fig["aborted_sessions"] == {}
    assert len(fig["by_session"]) == 2
    for session in fig["by_session"]:
        # the whole walk: start page, Explore, text, layer, head, two links, another page, ...
        assert session["actions"] >= 10
        assert session["actions_with_chart"] == session["actions"], session
    # every run was timed to its first chart and to its end, the second never before the first
    for action in fig["by_action"].values():
        chart, finished = action["to_chart_s"], action["to_finished_s"]
        assert chart["n"] == finished["n"] == action["actions"]
        assert 0 < chart["p50"] <= finished["max"]
    assert fig["server_rss_gb"]["peak"] > 0.1  # the served app's memory was sampled
    assert fig["server_cpu"]["user_s"] > 0
