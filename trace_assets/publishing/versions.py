"""A scope's version history: one entry per publish, kept in `versions.json` across publishes.

The previous entries are read through the publish target before it is replaced; each new entry
says why its figures differ from the one before (the source changed, the options changed, or the
same source read under changed rules), so the card can say "an earlier version had 255 rows from a
partial listing; rebuilt".

A run the secret scan blocked over a published version adds an entry of its own (`block_entry`):
what became of that version (kept or withdrawn, `blocked_version`) and why, so the history of a
scope whose version vanished, or stayed through a block, says so on the next card.
"""

from __future__ import annotations

import json
from typing import Any

from trace_assets.core.accounting import Coverage
from trace_assets.harbor.options import ExportOptions
from trace_assets.publishing.card_facts import CardFacts
from trace_assets.publishing.shards import ShardSet

FIGURES = ("trial_dirs", "scored", "exported", "rows", "objects", "bytes")
BLOCK = "blocked"  # the key of an entry that records a block rather than a version


def versions_json(entries: list[dict[str, Any]]) -> str:
    """`versions.json`'s text."""
    return json.dumps({"versions": entries}, indent=2) + "\n"


def is_block(entry: dict[str, Any]) -> bool:
    return isinstance(entry.get(BLOCK), dict)


def block_entry(previous_version: str, why: str, kinds: list[str], blocked_at: str) -> dict[str, Any]:
    """A blocked run's entry: what became of the version before it (`PreviousVersion`'s value), why,
    and the kinds of the findings that blocked it (names only)."""
    return {"blocked_at": blocked_at, BLOCK: {"previous_version": previous_version, "why": why, "kinds": kinds}}


def with_block(earlier: list[dict[str, Any]], entry: dict[str, Any]) -> list[dict[str, Any]]:
    """The history with the block recorded; as it was when its last entry says the same already
    (the scope blocked again the same way)."""
    if earlier and is_block(earlier[-1]) and earlier[-1][BLOCK] == entry[BLOCK]:
        return earlier
    return [*earlier, entry]


def last_version(entries: list[Any]) -> dict[str, Any] | None:
    """The newest entry that is a version (blocks after it are not)."""
    return next((e for e in reversed(entries) if isinstance(e, dict) and not is_block(e)), None)


def version_entry(
    coverage: Coverage, facts: CardFacts, shards: ShardSet, options: ExportOptions, published_at: str | None
) -> dict[str, Any]:
    return {
        "version": shards.version,
        "published_at": published_at,
        "trial_dirs": coverage.trial_dirs,
        "scored": coverage.scored,
        "exported": coverage.exported,
        "rows": coverage.rows,
        # the mean finite, valid reward and how many it averages: what a root card's table weighs
        "mean_reward": round(facts.reward_stats.mean, 6) if facts.rewards else None,
        "rewards": len(facts.rewards),
        "objects": facts.objects,
        "bytes": facts.bytes,
        "options": options.harbor_flags(),
    }


def has_history(published_versions: Any) -> bool:
    """Whether a published `versions.json` holds a history (else the version before, if any, was
    published before histories were kept, and its `coverage.json` stands for it)."""
    return isinstance(published_versions, dict) and isinstance(published_versions.get("versions"), list)


def earlier_versions(published_versions: Any, published_coverage: dict[str, Any] | None) -> list[dict[str, Any]]:
    """The published history; a version published before histories existed is one undated entry."""
    if has_history(published_versions):
        return [v for v in published_versions["versions"] if isinstance(v, dict)]
    if published_coverage:
        return [{"version": None, "published_at": None, **{k: published_coverage.get(k) for k in FIGURES[:4]}}]
    return []


def why_changed(previous: dict[str, Any] | None, entry: dict[str, Any]) -> str:
    """One phrase on what differs from the previous version, most telling cause first."""
    if previous is None:
        return "first published version"
    changes = []
    if previous.get("objects") is not None and (previous.get("objects"), previous.get("bytes")) != (
        entry["objects"],
        entry["bytes"],
    ):
        changes.append(
            f"the source changed ({previous['objects']:,} -> {entry['objects']:,} objects, "
            f"{previous['trial_dirs']:,} -> {entry['trial_dirs']:,} trial folders)"
        )
    elif previous.get("trial_dirs") != entry["trial_dirs"]:
        changes.append(f"trial folders {previous.get('trial_dirs')} -> {entry['trial_dirs']:,}")
    if previous.get("options") is not None and previous["options"] != entry["options"]:
        changes.append("export options changed (" + " ".join(entry["options"]) + ")")
    if not changes and previous.get("rows") != entry["rows"]:
        changes.append("the same source read again under changed export rules")
    if not changes:
        return "republished; same figures" if previous.get("version") != entry["version"] else "republished unchanged"
    return "; ".join(changes)


def history(earlier: list[dict[str, Any]], entry: dict[str, Any]) -> list[dict[str, Any]]:
    """The earlier entries then this one, each with its `why` against the one before. Republishing
    the same shards under the same options keeps the history as it was (and the card's bytes)."""
    if (
        earlier
        and not is_block(earlier[-1])
        and all(earlier[-1].get(k) == entry[k] for k in ("version", "options", *FIGURES))
    ):
        return [*earlier[:-1], {**entry, **earlier[-1]}]  # figures added since (the mean reward) filled in
    return [*earlier, {**entry, "why": why_changed(last_version(earlier), entry)}]
