"""`python killed_cli.py N ARGS...`: the real CLI, kill -9'd (its whole process group) at the N-th
file operation of a publish (0: before the first), on a local or an S3 publish root. With
`TRACE_ASSETS_TEST_OPERATIONS_LOG` set, each counted operation's target path is appended to that
file, so a test can find where in a publish the card is flipped.

The operations counted are the ones `publishing.targets.replace_folder` makes: each file put in
place (a local copy-and-rename, an S3 PUT), each new version folder moved in whole (a local
rename), each stale file removed locally and each S3 bulk delete (DeleteObjects, up to 1000 keys,
logged as its paths on one line). S3 PUTs of one phase run concurrently (fsspec's `put`): each is
counted as it starts, so a kill inside a phase lands with some of its PUTs done and others in
flight, and a kill at a phase's first operation lands after every earlier phase is done.
"""

from __future__ import annotations

import os
import signal
import sys

import s3fs
from fsspec.implementations.local import LocalFileSystem

from trace_assets import cli
from trace_assets.publishing import targets

kill_at = int(sys.argv[1])
done = 0
operations_log = os.environ.get("TRACE_ASSETS_TEST_OPERATIONS_LOG")
publishing = False  # counting starts in replace_folder, not in the pre-flight's write probe


def _count(target: str) -> None:
    """One operation of the publish: the process group is killed at the `kill_at`-th."""
    global done
    if publishing:
        if done >= kill_at:
            os.killpg(os.getpgid(0), signal.SIGKILL)
        done += 1
        if operations_log:
            with open(operations_log, "a") as log:
                log.write(f"{target}\n")


def _counted(operation):
    def wrapper(*args, **kwargs):
        _count(args[-1])  # the destination (put) or the path (rm)
        return operation(*args, **kwargs)

    return wrapper


def _counted_async(operation):
    async def wrapper(*args, **kwargs):
        _count(" ".join(args[-1]) if isinstance(args[-1], list) else args[-1])  # a bulk delete's paths
        return await operation(*args, **kwargs)

    return wrapper


def _armed(replace_folder):
    def wrapper(*args, **kwargs):
        global publishing
        publishing = True
        return replace_folder(*args, **kwargs)

    return wrapper


targets.replace_folder = _armed(targets.replace_folder)
targets.copy_atomically = _counted(targets.copy_atomically)
targets.move_into_place = _counted(targets.move_into_place)  # a new version folder, put in whole
LocalFileSystem.rm_file = _counted(LocalFileSystem.rm_file)
# The coroutines behind both the bulk calls (put, rm) and the one-file ones (put_file, rm_file).
s3fs.S3FileSystem._put_file = _counted_async(s3fs.S3FileSystem._put_file)
s3fs.S3FileSystem._bulk_delete = _counted_async(s3fs.S3FileSystem._bulk_delete)
s3fs.S3FileSystem._rm_file = _counted_async(s3fs.S3FileSystem._rm_file)

sys.exit(cli.main(sys.argv[2:]))
