"""Wall time of reading a run from a Hub Storage Bucket with latency added to every bucket request,
against none (issue 41), side by side.

    .venv/bin/python benchmarks/bench_hub_bucket.py [--trials 300] [--latency-ms 50] [--repeats 3]

One generated run is placed once in a bucket of the project's Hub stand-in (127.0.0.1, the real
huggingface_hub client, `HF_HUB_DISABLE_XET=1`). Each measurement reads it as the steps do from a
`hf://buckets/` traces root: the listing, scoring and rows steps into a fresh staging folder (every
bucket request a step makes: the tree pages, each result.json, the rows' files). The two settings
run in turn, A B A B: the stand-in answering each bucket request at once, then `--latency-ms` later
(as a distant region answers); the ratio is taken pair by pair, and its median is reported.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ["HF_HUB_DISABLE_XET"] = "1"  # read when huggingface_hub is imported; the stand-in has no Xet
os.environ["HF_HUB_DISABLE_PROGRESS_BARS"] = "1"
os.environ.pop("HF_TOKEN", None)
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from huggingface_hub import constants as hf_constants  # noqa: E402

from benchmarks.bench_pipeline import DEFAULT_PROMPT_SCALE  # noqa: E402
from trace_assets.core.scope import RunScope  # noqa: E402
from trace_assets.harbor.options import ExportOptions  # noqa: E402
from trace_assets.steps.listing import build_listing  # noqa: E402
from trace_assets.steps.rows import export_rows  # noqa: E402
from trace_assets.steps.scoring import score_trials  # noqa: E402
from trace_assets.steps.staging import RunStaging  # noqa: E402
from trace_assets.store.trace_store import TraceStore  # noqa: E402
from trace_assets_tests.support.generate_traces import generate_run  # noqa: E402
from trace_assets_tests.support.hub_server import HubStandIn  # noqa: E402

BUCKET = "bench/traces"
RUN = "bench-run"
BATCH = 256  # trials per scoring and rows batch, the CLI's default


def read_run(root: str, staging_root: Path) -> tuple[float, int]:
    """Seconds the three reading steps take, and the rows they export."""
    staging = RunStaging(staging_root, RunScope(RUN))
    started = time.perf_counter()
    build_listing(TraceStore(root), staging)
    score_trials(TraceStore(root), staging, BATCH, lambda _: None)
    coverage, _ = export_rows(TraceStore(root), staging, ExportOptions(), BATCH, lambda _: None)
    return time.perf_counter() - started, coverage.rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=300)
    parser.add_argument("--latency-ms", type=float, default=50.0)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory() as tmp, HubStandIn() as hub:
        hf_constants.ENDPOINT = hub.url  # as the tests' fixture does: HF_ENDPOINT was read at import
        local = Path(tmp) / "local"
        generate_run(local, RUN, trials=args.trials, seed=7, prompt_scale=DEFAULT_PROMPT_SCALE)
        run_dir = local / RUN
        hub.create_bucket(BUCKET)
        files = {
            f"{RUN}/{p.relative_to(run_dir).as_posix()}": p.read_bytes() for p in run_dir.rglob("*") if p.is_file()
        }
        hub.put_bucket_files(BUCKET, files)
        root = f"hf://buckets/{BUCKET}"
        print(
            f"{args.trials} trials, {len(files)} files, {sum(map(len, files.values())) / 2**20:.1f} MiB in the bucket"
        )

        read_run(root, Path(tmp) / "warm-up")
        ratios, times = [], {"0 ms": [], f"{args.latency_ms:g} ms": []}
        for repeat in range(args.repeats):
            measured = []
            for label, latency in (("0 ms", 0.0), (f"{args.latency_ms:g} ms", args.latency_ms / 1000)):
                hub.bucket_latency = latency
                before = len(hub.bucket_requests())
                seconds, rows = read_run(root, Path(tmp) / f"{repeat}-{latency}")
                requests = len(hub.bucket_requests()) - before
                times[label].append(seconds)
                measured.append(seconds)
                print(f"round {repeat + 1}, {label:>6}: {seconds:6.2f} s, {requests} bucket requests, {rows} rows")
            ratios.append(measured[1] / measured[0])
        for label, seconds in times.items():
            print(f"{label:>6}: median {statistics.median(seconds):.2f} s")
        print(
            f"ratio {args.latency_ms:g} ms / 0 ms: median {statistics.median(ratios):.2f}x (pairs: "
            + ", ".join(f"{r:.2f}" for r in ratios)
            + ")"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
