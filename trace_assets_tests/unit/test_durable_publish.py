"""Published local files are durable (issue 26 item 6): each file is fsynced before the rename that
makes it visible and its folder after, so after a power loss a renamed card or shard is never empty.
os.fsync is wrapped with a recorder: which file or folder (by inode, and path at the time) each
call flushed, in order with the renames."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from trace_assets.atomic_files import TEMP_MARK, copy_atomically
from trace_assets.publishing import targets
from trace_assets.publishing.targets import FolderTarget, move_into_place
from trace_assets.scope import RunScope


@pytest.fixture
def recorded(monkeypatch) -> list[tuple[str, str, int]]:
    """(`fsync`, path, inode) per fsync and (`rename`, destination, inode) per rename, in order."""
    events: list[tuple[str, str, int]] = []
    fsync, replace, rename = os.fsync, os.replace, os.rename

    def recording_fsync(fd: int) -> None:
        events.append(("fsync", os.readlink(f"/proc/self/fd/{fd}"), os.fstat(fd).st_ino))
        fsync(fd)

    def renaming(real):
        def wrapper(source, destination, *args, **kwargs):
            inode = os.stat(source).st_ino
            real(source, destination, *args, **kwargs)
            events.append(("rename", str(Path(destination).absolute()), inode))

        return wrapper

    monkeypatch.setattr(os, "fsync", recording_fsync)
    monkeypatch.setattr(os, "replace", renaming(replace))
    monkeypatch.setattr(os, "rename", renaming(rename))
    return events


def _index(events, kind: str, path: Path) -> int:
    return next(i for i, (k, p, _) in enumerate(events) if k == kind and p == str(path.absolute()))


def test_a_copied_file_is_fsynced_then_renamed_then_its_folder(tmp_path, recorded):
    source = tmp_path / "card.md"
    source.write_text("new card")
    path = tmp_path / "published" / "scope" / "README.md"  # two folders made on the way
    copy_atomically(source, path)
    kinds = [kind for kind, _, _ in recorded]
    assert kinds == ["fsync", "rename", "fsync", "fsync", "fsync"], recorded
    _, temp, inode = recorded[0]
    assert TEMP_MARK in Path(temp).name and inode == path.stat().st_ino  # the file itself, under its temp name
    assert recorded[1][1] == str(path)
    # its folder, then the folders holding the new folders' names
    assert [p for _, p, _ in recorded[2:]] == [str(path.parent), str(tmp_path / "published"), str(tmp_path)]


def test_a_moved_folder_is_fsynced_whole_before_its_rename(tmp_path, recorded):
    source = tmp_path / "build" / "data" / "v1"
    for name in ("train-00000-of-00002.parquet", "train-00001-of-00002.parquet", "deeper/x.jsonl"):
        (source / name).parent.mkdir(parents=True, exist_ok=True)
        (source / name).write_bytes(b"shard")
    inodes = {p.stat().st_ino for p in [source, *source.rglob("*")]}
    destination = tmp_path / "published" / "data" / "v1"
    (tmp_path / "published").mkdir()
    move_into_place(source, destination)
    renamed = _index(recorded, "rename", destination)
    assert {inode for kind, _, inode in recorded[:renamed] if kind == "fsync"} == inodes
    after = [path for kind, path, _ in recorded[renamed + 1 :] if kind == "fsync"]
    assert after == [str(destination.parent), str(tmp_path / "published")]  # `data/` was made: its folder too


def test_a_folder_copied_across_file_systems_is_fsynced_before_its_rename(tmp_path, recorded, monkeypatch):
    source = tmp_path / "build" / "v1"
    source.mkdir(parents=True)
    (source / "a.parquet").write_bytes(b"shard")
    destination = tmp_path / "published" / "v1"
    real_rename = os.rename  # the recorder

    def cross_device(src, dst, *args, **kwargs):
        if Path(src) == source:
            raise OSError(errno.EXDEV, "Invalid cross-device link")
        return real_rename(src, dst, *args, **kwargs)

    monkeypatch.setattr(targets.os, "rename", cross_device)
    move_into_place(source, destination)
    renamed = _index(recorded, "rename", destination)
    inode = (destination / "a.parquet").stat().st_ino  # the copy's
    assert ("fsync", inode) in [(kind, i) for kind, _, i in recorded[:renamed]]
    assert recorded[renamed + 1][:2] == ("fsync", str(destination.parent))


def test_every_file_and_folder_of_a_local_publish_is_fsynced(tmp_path, recorded):
    build = tmp_path / "build"
    files = {
        "README.md": "card",
        "coverage.json": "{}",
        "data/v1/train-00000-of-00001.parquet": "shard",
        "sessions/README.md": "sessions card",
        "sessions/v1/ab/trial.jsonl": "{}",
    }
    for name, text in files.items():
        (build / name).parent.mkdir(parents=True, exist_ok=True)
        (build / name).write_text(text)
    root = tmp_path / "published"
    FolderTarget(str(root)).publish(build, RunScope("run"))
    scope = root / "run"
    published = [scope / name for name in files] + [root / "README.md"]  # the root card too
    folders = [scope, scope / "data", scope / "data" / "v1", scope / "sessions", scope / "sessions" / "v1"]
    fsynced = {inode for kind, _, inode in recorded if kind == "fsync"}
    assert all(path.stat().st_ino in fsynced for path in published + folders)
    # the cards: the file flushed before its rename, the scope's folder after it
    for card in (scope / "README.md", scope / "sessions" / "README.md"):
        renamed = _index(recorded, "rename", card)
        assert ("fsync", card.stat().st_ino) in [(k, i) for k, _, i in recorded[:renamed]]
        assert recorded[renamed + 1][:2] == ("fsync", str(card.parent))
