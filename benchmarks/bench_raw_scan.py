"""Throughput of the raw-tree scan on a generated run, against kingfisher and betterleaks on the same folder.

    .venv/bin/python benchmarks/bench_raw_scan.py --trials 200 --kingfisher PEERS/bin/kingfisher \\
        --betterleaks PEERS/bin/betterleaks

The run is written by `generate_traces.py` (episode prompt files included, the bulk of a real
run's bytes) into a temporary folder. The raw-tree scan runs in a child process with
POLARS_MAX_THREADS=1 (one core; the variable only takes effect before polars is imported), the
peers with one job and no validation; each is timed whole (a process start, the walk, the reads),
fastest of `--repeats`, in turn, in one run.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.secret_peers import PEER_COMMANDS, peer_command  # noqa: E402
from trace_assets_tests.support.generate_traces import generate_run  # noqa: E402

RUN = "bench-raw-run"
CHILD = """
import json, sys, time
from trace_assets.core.scope import RunScope
from trace_assets.secret_scan.scanner import ScanOptions
from trace_assets.steps.raw_scan import raw_scan
from trace_assets.store.trace_store import TraceStore
report = raw_scan(TraceStore(sys.argv[1], walk_workers=1), RunScope(sys.argv[2]), ScanOptions())
print(json.dumps({k: report[k] for k in ("objects_scanned", "bytes_scanned", "objects_with_findings", "skipped")}))
"""


def _timed(command: list[str], env: dict[str, str] | None = None) -> tuple[float, str]:
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env=env)  # kingfisher exits 200 on findings
    if done.returncode not in (0, 200):
        raise RuntimeError(f"{command[0]} failed ({done.returncode}): {done.stderr[-2000:]}")
    return time.perf_counter() - started, done.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=200)
    parser.add_argument("--prompt-scale", type=float, default=0.2, help="share of each episode prompt kept")
    parser.add_argument("--repeats", type=int, default=3)
    for name in PEER_COMMANDS:
        parser.add_argument(f"--{name}", help=f"path to a {name} binary (in a venv of its own)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        generate_run(Path(folder), RUN, args.trials, prompt_scale=args.prompt_scale)
        tree = Path(folder) / RUN / "trace_jobs"
        size = sum(path.stat().st_size for path in tree.rglob("*") if path.is_file())
        env = {**os.environ, "POLARS_MAX_THREADS": "1"}
        commands = {"raw_scan": [sys.executable, "-c", CHILD, folder, RUN]}
        for name in PEER_COMMANDS:
            if getattr(args, name):
                commands[name] = peer_command(name, getattr(args, name), tree)
        best: dict[str, float] = {}
        for _ in range(args.repeats):
            for name, command in commands.items():
                seconds, out = _timed(command, env)
                best[name] = min(best.get(name, seconds), seconds)
                if name == "raw_scan":
                    summary = json.loads(out)
        print(
            f"tree: {args.trials} trials, {summary['objects_scanned']} objects, {size / 1e6:.1f} MB; raw scan: {summary}"
        )
        for name, seconds in best.items():
            ratio = best[name] / best["raw_scan"]
            print(f"{name:12s} {seconds:7.2f} s  {size / 1e6 / seconds:7.1f} MB/s  ({ratio:.2f}x the raw scan's time)")


if __name__ == "__main__":
    main()
