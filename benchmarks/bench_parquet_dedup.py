"""How much of a new version's shard bytes the old version already holds, page for page, when a run
grows by 5%, with the Parquet layout of before (fixed-size pages) and the Hub's (content-defined
chunking, `publishing.parquet_layout`) (issue 26 item 2). Offline: no store, no Hub.

    .venv/bin/python benchmarks/bench_parquet_dedup.py [--trials 2000] [--growth 0.05] [--where spread|end]

One run of `trials * (1 + growth)` trials is generated (trace_assets_tests/support/generate_traces.py); the old
version is the same run less a random `growth` share of its trial folders (hard links), so the new
trials fall all through the shards' sorted rows, as a growing run's do (`--where end`: less the
trial folders whose names sort last, so the new rows all come after the old). Both are built into dataset
folders as `published_shards` does (local steps), once per layout. Each shard's data pages are
found through the page index (the offset index of every column chunk, read from the footer), and
hashed by their bytes (header and body, from the page's offset and length): the figure is the share
of the new version's shard bytes lying in data pages whose bytes some page of the old version's
shards has. The layout of before is measured with the page index written too (it lies after the
row groups and changes no page), so both are read the same way.

This counts whole identical pages only. The Hub stores files in Xet, which splits bytes into
content-defined chunks of its own (about 64 KiB) and uploads only the chunks it lacks: what it
would really send is not measured here (the Hub stand-in of the tests has no Xet).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import shutil
import struct
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.bench_pipeline import DEFAULT_PROMPT_SCALE, table  # noqa: E402

# --------------------------------------------------------------------------- Thrift compact protocol


class _Compact:
    """Just enough of Thrift's compact protocol to read Parquet's footer and offset indexes: each
    struct as {field id: value}, lists as Python lists."""

    def __init__(self, data: bytes, position: int = 0):
        self.data, self.position = data, position

    def byte(self) -> int:
        self.position += 1
        return self.data[self.position - 1]

    def varint(self) -> int:
        shift = result = 0
        while True:
            byte = self.byte()
            result |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return result
            shift += 7

    def zigzag(self) -> int:
        value = self.varint()
        return (value >> 1) ^ -(value & 1)

    def value(self, kind: int) -> Any:
        if kind in (1, 2):  # booleans: in a struct the type is the value
            return kind == 1
        if kind == 3:
            return self.byte()
        if kind in (4, 5, 6):
            return self.zigzag()
        if kind == 7:
            self.position += 8
            return struct.unpack("<d", self.data[self.position - 8 : self.position])[0]
        if kind == 8:
            size = self.varint()
            self.position += size
            return self.data[self.position - size : self.position]
        if kind in (9, 10):
            header = self.byte()
            size, element = header >> 4, header & 0x0F
            if size == 15:
                size = self.varint()
            if element in (1, 2):  # booleans in a list: a byte each
                return [self.byte() == 1 for _ in range(size)]
            return [self.value(element) for _ in range(size)]
        if kind == 11:
            size = self.varint()
            types = self.byte() if size else 0
            return {self.value(types >> 4): self.value(types & 0x0F) for _ in range(size)}
        if kind == 12:
            return self.struct()
        raise ValueError(f"unknown compact type {kind}")

    def struct(self) -> dict[int, Any]:
        fields: dict[int, Any] = {}
        last = 0
        while True:
            header = self.byte()
            if header == 0:
                return fields
            delta, kind = header >> 4, header & 0x0F
            last = last + delta if delta else self.zigzag()
            fields[last] = self.value(kind)


def data_pages(path: Path) -> Iterator[tuple[int, int]]:
    """(offset, length) of every data page, header included, from each column chunk's offset index."""
    data = path.read_bytes()
    if data[-4:] != b"PAR1":
        raise ValueError(f"{path}: not a Parquet file")
    footer_length = struct.unpack("<I", data[-8:-4])[0]
    footer = _Compact(data, len(data) - 8 - footer_length).struct()
    for row_group in footer[4]:  # FileMetaData.row_groups
        for chunk in row_group[1]:  # RowGroup.columns
            if 4 not in chunk:  # ColumnChunk.offset_index_offset
                raise ValueError(f"{path}: no page index")
            offset_index = _Compact(data, chunk[4]).struct()
            for location in offset_index[1]:  # OffsetIndex.page_locations
                yield location[1], location[2]  # PageLocation.offset, compressed_page_size (with header)


# --------------------------------------------------------------------------- the runs


def make_runs(work: Path, trials: int, growth: float, where: str) -> tuple[Path, Path, str]:
    """(traces root of the old version, of the new, run id). `where` the new trials sort: `spread`
    (a random share), or `end` (the trial folders whose names sort last)."""
    from trace_assets_tests.support.generate_traces import generate_run

    run_id = f"grow-{trials}"
    new_root, old_root = work / "new", work / "old"
    total = round(trials * (1 + growth))
    manifest = new_root / run_id / "manifest.json"
    if not manifest.exists() or json.loads(manifest.read_text())["n_trials"] != total:
        shutil.rmtree(new_root, ignore_errors=True)
        print(f"generating {total} trials ...", file=sys.stderr, flush=True)
        generate_run(new_root, run_id, total, seed=0, prompt_scale=DEFAULT_PROMPT_SCALE, episode_prompts=False)
    shutil.rmtree(old_root, ignore_errors=True)
    jobs = new_root / run_id / "trace_jobs"
    folders = sorted(p.name for p in jobs.iterdir() if p.is_dir())
    if where == "spread":
        dropped = set(random.Random(0).sample(folders, total - trials))
    else:
        dropped = set(folders[trials:])
    for path in jobs.rglob("*"):
        relative = path.relative_to(jobs)
        if relative.parts[0] in dropped or not path.is_file():
            continue
        (old_root / run_id / "trace_jobs" / relative).parent.mkdir(parents=True, exist_ok=True)
        os.link(path, old_root / run_id / "trace_jobs" / relative)
    return old_root, new_root, run_id


def build_shards(traces_root: Path, run_id: str, out: Path) -> list[Path]:
    """The run's published shards, as `published_shards` lays them out (local steps, default options)."""
    from trace_assets.core.defaults import DEFAULT_ROWS_PER_SHARD
    from trace_assets.core.scope import RunScope
    from trace_assets.publishing.dataset_folder import build_run_folder
    from trace_assets.secret_scan.scanner import ScanOptions
    from trace_assets.steps.scan import scan_run
    from trace_assets.steps.staging import RunStaging
    from trace_assets.store.trace_store import TraceStore
    from trace_assets_tests.support.helpers import stage_rows

    shutil.rmtree(out, ignore_errors=True)
    store = TraceStore(str(traces_root))
    staging = RunStaging(out / "staging", RunScope(run_id))
    coverage, _ = stage_rows(store, staging, batch_size=256)["last_episode_rows"]
    report = scan_run(staging.require_rows(), run_id, ScanOptions())
    shards = build_run_folder(
        out / "build", staging.require_rows(), staging.statuses, coverage, report, DEFAULT_ROWS_PER_SHARD
    )
    return [out / "build" / name for name in shards.files]


def page_hashes(shards: list[Path]) -> dict[bytes, int]:
    hashes: dict[bytes, int] = {}
    for shard in shards:
        data = shard.read_bytes()
        for offset, length in data_pages(shard):
            hashes[hashlib.sha256(data[offset : offset + length]).digest()] = length
    return hashes


def measure(old: list[Path], new: list[Path]) -> dict[str, Any]:
    known = page_hashes(old)
    total = sum(shard.stat().st_size for shard in new)
    pages = in_pages = shared = shared_pages = 0
    for shard in new:
        data = shard.read_bytes()
        for offset, length in data_pages(shard):
            pages += 1
            in_pages += length
            if hashlib.sha256(data[offset : offset + length]).digest() in known:
                shared += length
                shared_pages += 1
    return {
        "shards": len(new),
        "bytes": total,
        "pages": pages,
        "in_pages": in_pages,
        "shared": shared,
        "shared_pages": shared_pages,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=2000, help="trials of the old version")
    parser.add_argument("--growth", type=float, default=0.05, help="share of trials the new version adds")
    parser.add_argument(
        "--where", choices=("spread", "end"), default="spread", help="where the new trials sort among the old"
    )
    parser.add_argument("--work-dir", help="keep the generated runs here (default: a temp dir, removed)")
    args = parser.parse_args(argv)

    from trace_assets.steps import parquet_layout

    started = time.perf_counter()
    work = Path(args.work_dir) if args.work_dir else Path(tempfile.mkdtemp(prefix="bench-parquet-dedup-"))
    hub_options = parquet_layout.writer_options
    layouts = {  # the layout of before: pyarrow's defaults (the page index only so pages can be found)
        "before: fixed-size pages": lambda: {"write_page_index": True},
        "after: content-defined chunking": hub_options,
    }
    results = {}
    try:
        old_root, new_root, run_id = make_runs(work, args.trials, args.growth, args.where)
        for name, options in layouts.items():
            parquet_layout.writer_options = options  # type: ignore[assignment]
            print(f"{name}: building both versions ...", file=sys.stderr, flush=True)
            old = build_shards(old_root, run_id, work / "built-old")
            new = build_shards(new_root, run_id, work / "built-new")
            results[name] = measure(old, new)
    finally:
        parquet_layout.writer_options = hub_options  # type: ignore[assignment]
        if not args.work_dir:
            shutil.rmtree(work, ignore_errors=True)

    rows = []
    for name, figures in results.items():
        rows.append(
            [
                name,
                figures["shards"],
                f"{figures['bytes'] / 2**20:.1f}",
                f"{figures['pages']:,}",
                f"{figures['shared_pages']:,}",
                f"{figures['shared'] / 2**20:.1f}",
                f"{figures['shared'] / figures['bytes']:.1%}",
            ]
        )
    headers = ["layout", "shards", "new MiB", "data pages", "pages also in old", "MiB in them", "share of new bytes"]
    print(
        f"{args.trials} trials -> {round(args.trials * (1 + args.growth))} (+{args.growth:.0%}, the new trials "
        f"{'spread through' if args.where == 'spread' else 'after'} the sorted rows); "
        f"took {time.perf_counter() - started:.0f}s"
    )
    print(table(headers, rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
