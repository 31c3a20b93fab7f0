"""Reads below one local folder that no symbolic link can lead out of (see `trace_store`).

Only the standard library and `accounting`: the rows step's worker processes read trial files
with it too, and start with nothing else.
"""

from __future__ import annotations

import errno
import os
import stat

from trace_assets.core.accounting import Exclusion, Reason

_FOLDER_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_TRIAL_ERRNOS = frozenset({errno.ENOENT, errno.EACCES, errno.EPERM, errno.EISDIR, errno.ENXIO, errno.ENAMETOOLONG})


class ConfinedReader:
    """Reads files below one folder without following any link, reusing the open folders of the
    previous key (keys come a trial at a time), so a read costs an `openat` or two more than
    a plain `open`."""

    def __init__(self, base: str):
        self._base = os.open(base, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        self._open: list[tuple[str, int]] = []  # (folder name, fd) from the base down

    def close(self) -> None:
        self._unwind(0)
        os.close(self._base)

    def _unwind(self, depth: int) -> None:
        while len(self._open) > depth:
            os.close(self._open.pop()[1])

    def read(self, key: str, start: int = 0, length: int | None = None) -> bytes | Exclusion:
        """The file's bytes, or `length` of them from `start` (fewer at its end)."""
        *folders, name = key.split("/")
        if not name or any(part in ("", ".", "..") for part in folders) or name in (".", ".."):
            return Exclusion(Reason.UNREADABLE, f"{key}: not a plain relative path")
        depth = 0
        while depth < min(len(folders), len(self._open)) and self._open[depth][0] == folders[depth]:
            depth += 1
        self._unwind(depth)
        try:
            for folder in folders[depth:]:
                parent = self._open[-1][1] if self._open else self._base
                self._open.append((folder, os.open(folder, _FOLDER_FLAGS, dir_fd=parent)))
            return self._read_file(key, name, start, length)
        except OSError as err:
            return self._refusal(key, err)

    def _read_file(self, key: str, name: str, start: int, length: int | None) -> bytes | Exclusion:
        fd = os.open(name, _FILE_FLAGS, dir_fd=self._open[-1][1] if self._open else self._base)
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                return Exclusion(Reason.NOT_A_FILE, f"{key} is not a regular file")
            if length is not None:
                return os.pread(fd, length, start)
            chunks = []
            while chunk := os.read(fd, max(info.st_size + 1, 65536)):
                chunks.append(chunk)
            return b"".join(chunks)
        finally:
            os.close(fd)

    def _refusal(self, key: str, err: OSError) -> Exclusion:
        if err.errno in (errno.ELOOP, errno.ENOTDIR):  # O_NOFOLLOW met a link (or a file where a folder was)
            return Exclusion(Reason.UNSAFE_LINK, f"{key}: a symbolic link in the path, not followed")
        if err.errno in _TRIAL_ERRNOS:
            return Exclusion(Reason.UNREADABLE, f"{key}: {err.strerror}")
        raise err


class FolderReadError(Exception):
    """Reading below the folder failed for a reason that is not one trial's (see `ConfinedReader`);
    `path` is the file's, `error` the system's."""

    def __init__(self, path: str, error: OSError):
        super().__init__(f"{path}: {error}")
        self.path, self.error = path, error


def read_files(base: str, keys: list[str]) -> dict[str, bytes | Exclusion]:
    """Each key's bytes (keys relative to `base`), or the trial-level reason it cannot be read."""
    results: dict[str, bytes | Exclusion] = {}
    key = ""
    try:
        reader = ConfinedReader(base)
        try:
            for key in keys:
                results[key] = reader.read(key)
        finally:
            reader.close()
    except OSError as err:
        raise FolderReadError(base + key, err) from err
    return results
