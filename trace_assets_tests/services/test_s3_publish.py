"""Publishing to S3 with concurrent PUTs and bulk deletes (issue 26 item 1): the same objects, key
for key and byte for byte, as a plain local publish of the same builds, and the safe order kept:
the versioned files whole before the other files, those whole before the card, the card before
the sessions' card, the stale files only after both, a dropped sessions card before its files."""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
from pathlib import Path

import s3fs

from trace_assets.core.scope import RunScope
from trace_assets.defs.resources import ObjectStorage
from trace_assets.publishing.targets import FolderTarget, replace_folder
from trace_assets.publishing.versions import block_entry
from trace_assets.store.s3_options import storage_options
from trace_assets_tests.support.s3_fixtures import make_s3fs


def _build(folder: Path, version: str, sessions: int, with_sessions_card: bool = True) -> Path:
    """A scope's folder shaped like a real build (the bytes are made up: replace_folder reads none)."""
    files = {
        "README.md": f"card naming data/{version}\n",
        "coverage.json": f'{{"version": "{version}"}}\n',
        "versions.json": f'{{"versions": ["{version}"]}}\n',
        "trials.parquet": f"trials {version}",
        "secret_scan.json": "{}\n",
        "plots/rewards.svg": "<svg/>",
    }
    for index in range(3):
        files[f"data/{version}/train-{index:05d}-of-00003.parquet"] = f"shard {index} of {version} " * 50
    for index in range(sessions):
        name = f"trial-{index:04d}"
        bucket = hashlib.sha256(name.encode()).hexdigest()[:2]
        files[f"sessions/{version}/{bucket}/{name}.jsonl"] = f'{{"id": "{name}", "v": "{version}"}}\n'
    if with_sessions_card and sessions:
        files["sessions/README.md"] = f"sessions card naming sessions/{version}\n"
    for name, text in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    return folder


def _local_objects(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _s3_objects(fs: s3fs.S3FileSystem, prefix: str) -> dict[str, bytes]:
    return {path[len(prefix) + 1 :]: fs.cat_file(path) for path in sorted(fs.find(prefix))}


def _record_operations(monkeypatch) -> list[tuple[str, str]]:
    """(event, path) in order: `start`/`end` of each PUT, `delete` with each key of a bulk delete."""
    events: list[tuple[str, str]] = []
    put_file, bulk_delete = s3fs.S3FileSystem._put_file, s3fs.S3FileSystem._bulk_delete

    async def recorded_put(self, lpath, rpath, *args, **kwargs):
        events.append(("start", rpath))
        await asyncio.sleep(0.01)  # so PUTs of a phase overlap
        result = await put_file(self, lpath, rpath, *args, **kwargs)
        events.append(("end", rpath))
        return result

    async def recorded_delete(self, pathlist, **kwargs):
        events.extend(("delete", path) for path in pathlist)
        return await bulk_delete(self, pathlist, **kwargs)

    monkeypatch.setattr(s3fs.S3FileSystem, "_put_file", recorded_put)
    monkeypatch.setattr(s3fs.S3FileSystem, "_bulk_delete", recorded_delete)
    return events


def _phase(path: str) -> int:
    name = path.split("/published/scope/", 1)[1]
    if name.startswith(("data/", "sessions/")) and name != "sessions/README.md":
        return 0
    return {"README.md": 2, "sessions/README.md": 3}.get(name, 1)


def _assert_safe_order(events: list[tuple[str, str]]) -> None:
    puts = [(event, path) for event, path in events if event != "delete"]
    assert sum(event == "start" for event, _ in puts) > 1
    for index, (event, path) in enumerate(puts):
        if event == "start":  # nothing of an earlier phase still in flight, nothing of a later one begun
            begun = [_phase(p) for e, p in puts[:index] if e == "start"]
            ended = [_phase(p) for e, p in puts[:index] if e == "end"]
            assert all(phase <= _phase(path) for phase in begun), (path, puts[:index])
            assert sorted(p for p in begun if p < _phase(path)) == sorted(p for p in ended if p < _phase(path))
    # at most the number in flight: the phase's PUTs overlapped, up to the concurrency
    in_flight = peak = 0
    for event, _ in puts:
        in_flight += 1 if event == "start" else -1
        peak = max(peak, in_flight)
    assert 1 < peak <= 8
    deletes = [index for index, (event, _) in enumerate(events) if event == "delete"]
    last_put = max(index for index, (event, _) in enumerate(events) if event != "delete")
    assert all(index > last_put for index in deletes)


def test_s3_publish_equals_a_local_publish(tmp_path, s3_endpoint, s3_bucket, monkeypatch):
    events = _record_operations(monkeypatch)
    fs = make_s3fs(s3_endpoint)
    prefix = f"{s3_bucket}/published/scope"
    options = storage_options(ObjectStorage(endpoint_url=s3_endpoint, region_name="us-east-1"), "s3://")
    local_root = tmp_path / "local" / "scope"
    progress: list[str] = []
    builds = [  # a first version; a new one (every file changes); the same again; one without sessions
        ("v1", 60, True),
        ("v2", 70, True),
        ("v2", 70, True),
        ("v3", 0, False),
    ]
    for index, (version, sessions, card) in enumerate(builds):
        build = _build(tmp_path / f"build-{index}", version, sessions, card)
        events.clear()
        progress.clear()
        replace_folder(build, f"s3://{prefix}", options, progress=progress.append, concurrency=8)
        replace_folder(build, str(local_root))  # the plain order: a copy-and-rename per file
        fs.invalidate_cache()
        assert _s3_objects(fs, prefix) == _local_objects(local_root), version
        if index == 2:  # the same version again: nothing put but the unversioned files and cards, nothing removed
            assert not any(path.split("/scope/")[1].startswith("data/") for _, path in events), events
            assert not any(event == "delete" for event, _ in events)
        else:
            _assert_safe_order(events)
        if index == 3:  # a dropped sessions card goes before its files
            deleted = [path.split("/scope/")[1] for event, path in events if event == "delete"]
            assert deleted[0] == "sessions/README.md" and len(deleted) == 1 + 3 + 70, deleted[:3]
        done = re.search(r"([\d,]+)/([\d,]+) files", progress[-1])  # every file counted, once
        assert done and done[1] == done[2], progress[-1]


def test_a_block_on_s3_records_its_history_beside_a_kept_version_and_in_a_withdrawn_ones_folder(
    tmp_path, s3_endpoint, s3_bucket
):
    """A kept version's `versions.json` replaced alone (one PUT, the rest as published); a withdrawal
    leaves the scan report and that history, nothing else."""
    fs = make_s3fs(s3_endpoint)
    options = storage_options(ObjectStorage(endpoint_url=s3_endpoint, region_name="us-east-1"), "s3://")
    target = FolderTarget(f"s3://{s3_bucket}/published", options)
    scope = RunScope("run-a")
    prefix = f"{s3_bucket}/published/run-a"
    target.publish(_build(tmp_path / "build", "v1", 2), scope)
    fs.invalidate_cache()
    published = _s3_objects(fs, prefix)
    history = [{"version": "v1"}, block_entry("kept", "why", ["hf_token"], "now")]
    assert target.record_versions(scope, history)
    fs.invalidate_cache()
    now = _s3_objects(fs, prefix)
    assert {k: v for k, v in now.items() if k != "versions.json"} == {
        k: v for k, v in published.items() if k != "versions.json"
    }
    assert json.loads(now["versions.json"])["versions"] == history
    report = tmp_path / "secret_scan.json"
    report.write_text('{"verdict": "live"}\n')
    withdrawn = [*history, block_entry("withdrawn", "it holds it", ["hf_token"], "later")]
    assert target.publish_blocked(report, scope, withdrawn)
    fs.invalidate_cache()
    left = _s3_objects(fs, prefix)
    assert sorted(left) == ["secret_scan.json", "versions.json"]
    assert json.loads(left["versions.json"])["versions"] == withdrawn
