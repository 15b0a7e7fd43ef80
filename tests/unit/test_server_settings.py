"""The server's Streamlit settings, as Streamlit itself reads them from the project's
``.streamlit/config.toml`` when started from the project's folder (``make run``, the tests'
``served_app``)."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.helpers import ROOT

READ = """
import json
from streamlit import config
config.get_config_options(force_reparse=True)
print(json.dumps({name: config.get_option(name) for name in (
    "runner.postScriptGC", "server.address", "browser.gatherUsageStats")}))
"""


def test_streamlit_reads_the_projects_settings_no_collection_after_each_run():
    # Streamlit's default collects all garbage generations after every script run; with the
    # models loaded that froze a live class (fragments rerun every second on every phone)
    out = subprocess.run([sys.executable, "-c", READ], cwd=ROOT, capture_output=True,
                         text=True, check=True, timeout=120).stdout
    options = json.loads(out.strip().splitlines()[-1])
    assert options == {"runner.postScriptGC": False, "server.address": "127.0.0.1",
                       "browser.gatherUsageStats": False}

