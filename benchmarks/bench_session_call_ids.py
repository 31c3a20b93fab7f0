"""Session files of a hostile trajectory: one step whose tool calls all repeat one id.

    .venv/bin/python benchmarks/bench_session_call_ids.py [--calls 5000,10000,20000] [--repeats 3]

For each size, one trial whose single agent step makes that many calls, all `tool_call_id: "x"`,
is made into its rows (`export_trial`) and into its session files (`sessions_from_files`), side
by side in one process, fastest of the repeats. Prints seconds, sessions/rows, and how the
sessions' time grows with the size: linear work doubles when the calls double (quadratic: 4x).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

PROJECT_DIR = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(PROJECT_DIR))

from benchmarks.bench_pipeline import table  # noqa: E402  (the path above makes `benchmarks` importable)
from trace_assets.harbor.options import ExportOptions  # noqa: E402
from trace_assets.harbor.result import parse_trial_result  # noqa: E402
from trace_assets.harbor.rows import export_trial  # noqa: E402
from trace_assets.harbor.sessions import sessions_from_files  # noqa: E402

RESULT = {"trial_name": "t", "task_name": "task", "agent_info": {"name": "terminus-2"}}


def repeated_calls(calls: int) -> dict[str, bytes]:
    step = {"source": "agent", "message": "a", "tool_calls": [{"tool_call_id": "x", "function_name": "f"}] * calls}
    return {"agent/trajectory.json": json.dumps({"steps": [{"source": "user", "message": "q"}, step]}).encode()}


def fastest(work: Callable[[], object], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        work()
        times.append(time.perf_counter() - start)
    return min(times)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", default="5000,10000,20000", help="sizes, comma-separated")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    summary = parse_trial_result(json.dumps(RESULT).encode(), "t")
    rows, previous = [], None
    for calls in (int(n) for n in args.calls.split(",")):
        files = repeated_calls(calls)
        rows_s = fastest(partial(export_trial, summary, files, "run", ExportOptions()), args.repeats)
        sessions_s = fastest(partial(sessions_from_files, summary, files, "run"), args.repeats)
        growth = f"{sessions_s / previous[1]:.1f}x for {calls / previous[0]:.0f}x calls" if previous else ""
        size = len(files["agent/trajectory.json"]) / 1e6
        rows.append(
            [f"{calls:,}", f"{size:.2f}", f"{rows_s:.3f}", f"{sessions_s:.3f}", f"{sessions_s / rows_s:.2f}x", growth]
        )
        previous = (calls, sessions_s)
    print(table(["calls", "MB", "rows s", "sessions s", "sessions/rows", "sessions' growth"], rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
