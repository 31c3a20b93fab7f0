"""`python killed_cli.py N ARGS...`: the real CLI, kill -9'd (its whole process group) at the N-th
file operation of a publish (0: before the first), on a local or an S3 publish root. With
`TRACE_ASSETS_TEST_OPERATIONS_LOG` set, each counted operation's target path is appended to that
file, so a test can find where in a publish the card is flipped.

The operations counted are the ones `publishing.targets.replace_folder` makes: each file put in
place (a local copy-and-rename, an S3 PUT), each new version folder moved in whole (a local
rename) and each stale file removed.
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


def _counted(operation):
    def wrapper(*args, **kwargs):
        global done
        if publishing:
            if done >= kill_at:
                os.killpg(os.getpgid(0), signal.SIGKILL)
            done += 1
            if operations_log:
                with open(operations_log, "a") as log:
                    log.write(f"{args[-1]}\n")  # the destination (put) or the path (rm)
        return operation(*args, **kwargs)

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
s3fs.S3FileSystem.put_file = _counted(s3fs.S3FileSystem.put_file)
s3fs.S3FileSystem.rm_file = _counted(s3fs.S3FileSystem.rm_file)

sys.exit(cli.main(sys.argv[2:]))
