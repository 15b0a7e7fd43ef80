"""The class database under a class: 30 students answer one question at once, each answer from
its own thread; the time of each answer's commit, then of the teacher's count and results.

    .venv/bin/python -m bench.class_store                      # SQLite in a temporary folder
    .venv/bin/python -m bench.class_store --url postgresql+psycopg://...  # e.g. tests/postgres.sh
    .venv/bin/python -m bench.class_store --students 200 --rounds 5

Wall seconds in one process, medians and the largest over every answer of every round.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main(argv: list[str] | None = None) -> None:
    from app_pages.live.store import ClassLimits, Store

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", help="a SQLAlchemy URL (default: a new SQLite file)")
    parser.add_argument("--students", type=int, default=30)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args(argv)
    folder = tempfile.mkdtemp(prefix="class-store-")
    url = args.url or f"sqlite:///{Path(folder) / 'classes.sqlite'}"
    store = Store(url, ClassLimits(students_per_class=max(200, args.students)))
    opened = store.open_class()
    keys = [store.join(opened.code, f"s{i}", f"c{i}") for i in range(args.students)]
    answers, counts, results = [], [], []
    for round_ in range(args.rounds):
        question = store.ask(opened.teacher_key, "choice", f"round {round_}",
                             [str(i) for i in range(6)], {"answer": 0})
        start = threading.Barrier(len(keys))

        def tap(i: int, key: str, start=start, question=question) -> None:
            start.wait()
            began = time.perf_counter()
            store.answer(key, question, i % 6)
            answers.append(time.perf_counter() - began)

        threads = [threading.Thread(target=tap, args=(i, k)) for i, k in enumerate(keys)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        began = time.perf_counter()
        answered = store.answered(opened.teacher_key, question)
        counts.append(time.perf_counter() - began)
        began = time.perf_counter()
        store.results(opened.teacher_key, question)
        results.append(time.perf_counter() - began)
        assert answered == len(keys), (answered, len(keys))
    print(f"{store.engine.dialect.name}: {args.students} students × {args.rounds} rounds, "
          "every answer stored")
    for name, values in (("one answer (at once with the others)", answers),
                         ("the teacher's count", counts), ("the results", results)):
        print(f"  {name}: median {statistics.median(values) * 1000:.1f} ms, "
              f"max {max(values) * 1000:.1f} ms")


if __name__ == "__main__":
    main()
