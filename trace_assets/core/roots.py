"""The traces, staging and publish roots must be pairwise disjoint: a publish replaces folders
under its root and staging deletes under its own, so a root inside another would let one run's
publish or staging delete source traces or other runs' datasets."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

_SAME_PROTOCOL = {"s3a": "s3", "gcs": "gs", "file": "local", "local": "local"}


def root_location(url: str) -> tuple[str, tuple[str, ...]]:
    """(protocol, path segments) a root denotes: local paths resolved (symlinks, `..`, `~`),
    object-store URLs as bucket then prefix segments, Hub roots as repo then path."""
    protocol, sep, rest = url.partition("://")
    if not sep:
        protocol, rest = "local", url
    protocol = _SAME_PROTOCOL.get(protocol.lower(), protocol.lower())
    if protocol == "local":
        return protocol, Path(rest).expanduser().resolve().parts
    if protocol == "hf" and rest.startswith("buckets/"):  # a Storage Bucket, never a repo's folder
        return "hf-buckets", tuple(part for part in rest.removeprefix("buckets/").split("/") if part)
    if protocol == "hf":
        rest = rest.removeprefix("datasets/")
        repo, _, path = rest.partition("/")
        return protocol, tuple(p for p in (repo.split("@")[0], *path.split("/")) if p)
    return protocol, tuple(part for part in rest.split("/") if part)


def overlapping_roots(roots: Mapping[str, str]) -> list[tuple[str, str]]:
    """Pairs of root names (in the mapping's order) where one equals or lies inside the other."""
    located = {name: root_location(url) for name, url in roots.items()}
    names = list(roots)
    pairs = []
    for i, first in enumerate(names):
        for second in names[i + 1 :]:
            (p1, a), (p2, b) = located[first], located[second]
            shorter = min(len(a), len(b))
            if p1 == p2 and a[:shorter] == b[:shorter]:
                pairs.append((first, second))
    return pairs


def refuse_overlapping_roots(roots: Mapping[str, str]) -> None:
    """ValueError naming both options and values when two roots are equal or nested."""
    for first, second in overlapping_roots(roots):
        relation = (
            "is the same folder as" if root_location(roots[first]) == root_location(roots[second]) else "overlaps"
        )
        raise ValueError(
            f"{first}={roots[first]!r} {relation} {second}={roots[second]!r}: the traces, staging and publish "
            "roots must be separate folders, none inside another"
        )
