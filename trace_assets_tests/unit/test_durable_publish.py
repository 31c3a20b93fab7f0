"""Published local files are durable (issue 26 item 6): each file is on disk before the rename that
makes it visible and its folder after, so after a power loss a renamed card or shard is never empty.
A single file is fsynced; a folder moved into place whole is flushed by one syncfs of its file
system (issue 21), or, without syncfs, file by file. os.fsync and the syncfs call are wrapped with a
recorder: which file or folder (by inode, and path at the time) each call flushed, in order with
the renames."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from trace_assets.core.scope import RunScope
from trace_assets.publishing import targets
from trace_assets.publishing.targets import FolderTarget, move_into_place
from trace_assets.runtime import atomic_files
from trace_assets.runtime.atomic_files import TEMP_MARK, copy_atomically


@pytest.fixture
def recorded(monkeypatch) -> list[tuple[str, str, int]]:
    """(`fsync` or `syncfs`, path, inode) per flush and (`rename`, destination, inode) per rename, in order."""
    events: list[tuple[str, str, int]] = []
    fsync, syncfs, replace, rename = os.fsync, atomic_files._SYNCFS, os.replace, os.rename

    def recording_fsync(fd: int) -> None:
        events.append(("fsync", os.readlink(f"/proc/self/fd/{fd}"), os.fstat(fd).st_ino))
        fsync(fd)

    def recording_syncfs(fd: int) -> int:
        events.append(("syncfs", os.readlink(f"/proc/self/fd/{fd}"), os.fstat(fd).st_ino))
        return syncfs(fd)  # type: ignore[misc]

    def renaming(real):
        def wrapper(source, destination, *args, **kwargs):
            inode = os.stat(source).st_ino
            real(source, destination, *args, **kwargs)
            events.append(("rename", str(Path(destination).absolute()), inode))

        return wrapper

    monkeypatch.setattr(os, "fsync", recording_fsync)
    if syncfs is not None:
        monkeypatch.setattr(atomic_files, "_SYNCFS", recording_syncfs)
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


def _flushed_before(events, index: int, inodes: set[int], folder_inode: int) -> bool:
    """Every inode is on disk before event `index`: one syncfs of the folder, or a fsync each."""
    before = events[:index]
    return ("syncfs", folder_inode) in [(kind, inode) for kind, _, inode in before] or {
        inode for kind, _, inode in before if kind == "fsync"
    } >= inodes


@pytest.mark.parametrize("has_syncfs", [True, False])
def test_a_moved_folder_is_flushed_whole_before_its_rename(tmp_path, recorded, monkeypatch, has_syncfs):
    if not has_syncfs:  # a C library without syncfs: a fsync per file and folder
        monkeypatch.setattr(atomic_files, "_SYNCFS", None)
    elif atomic_files._SYNCFS is None:
        pytest.skip("this C library has no syncfs")
    source = tmp_path / "build" / "data" / "v1"
    for name in ("train-00000-of-00002.parquet", "train-00001-of-00002.parquet", "deeper/x.jsonl"):
        (source / name).parent.mkdir(parents=True, exist_ok=True)
        (source / name).write_bytes(b"shard")
    inodes = {p.stat().st_ino for p in [source, *source.rglob("*")]}
    destination = tmp_path / "published" / "data" / "v1"
    (tmp_path / "published").mkdir()
    move_into_place(source, destination)
    renamed = _index(recorded, "rename", destination)
    flushes = [(kind, inode) for kind, _, inode in recorded[:renamed]]
    if has_syncfs:
        assert flushes == [("syncfs", destination.stat().st_ino)]  # one call for the whole folder
    else:
        assert {inode for kind, inode in flushes if kind == "fsync"} == inodes
    after = [path for kind, path, _ in recorded[renamed + 1 :] if kind == "fsync"]
    assert after == [str(destination.parent), str(tmp_path / "published")]  # `data/` was made: its folder too


def test_a_folder_copied_across_file_systems_is_flushed_before_its_rename(tmp_path, recorded, monkeypatch):
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
    assert _flushed_before(recorded, renamed, {inode}, destination.stat().st_ino)
    assert recorded[renamed + 1][:2] == ("fsync", str(destination.parent))


def test_every_file_and_folder_of_a_local_publish_is_flushed(tmp_path, recorded):
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
    moved = {scope / "data" / "v1": published[2:3], scope / "sessions" / "v1": published[4:5]}
    for folder, inside in moved.items():  # went in whole: flushed before their rename
        renamed = _index(recorded, "rename", folder)
        assert _flushed_before(recorded, renamed, {p.stat().st_ino for p in [folder, *inside]}, folder.stat().st_ino)
    others = [path for path in published + folders if path not in {*moved, *published[2:3], *published[4:5]}]
    assert all(path.stat().st_ino in fsynced for path in others)
    # the cards: the file flushed before its rename, the scope's folder after it
    for card in (scope / "README.md", scope / "sessions" / "README.md"):
        renamed = _index(recorded, "rename", card)
        assert ("fsync", card.stat().st_ino) in [(k, i) for k, _, i in recorded[:renamed]]
        assert recorded[renamed + 1][:2] == ("fsync", str(card.parent))


def test_files_below_lists_what_rglob_lists_and_empty_folders_go_deepest_first(tmp_path):
    """The publish walks a version's 22,000 files with os.scandir (`files_below`) and removes the
    old versions' folders with os.walk: the same files and folders as pathlib's rglob, links
    neither followed into nor removed."""
    root = tmp_path / "scope"
    for name in ("a/b/c.jsonl", "a-c/d.jsonl", "a/e.jsonl", "top.md"):
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(name)
    (root / "old" / "v1" / "ab").mkdir(parents=True)  # an old version, emptied
    (root / "elsewhere").mkdir()
    (root / "elsewhere" / "x.jsonl").write_text("x")
    (root / "link-to-file").symlink_to(root / "top.md")
    (root / "a" / "link-to-folder").symlink_to(root / "elsewhere")
    expected = {p.relative_to(root).as_posix(): p.stat().st_size for p in root.rglob("*") if p.is_file()}
    listed = atomic_files.files_below(root)
    assert listed == expected
    assert [root / name for name in sorted(listed, key=lambda name: name.split("/"))] == sorted(
        root / name for name in listed
    )
    targets._remove_empty_folders(root)
    assert not (root / "old").exists() and (root / "a" / "link-to-folder").is_symlink()
    assert atomic_files.files_below(root) == expected
