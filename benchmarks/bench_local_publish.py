"""Wall time of a local publish made durable (issue 26 item 6) by one syncfs per version folder
moved in (issue 21), by a fsync per file, and not at all.

    .venv/bin/python benchmarks/bench_local_publish.py [--trials 2000] [--repeats 3] [--work-dir DIR]

One generated run (with its session files) is built once into a dataset folder; a second build is
the same files under other version folders (as a new version of a run has). Each measurement
copies one build to a fresh folder (not timed: the build a publish starts from was just written,
its pages still dirty), then times `FolderTarget.publish` of it over the other version in a local
publish root (version folders moved in by rename, the other files and the cards copied and
renamed, the root card, the old version's files removed), then syncs the disk (not timed), so no
measurement writes back another's pages. Settings: `syncfs` (the code as it is: a version folder
moved in is flushed by one syncfs, each other file and folder by fsync); `fsync per file` (the C
library's syncfs taken away: every file and folder of a moved folder fsynced, 16 at a time, the
publish of before issue 21); `no flush` (`fsync_path` and syncfs no-ops: the publish of before
issue 26). The settings alternate; the fastest of the repeats counts.
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

from benchmarks.bench_pipeline import DEFAULT_PROMPT_SCALE, TreeShape, ensure_tree, run_id_for, table  # noqa: E402
from benchmarks.bench_s3_publish import build_folder, other_version  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=3, help="publishes per setting, the fastest counts")
    parser.add_argument("--work-dir", help="keep the generated tree here (default: a temp dir, removed)")
    args = parser.parse_args(argv)

    from trace_assets.core.scope import RunScope
    from trace_assets.publishing.targets import FolderTarget
    from trace_assets.runtime import atomic_files

    work = Path(args.work_dir) if args.work_dir else Path(tempfile.mkdtemp(prefix="bench-local-publish-"))
    started = time.perf_counter()
    shape = TreeShape(DEFAULT_PROMPT_SCALE, False)
    ensure_tree(work / "traces", args.trials, shape)
    run_id = run_id_for(args.trials, shape)
    print("building the dataset folder ...", file=sys.stderr, flush=True)
    shutil.rmtree(work / "staging", ignore_errors=True)
    builds = [build_folder(work / "traces", run_id, work), work / "build-b"]
    other_version(builds[0], builds[1])
    files = sum(1 for p in builds[0].rglob("*") if p.is_file())
    size = sum(p.stat().st_size for p in builds[0].rglob("*") if p.is_file())
    root, scope = work / "published", RunScope(run_id)
    shutil.rmtree(root, ignore_errors=True)
    real_fsync, real_syncfs = atomic_files.fsync_path, atomic_files._SYNCFS
    settings: dict[str, tuple[Any, Any]] = {
        "syncfs": (real_fsync, real_syncfs),
        "fsync per file": (real_fsync, None),
        "no flush": (lambda path: None, lambda fd: 0),
    }
    best: dict[str, float] = {}
    turn = 0
    try:
        FolderTarget(str(root)).publish(_fresh_copy(builds[turn], work), scope)  # the old version
        os.sync()
        for _ in range(args.repeats):
            for name, (fsync, syncfs) in settings.items():
                turn = 1 - turn
                copy = _fresh_copy(builds[turn], work)
                atomic_files.fsync_path, atomic_files._SYNCFS = fsync, syncfs  # type: ignore[assignment]
                print(name, file=sys.stderr, flush=True)
                began = time.perf_counter()
                FolderTarget(str(root)).publish(copy, scope)
                wall = time.perf_counter() - began
                atomic_files.fsync_path, atomic_files._SYNCFS = real_fsync, real_syncfs  # type: ignore[assignment]
                os.sync()
                best[name] = min(best.get(name, float("inf")), wall)
    finally:
        atomic_files.fsync_path, atomic_files._SYNCFS = real_fsync, real_syncfs
        if not args.work_dir:
            shutil.rmtree(work, ignore_errors=True)

    base = best["no flush"]
    rows = [[name, f"{wall:.2f}", f"{wall / base:.2f}x"] for name, wall in best.items()]
    print(
        f"{args.trials} trials: {files:,} files, {size / 2**20:.1f} MiB a version; fastest of {args.repeats}; "
        f"load average {os.getloadavg()[0]:.2f}; took {time.perf_counter() - started:.0f}s"
    )
    print(table(["publish", "wall s", "ratio"], rows))
    return 0


def _fresh_copy(build: Path, work: Path) -> Path:
    copy = work / "publish-copy"
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(build, copy)
    return copy


if __name__ == "__main__":
    sys.exit(main())
