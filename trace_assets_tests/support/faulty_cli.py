"""`python faulty_cli.py ERRNO ROOT ARGS...`: the real CLI, whose file copies into ROOT fail with
ERRNO (a read-only remount, no file handles left, a refused permission), as a write call does when
the machine fails where a tmpfs cannot make it fail. Copies elsewhere (staging) work."""

from __future__ import annotations

import os
import shutil
import sys

from trace_assets import cli

code, root = int(sys.argv[1]), os.path.abspath(sys.argv[2])
_copyfile = shutil.copyfile


def _failing_copyfile(source, destination, *args, **kwargs):
    if os.path.abspath(destination).startswith(root + os.sep):
        raise OSError(code, os.strerror(code), str(destination))
    return _copyfile(source, destination, *args, **kwargs)


shutil.copyfile = _failing_copyfile
sys.exit(cli.main(sys.argv[3:]))
