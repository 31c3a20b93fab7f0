"""Wall time of the steps on S3 with latency added to every request, against none (issue 13 item 7).

    .venv/bin/python benchmarks/bench_latency.py [--trials 300] [--latencies 0,50,200] [--repeats 2]

One generated run is uploaded to a moto server; every measurement runs the steps (listing, then
scored, rows, scan, shards; two child processes, start-up included) on a fresh staging folder
through a FaultProxy adding the given milliseconds before each request, as a distant region
does. Each latency is measured with the fetches pipelined (`fetch_ahead` 1, the default) and
without (0), side by side; the ratio is the wall time against the same setting at 0 ms.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.bench_pipeline import (  # noqa: E402
    DEFAULT_PROMPT_SCALE,
    TreeShape,
    ensure_tree,
    measure,
    ours_command,
    run_id_for,
    run_on_moto,
    table,
)

TARGETS = {50: 1.2, 200: 1.5}  # latency ms -> largest wall-time ratio against 0 ms
FETCH_AHEAD = (1, 0)


def run_once(traces_root: str, run_id: str, staging: Path, endpoint: str, fetch_ahead: int) -> dict[str, Any]:
    shutil.rmtree(staging, ignore_errors=True)
    extra = ["--fetch-ahead", str(fetch_ahead)]
    listing = measure([*ours_command(traces_root, run_id, staging, "listing", endpoint), *extra])
    rest = measure([*ours_command(traces_root, run_id, staging, "after-listing", endpoint), *extra])
    shutil.rmtree(staging, ignore_errors=True)
    return {
        "wall": listing.wall_seconds + rest.wall_seconds,
        "steps": {**listing.report["seconds"], **rest.report["seconds"]},
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=300)
    parser.add_argument("--latencies", default="0,50,200", help="milliseconds added per request; 0 first")
    parser.add_argument("--repeats", type=int, default=2, help="runs per setting, the fastest counts")
    parser.add_argument(
        "--no-episode-prompts", action="store_true", help="about 7 objects a trial, the shape of the real run measured"
    )
    parser.add_argument("--work-dir", help="keep the generated tree here (default: a temp dir, removed)")
    args = parser.parse_args(argv)
    latencies = sorted({0, *(int(ms) for ms in args.latencies.split(","))})

    from trace_assets_tests.support.fault_proxy import FaultProxy

    work = Path(args.work_dir) if args.work_dir else Path(tempfile.mkdtemp(prefix="bench-latency-"))
    shape = TreeShape(DEFAULT_PROMPT_SCALE, not args.no_episode_prompts)
    started = time.perf_counter()
    manifest = ensure_tree(work / "traces", args.trials, shape)
    run_id = run_id_for(args.trials, shape)
    results: dict[tuple[int, int], dict[str, Any]] = {}
    try:
        with run_on_moto(work / "traces" / run_id / "trace_jobs", run_id) as moto, FaultProxy(moto.url) as proxy:
            for _ in range(args.repeats):  # interleaved, so drifting load hits every setting alike
                for ms in latencies:
                    proxy.latency = ms / 1000
                    for ahead in FETCH_AHEAD:
                        print(f"{ms} ms, fetch_ahead={ahead}", file=sys.stderr, flush=True)
                        run = run_once(moto.traces_root, run_id, work / "staging", proxy.url, ahead)
                        best = results.get((ms, ahead))
                        if best is None or run["wall"] < best["wall"]:
                            results[(ms, ahead)] = run
    finally:
        if not args.work_dir:
            shutil.rmtree(work, ignore_errors=True)

    rows, passed = [], True
    for ms in latencies:
        row: list[Any] = [ms]
        for ahead in FETCH_AHEAD:
            run, base = results[(ms, ahead)], results[(0, ahead)]
            steps = run["steps"]
            row += [f"{run['wall']:.1f}", f"{run['wall'] / base['wall']:.2f}x"]
            row += [f"{steps['listing']:.2f}/{steps['scored']:.2f}/{steps['rows']:.2f}"]
        target = TARGETS.get(ms)
        if target is not None:
            ok = results[(ms, 1)]["wall"] / results[(0, 1)]["wall"] <= target
            passed &= ok
            row.append(f"<= {target}x {'PASS' if ok else 'FAIL'}")
        else:
            row.append("")
        rows.append(row)
    headers = [
        "latency ms",
        "wall s",
        "ratio",
        "list/score/rows s",
        "wall s (no ahead)",
        "ratio",
        "list/score/rows s",
        "target",
    ]
    print(
        f"{args.trials} trials, {manifest['counts']['files']} objects; fastest of {args.repeats}; "
        f"load average {os.getloadavg()[0]:.2f}; took {time.perf_counter() - started:.0f}s"
    )
    print(table(headers, rows))
    return 0 if passed else 2


if __name__ == "__main__":
    sys.exit(main())
