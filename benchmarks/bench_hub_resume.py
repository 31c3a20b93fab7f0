"""What a batched Hub publish costs again after it was killed before its merge, side by side.

    .venv/bin/python benchmarks/bench_hub_resume.py [--shards 200] [--sessions 2000] [--repeats 2]

Each round publishes a small v1, then a large v2 killed just before its merge (every batch on the
pull request), then publishes v2 again in one of three settings, interleaved, on a fresh Hub
stand-in (127.0.0.1, the real huggingface_hub client):
  resumed:  main has not moved; the open pull request is resumed (merge only, nothing re-sent);
  replaced: a small v3 went straight onto main meanwhile; the stale pull request is closed and v2
            goes up on a new one (LFS contents already in the repo, regular files sent again);
  fresh:    no kill, no pull request left: v2 published whole after v1 (the baseline).
Reported: wall time of the last publish (fastest of the repeats) and its ratio to `fresh`, LFS
objects PUT, regular files and bytes committed, requests made, commit-history pages read.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal

os.environ["HF_HUB_DISABLE_XET"] = "1"  # read when huggingface_hub is imported; the stand-in has no Xet
os.environ["HF_HUB_DISABLE_PROGRESS_BARS"] = "1"
os.environ.pop("HF_TOKEN", None)
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import pyarrow as pa  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402

from trace_assets.publishing.hub import RetryPolicy, publish_run_folder  # noqa: E402
from trace_assets.publishing.hub import batched as hub_batched  # noqa: E402
from trace_assets_tests.support.hub_server import HubStandIn  # noqa: E402

REPO_ID = "bench/harbor-traces"
TITLE = "Publish traces of run bench"
Setting = Literal["resumed", "replaced", "fresh"]
SETTINGS: tuple[Setting, ...] = ("resumed", "replaced", "fresh")


class Killed(BaseException):
    """The publishing process dying just before the merge."""


def write_version(root: Path, name: str, shards: int, sessions: int) -> Path:
    folder = root / name
    (folder / "data").mkdir(parents=True)
    for index in range(shards):
        table = pa.table({"trial_name": [f"{name}-trial-{index}"] * 64, "turn": list(range(64))})
        pq.write_table(table, folder / "data" / f"train-{index:05d}-of-{shards:05d}.parquet")
    for index in range(sessions):
        path = folder / "sessions" / f"{index % 256:02x}" / f"trial-{index}.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        header = {"type": "session", "harness": "terminus-2", "id": f"trial-{index}", "name": name}
        path.write_text(json.dumps(header) + "\n" + json.dumps({"role": "user", "content": "x" * 2000}) + "\n")
    (folder / "README.md").write_text(f"---\nconfigs: []\n---\n# {name}\n")
    (folder / "coverage.json").write_text(json.dumps({"version": name}))
    return folder


def publish(hub: HubStandIn, folder: Path) -> None:
    publish_run_folder(
        folder, REPO_ID, token=hub.token, endpoint=hub.url, commit_message=TITLE, retry=RetryPolicy(wait_seconds=0)
    )


@contextmanager
def killed_before_merge() -> Iterator[None]:
    real_merge = hub_batched.BatchedPublish._merge

    def die(*_: object) -> str:
        raise Killed()

    setattr(hub_batched.BatchedPublish, "_merge", die)  # noqa: B010 (a method replaced for the kill)
    try:
        yield
    finally:
        setattr(hub_batched.BatchedPublish, "_merge", real_merge)  # noqa: B010


def one_round(setting: Setting, versions: dict[str, Path]) -> dict[str, Any]:
    with HubStandIn() as hub:
        publish(hub, versions["v1"])
        if setting != "fresh":
            try:
                with killed_before_merge():
                    publish(hub, versions["v2"])
            except Killed:
                pass
        if setting == "replaced":
            publish(hub, versions["v3"])
        requests_before = len(hub.requests)
        commits_before = {commit.oid for ref in hub.branches(REPO_ID) for commit in hub.commits(REPO_ID, ref)}
        started = time.perf_counter()
        publish(hub, versions["v2"])
        seconds = time.perf_counter() - started
        requests = hub.requests[requests_before:]
        lfs = hub.lfs_files(REPO_ID)
        regular = {
            path
            for ref in hub.branches(REPO_ID)
            for commit in hub.commits(REPO_ID, ref)
            if commit.oid not in commits_before and not commit.title.startswith("Merge pull request")
            for path in commit.added
            if path not in lfs
        }
        return {
            "seconds": seconds,
            "lfs_puts": sum(1 for r in requests if r.method == "PUT" and r.path.startswith("/lfs-storage/")),
            "regular_files": len(regular),
            "regular_bytes": sum((versions["v2"] / path).stat().st_size for path in regular),
            "requests": len(requests),
            "history_pages": sum(1 for r in requests if "/commits/" in r.path and r.method == "GET"),
        }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shards", type=int, default=200)
    parser.add_argument("--sessions", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=2)
    arguments = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        versions = {
            "v1": write_version(root, "v1", 2, 3),
            "v2": write_version(root, "v2", arguments.shards, arguments.sessions),
            "v3": write_version(root, "v3", 3, 3),
        }
        best: dict[Setting, dict[str, Any]] = {}
        for _ in range(arguments.repeats):
            for setting in SETTINGS:
                result = one_round(setting, versions)
                if setting not in best or result["seconds"] < best[setting]["seconds"]:
                    best[setting] = result
    print(f"v2: {arguments.shards} shards (LFS), {arguments.sessions} session files + 2 small files (regular)")
    print("| rerun | wall s | / fresh | LFS PUTs | regular files (bytes) sent | requests | history pages |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for setting in SETTINGS:
        row = best[setting]
        ratio = row["seconds"] / best["fresh"]["seconds"]
        print(
            f"| {setting} | {row['seconds']:.2f} | {ratio:.2f} | {row['lfs_puts']} |"
            f" {row['regular_files']:,} ({row['regular_bytes']:,}) | {row['requests']:,} | {row['history_pages']} |"
        )


if __name__ == "__main__":
    main()
