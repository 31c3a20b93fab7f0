"""Before/after: the pipeline's steps at a base revision and in this checkout, side by side.

    .venv/bin/python benchmarks/bench_compare.py [--base REV] [--trials 2000] [--repeats 5]

Checks out REV (default: the commit before HEAD's changes, `HEAD~1`) as a git worktree in a temp
folder, generates one tree (trace_assets_tests/support/generate_traces.py), then runs each side's own
`bench_pipeline.py _run` child on it, alternating base and head so machine noise falls on both,
each on a warm page cache with a fresh staging folder. Prints per-step seconds (fastest of the
repeats), whole-process wall time and peak RSS, and head/base ratios. Both children run with this
venv's Python, so only the code differs.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

PROJECT_DIR = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(PROJECT_DIR))

from benchmarks.bench_pipeline import (  # noqa: E402  (the path above makes `benchmarks` importable)
    SEED,
    Measurement,
    TreeShape,
    ensure_tree,
    measure,
    table,
    warm_tree,
)


def child(checkout: Path, traces_root: Path, run_id: str, staging: Path, sessions: bool = False) -> list[str]:
    """Each side's own child script; with `sessions`, this checkout's (which knows the flags) run
    against the side's code (BENCH_CODE_DIR), through the functions both sides share."""
    script = (PROJECT_DIR if sessions else checkout) / "benchmarks" / "bench_pipeline.py"
    command = [sys.executable, str(script), "_run", str(traces_root), run_id, str(staging), "--steps", "all"]
    return command + (["--sessions", "--publish"] if sessions else [])


def compare(base: str, trials: int, repeats: int, shape: TreeShape, sessions: bool = False) -> str:
    with tempfile.TemporaryDirectory(prefix="bench-compare-") as folder:
        work = Path(folder)
        base_checkout = work / "base"
        subprocess.run(
            ["git", "-C", str(PROJECT_DIR), "worktree", "add", "-q", "--detach", str(base_checkout), base], check=True
        )
        try:
            traces_root = work / "traces"
            manifest = ensure_tree(traces_root, trials, shape)
            run_id = manifest["run_id"]
            sides = {"base": base_checkout, "head": PROJECT_DIR}
            runs: dict[str, list[Measurement]] = {side: [] for side in sides}
            for repeat in range(repeats):
                for side, checkout in sides.items():
                    print(f"[{repeat + 1}/{repeats}] {side}", file=sys.stderr, flush=True)
                    warm_tree(traces_root / run_id / "trace_jobs")
                    staging = work / f"staging-{side}-{repeat}"
                    command = child(checkout, traces_root, run_id, staging, sessions)
                    env = {"BENCH_CODE_DIR": str(checkout)} if sessions else None
                    runs[side].append(measure(command, env))
        finally:
            subprocess.run(
                ["git", "-C", str(PROJECT_DIR), "worktree", "remove", "--force", str(base_checkout)], check=False
            )
    steps = list(runs["head"][0].report["seconds"])
    rows = []
    for step in steps:
        base_s, head_s = (min(m.report["seconds"][step] for m in runs[side]) for side in ("base", "head"))
        rows.append([step, f"{base_s:.3f}", f"{head_s:.3f}", f"{head_s / base_s:.2f}x"])
    base_wall, head_wall = (min(m.wall_seconds for m in runs[side]) for side in ("base", "head"))
    base_rss, head_rss = (max(m.peak_rss_mib for m in runs[side]) for side in ("base", "head"))
    rows.append(["whole process (wall)", f"{base_wall:.3f}", f"{head_wall:.3f}", f"{head_wall / base_wall:.2f}x"])
    rows.append(["peak RSS MiB", f"{base_rss:.0f}", f"{head_rss:.0f}", f"{head_rss / base_rss:.2f}x"])
    with_sessions = ", session files staged, scanned and published to a folder" if sessions else ""
    title = f"{trials} trials (seed {SEED}, {shape}{with_sessions}), fastest of {repeats}, base {base} vs head"
    return title + "\n\n" + table(["step", "base s", "head s", "head/base"], rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", default="HEAD~1", help="git revision to compare against")
    parser.add_argument("--trials", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--prompt-scale", type=float, default=0.02)
    parser.add_argument("--no-episode-prompts", action="store_true")
    parser.add_argument(
        "--sessions", action="store_true", help="the definitions' default: session files too, and a folder publish"
    )
    args = parser.parse_args(argv)
    shape = TreeShape(args.prompt_scale, not args.no_episode_prompts)
    print(compare(args.base, args.trials, args.repeats, shape, args.sessions))
    return 0


if __name__ == "__main__":
    sys.exit(main())
