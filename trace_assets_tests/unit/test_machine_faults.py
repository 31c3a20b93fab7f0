"""Faults of the machine in one line (`runtime.machine_faults`) and the space pre-flight
(`steps.free_space`): real errors where the machine makes them (a vanished folder, a locked or
corrupt SQLite file, a copy into a full file system), injected at the call where it cannot."""

from __future__ import annotations

import errno
import json
import os
import shutil
import sqlite3

import pytest
import sqlalchemy

from trace_assets.core.scope import RunScope
from trace_assets.publishing.targets import (
    FolderTarget,
    Unread,
    kept_after_fault,
    published_state,
    published_version,
    read_published_versions,
)
from trace_assets.runtime.machine_faults import INSTANCE, MAX_LINE, VANISHED, fault_detail, fault_line, machine_fault
from trace_assets.steps.free_space import NotEnoughSpace, check_free_space, space_needed

KEPT = "the published version 9cc7b0fea95f87e7 is unchanged"


def _raised(call) -> BaseException:
    try:
        call()
    except BaseException as error:  # noqa: BLE001 - the error is what the test looks at
        return error
    raise AssertionError("no error raised")


def test_a_full_publish_root_in_one_line_with_what_is_kept(tmp_path):
    root = tmp_path / "published"
    error = OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(root / "run" / "data" / "x.parquet"))
    line = fault_line(RuntimeError("publish failed"), {}, KEPT)
    assert line is None  # no machine fault in the chain: not this module's to say
    wrapped = _raised(lambda: _raise_from(RuntimeError("publish failed"), error))
    line = fault_line(wrapped, {"the staging folder": tmp_path / "staging", "the publish root": root}, KEPT)
    assert line is not None and len(line) <= MAX_LINE
    # a long folder is cut at its start (…) so that the line keeps its cause and what is kept
    assert line.startswith("no space left under the publish root ") and f"{root.name} (file system" in line
    assert "free)" in line and line.endswith(KEPT)


def test_a_copy_of_many_files_into_a_full_disk_is_one_line_and_the_detail_has_every_file(tmp_path):
    """shutil.copytree's error: one (source, destination, message) a file, the errno only in text."""
    root = tmp_path / "published"
    entries = [
        (f"/staging/s/{n}.json", f"{root}/run/.sessions.tmp-1/{n}.json", f"[Errno 28] No space left on device: '{n}'")
        for n in range(2000)
    ]
    error = shutil.Error(entries)
    assert len(str(error)) > 100_000
    line = fault_line(error, {"the publish root": root}, KEPT)
    assert line is not None and len(line) <= MAX_LINE and "no space left under the publish root" in line
    detail = fault_detail(error)
    assert all(f"{n}.json" in detail for n in (0, 1999))


def test_a_folder_removed_under_the_run_is_named_a_missing_file_is_not_a_fault(tmp_path):
    folder = tmp_path / "staging" / "run"
    folder.mkdir(parents=True)
    shutil.rmtree(folder)
    vanished = _raised(lambda: (folder / "rows.parquet").write_bytes(b"x"))
    assert machine_fault(vanished).cause == VANISHED
    line = fault_line(vanished, {"the staging folder": folder}, "")
    assert line.startswith(f"{VANISHED} under the staging folder ") and f"/staging/{folder.name} (file" in line
    (tmp_path / "here").mkdir()
    missing = _raised(lambda: (tmp_path / "here" / "absent.json").read_bytes())
    assert machine_fault(missing) is None  # the folder is there: the data's or the code's, not the machine's


def test_a_locked_instance_database_through_sqlalchemy(tmp_path):
    database = tmp_path / "runs.db"
    holder = sqlite3.connect(database, isolation_level=None)
    holder.execute("create table t (x)")
    holder.execute("begin exclusive")
    engine = sqlalchemy.create_engine(f"sqlite:///{database}", connect_args={"timeout": 0})
    try:
        with engine.connect() as connection:
            error = _raised(lambda: connection.execute(sqlalchemy.text("insert into t values (1)")))
    finally:
        holder.close()
        engine.dispose()
    assert isinstance(error, sqlalchemy.exc.OperationalError)
    line = fault_line(error, {INSTANCE: tmp_path}, "nothing is published at /p")
    assert line.startswith(
        f"the instance's database is locked by another process: the Dagster instance's database in {tmp_path}"
    )
    assert "insert" not in line.lower() and "sqlalche.me" not in line


def test_a_corrupt_instance_database(tmp_path):
    database = tmp_path / "runs.db"
    database.write_bytes(b"not a database, just bytes " * 100)
    error = _raised(lambda: sqlite3.connect(database).execute("select 1 from sqlite_master"))
    assert machine_fault(error).cause == "the instance's database is corrupt"


@pytest.mark.parametrize(
    ("code", "words"),
    [
        (errno.EROFS, "read-only file system"),
        (errno.EMFILE, "too many open files"),
        (errno.EACCES, "permission denied"),
        (errno.EDQUOT, "disk quota exceeded"),
    ],
)
def test_each_fault_of_the_machine_at_a_write_call(tmp_path, code, words):
    """Injected where a tmpfs cannot make it: the error a write call raises, inside a domain error."""
    target = tmp_path / "published" / "run" / "README.md"

    def write() -> None:
        try:
            raise OSError(code, os.strerror(code), str(target))
        except OSError:
            raise ValueError("the card could not be written") from None  # __context__ kept

    line = fault_line(_raised(write), {"the publish root": tmp_path / "published"}, KEPT)
    assert line.startswith(f"{words}") and "the publish root" in line and line.endswith(KEPT)


def test_an_error_of_the_data_is_no_machine_fault():
    assert fault_line(ValueError("trajectory.json is not JSON"), {}, KEPT) is None
    assert fault_line(OSError(errno.EINVAL, "invalid argument"), {}, KEPT) is None


def test_a_long_path_keeps_the_line_short(tmp_path):
    deep = tmp_path.joinpath(*["folder-with-a-long-name"] * 40)
    error = OSError(errno.ENOSPC, "No space left on device", str(deep / "file"))
    line = fault_line(error, {"the publish root": deep}, KEPT)
    assert len(line) <= MAX_LINE and "…" in line and line.endswith(KEPT)


def test_what_a_failed_run_left_published():
    assert published_version({"versions": [{"version": "a"}, {"version": "9cc7"}]}) == "9cc7"
    assert published_version(None) is None and published_version({"versions": "x"}) is None
    assert published_state("/p/run", "9cc7", "9cc7") == "the published version 9cc7 is unchanged"
    assert published_state("/p/run", None, None) == "nothing is published at /p/run"
    assert published_state("/p/run", "9cc7", "1b2f").startswith("version 1b2f is published")


def test_what_is_kept_is_one_read_of_the_target_that_never_raises_after_the_fault(tmp_path):
    """Before a publish, an unreadable versions.json fails the step (the publish would read it too);
    after a fault it leaves the line without a "kept" part, the error in the debug log."""
    target, scope = FolderTarget(str(tmp_path / "published")), RunScope.from_key("run")
    folder, logged = tmp_path / "published" / "run", []

    def kept(before: str | None | Unread) -> str:
        return kept_after_fault(target, scope, before, logged.append)

    assert read_published_versions(target, scope) is None
    assert kept(Unread.OUTSIDE_THE_STEPS) == published_state(str(folder), None, None)  # "nothing is published at"
    folder.mkdir(parents=True)
    (folder / "versions.json").write_text(json.dumps({"versions": [{"version": "9cc7"}]}))
    assert kept("9cc7") == kept(Unread.NOT_PUBLISHING) == "the published version 9cc7 is unchanged"
    assert kept(None).startswith("version 9cc7 is published; the next publish")
    now = kept(Unread.OUTSIDE_THE_STEPS)  # the folder cut at its start when long (the test's tmp_path)
    assert now.startswith("version 9cc7 is published at ") and now.endswith("published/run"), now
    assert logged == []

    (folder / "versions.json").unlink()
    (folder / "versions.json").mkdir()  # unreadable as a file
    with pytest.raises(IsADirectoryError):
        read_published_versions(target, scope)
    assert kept("9cc7") == ""
    assert len(logged) == 1 and "could not read the published version" in logged[0]


def test_the_space_estimate_counts_the_build_and_what_is_staged_already():
    needed = space_needed(1_000_000, staged_bytes=0)
    assert needed.publish == 1_200_000 and needed.staging == 1_700_000
    assert space_needed(1_000_000, staged_bytes=400_000).staging == 1_300_000


def test_staging_without_room_is_refused_naming_both_figures(tmp_path):
    free = shutil.disk_usage(tmp_path).free
    with pytest.raises(NotEnoughSpace, match=r"needs about .*, its file system has .* free") as refused:
        check_free_space(free, tmp_path / "staging" / "run", None)
    assert str(tmp_path / "staging" / "run") in str(refused.value)
    assert check_free_space(1000, tmp_path / "staging" / "run", tmp_path / "published" / "run") == []


def _raise_from(error: BaseException, cause: BaseException) -> None:
    raise error from cause
