"""Listed objects: column-wise pages of a listing, and the few objects later steps keep per trial.

Listings travel column-wise: a trial folder holds dozens of objects (every episode's prompt
files), and one Python object per listed object cost more than listing it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime


@dataclass(frozen=True)
class StoredObject:
    """One listed object, for the few per trial the later steps fetch and fingerprint."""

    key: str
    size: int
    etag: str | None  # S3's ETag; on local disks the inode and ctime, which no copy keeps
    modified: datetime | None


@dataclass
class ObjectBatch:
    """Listed objects column by column, keys relative to the run's trace_jobs/ folder.

    `skipped` marks, by position, listed entries that are not objects to read (a link, a FIFO,
    a folder that cannot be entered, an undecodable name: `local_walk.EntryKind` values). They
    are rare, so they are kept sparse; they travel among the keys so their folder gets them.
    """

    keys: list[str] = field(default_factory=list)
    sizes: list[int] = field(default_factory=list)
    etags: list[str | None] = field(default_factory=list)
    modified: list[int | None] = field(default_factory=list)  # microseconds since the epoch, UTC
    skipped: dict[int, str] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.keys)

    def append(self, key: str, size: int, etag: str | None, modified: int | None) -> None:
        self.keys.append(key)
        self.sizes.append(size)
        self.etags.append(etag)
        self.modified.append(modified)

    def extend(self, other: ObjectBatch) -> None:
        offset = len(self.keys)
        self.skipped.update({offset + position: kind for position, kind in other.skipped.items()})
        self.keys += other.keys
        self.sizes += other.sizes
        self.etags += other.etags
        self.modified += other.modified

    def split(self, index: int) -> tuple[ObjectBatch, ObjectBatch]:
        head = ObjectBatch(self.keys[:index], self.sizes[:index], self.etags[:index], self.modified[:index])
        tail = ObjectBatch(self.keys[index:], self.sizes[index:], self.etags[index:], self.modified[index:])
        for position, kind in self.skipped.items():
            if position < index:
                head.skipped[position] = kind
            else:
                tail.skipped[position - index] = kind
        return head, tail
