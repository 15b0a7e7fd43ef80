"""A live class in Chromium, timed: the teacher's projector (1920×1080, presentation mode, 中文)
asks Explore's question; students join one after another on phones (390×844) and tap; for each
tap, the seconds until the teacher's count shows it, without a reload.

    .venv/bin/python -m bench.live_class                 # 30 students, a new SQLite file
    .venv/bin/python -m bench.live_class --students 10

Needs Debian's chromium (as the browser tests). Wall seconds measured in this process: from
just before the tap's click to the teacher's page showing the new count (polled every 20 ms);
median, quartiles and the largest over every student.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--students", type=int, default=30)
    args = parser.parse_args(argv)

    from playwright.sync_api import sync_playwright
    from tqdm import tqdm

    from tests.browser.test_live_class import COUNT_JS, PROJECTOR, join, start_class, tap
    from tests.helpers import CHROMIUM, CHROMIUM_ARGS, served_app, watch_runs

    with tempfile.TemporaryDirectory() as folder:
        os.environ["ATTENTION_EXPLORER_DATABASE_URL"] = f"sqlite:///{folder}/classes.sqlite"
        os.environ.setdefault("ATTENTION_EXPLORER_PRELOAD", "off")
        with served_app() as url, sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            teacher = watch_runs(browser.new_context(viewport=PROJECTOR).new_page())
            link = start_class(teacher, url)
            teacher.get_by_role("button", name="提问").click()
            teacher.wait_for_function(COUNT_JS, arg="0 人已作答", timeout=60_000)
            seconds = []
            for student in tqdm(range(1, args.students + 1), desc="students", unit="tap"):
                phone = join(browser, link)
                # the count the teacher shows once this student has joined, before the tap
                teacher.wait_for_function(COUNT_JS, arg=f"{student} 人中 {student - 1} 人已作答",
                                          timeout=60_000)
                started = time.monotonic()
                tap(phone, "cat" if student % 3 else "mat")
                teacher.wait_for_function(COUNT_JS, arg=f"{student} 人中 {student} 人已作答",
                                          timeout=60_000, polling=20)
                seconds.append(time.monotonic() - started)
                phone.context.close()
            browser.close()
    quartiles = statistics.quantiles(seconds, n=4)
    print(f"tap → teacher's count, {len(seconds)} students (s): median "
          f"{statistics.median(seconds):.2f}, quartiles {quartiles[0]:.2f}–{quartiles[2]:.2f}, "
          f"largest {max(seconds):.2f}, smallest {min(seconds):.2f}")


if __name__ == "__main__":
    main()
