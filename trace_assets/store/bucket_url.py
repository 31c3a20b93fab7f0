"""Hub Storage Bucket URLs (`hf://buckets/<namespace>/<bucket>[/<prefix>]`), parsed without importing
huggingface_hub: the settings check a traces root with it at start."""

from __future__ import annotations

from dataclasses import dataclass

BUCKET_SCHEME = "hf://buckets/"


def is_bucket_url(url: str) -> bool:
    """A Hub Storage Bucket URL (`hf://buckets/...`), not a Hub repo's (`hf://datasets/...`)."""
    return url.startswith(BUCKET_SCHEME)


@dataclass(frozen=True)
class BucketRoot:
    """Where a bucket URL points: the bucket's id (`namespace/name`) and a prefix in it ("" for its root)."""

    bucket_id: str
    prefix: str

    @classmethod
    def parse(cls, url: str) -> BucketRoot:
        """ValueError for anything but `hf://buckets/<namespace>/<bucket>[/<prefix>]`."""
        namespace, _, rest = url.removeprefix(BUCKET_SCHEME).partition("/")
        name, _, prefix = rest.partition("/")
        parts = [part for part in prefix.split("/") if part]
        if not is_bucket_url(url) or not namespace or not name or any(part in (".", "..") for part in parts):
            raise ValueError(
                f"a bucket root must look like 'hf://buckets/<namespace>/<bucket>[/<prefix>]', got {url!r}"
            )
        return cls(f"{namespace}/{name}", "/".join(parts))

    @property
    def url(self) -> str:
        return f"{BUCKET_SCHEME}{self.bucket_id}" + (f"/{self.prefix}" if self.prefix else "")
