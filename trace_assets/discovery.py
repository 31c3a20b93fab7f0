"""Which scopes to export, tick by tick, at a cost that follows what changed, not the sweep's size.

A tick lists the traces root with a delimiter (one request per 1,000 runs); lists a run's
`trace_jobs/` with a delimiter (its step folders, one request) when the run is new, still has a
scope that is not exported, or every `run_recheck` seconds (spread over runs), so a new step of a
settled run is found within that time; and lists a scope in full only while it is growing or
settling, or when its re-check is due. A scope exported and unchanged is re-checked on a
back-off (doubling from `BACKOFF_START` to `BACKOFF_MAX`); deleting the sensor's cursor re-checks
every scope at once, and re-exports none that is already published.

A scope is exported once its listing has been quiet for the settle period, counted from its newest
object's modification time: a sweep finished days ago is requested on first sight. One already
published (by the CLI or a backfill: `published_at` reads the asset's materializations) and not
written since is taken as exported, never exported twice.

The cursor maps each scope to `[fingerprint, quiet_since, fingerprint_requested, next_check,
backoff]` and each run to `[next_check]`: a few dozen bytes a scope. Pure: the sensor
hands in the listings, the publish times and the clock. One bad run or scope never hides the
others: its error is reported, its cursor entry kept, and it is listed again on the next tick.
"""

from __future__ import annotations

import json
import math
import zlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import timedelta

from trace_assets.steps.incremental import fingerprint
from trace_assets.store.local_walk import escaped_name
from trace_assets.store.objects import ObjectBatch
from trace_assets.store.trace_store import EPOCH

CURSOR_VERSION = 2
BACKOFF_START = 3600.0  # an exported scope's first re-check, an hour after its export
BACKOFF_MAX = 7 * 86400.0  # then doubling up to a week
RUN_RECHECK = 600.0  # a settled run's step folders are listed again within this (a request a run)


def listing_fingerprint(pages: Iterable[ObjectBatch]) -> tuple[str, float | None]:
    """Object count, total bytes and newest modification time as a fingerprint (what changes while
    a scope is written), and that newest time in seconds since the epoch (None: no objects)."""
    count = size = 0
    newest = None
    for page in pages:
        count += len(page)
        size += sum(page.sizes)
        newest = max((m for m in [*page.modified, newest] if m is not None), default=None)
    modified = "" if newest is None else (EPOCH + timedelta(microseconds=newest)).isoformat()
    return fingerprint([], count, size, modified)[:16], None if newest is None else newest / 1e6


@dataclass
class TickPlan:
    """What one tick decided: scopes to export (key, fingerprint), new keys, and why the rest wait."""

    requests: list[tuple[str, str]] = field(default_factory=list)
    new_keys: list[str] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)  # scope key -> why it is not requested
    errors: dict[str, str] = field(default_factory=dict)  # run or scope -> its listing's error
    listed_runs: int = 0  # runs whose trace_jobs/ was listed this tick
    listed_scopes: int = 0  # scopes listed in full this tick
    cursor: str = ""


def load_cursor(cursor: str | None) -> dict[str, list]:
    """The scopes' entries of a cursor (an older version's cursor starts afresh)."""
    return _load(cursor)[1]


def _load(cursor: str | None) -> tuple[dict[str, list], dict[str, list]]:
    data = json.loads(cursor) if cursor else {}
    if data.get("v") != CURSOR_VERSION:
        return {}, {}
    return data.get("runs", {}), data.get("scopes", {})


def _spread(key: str, seconds: float) -> float:
    """Between half and all of `seconds`, fixed per key: re-checks of scopes exported in one tick
    do not all fall due in one later tick."""
    return seconds * (0.5 + (zlib.crc32(key.encode()) % 1000) / 2000)


def _minutes(seconds: float) -> int:
    return max(1, math.ceil(seconds / 60))


def plan_tick(
    cursor: str | None,
    run_ids: Iterable[str],
    run_scopes: Callable[[str], list[str]],
    listing: Callable[[str], Iterable[ObjectBatch]],
    published_at: Callable[[str], float | None],
    known: Iterable[str],
    now: float,
    settle: float,
    run_recheck: float = RUN_RECHECK,
) -> TickPlan:
    """One tick over the runs under the root (see the module's docstring)."""
    runs, scopes = _load(cursor)
    known = set(known)
    plan = TickPlan()
    next_runs: dict[str, list] = {}
    next_scopes: dict[str, list] = {}
    for run_id in sorted(run_ids):
        if escaped_name(run_id) != run_id:
            plan.errors[escaped_name(run_id)] = "the run folder's name is not UTF-8"
            continue
        ours = {k: v for k, v in scopes.items() if k == run_id or k.startswith(run_id + "/")}
        [run_check] = runs.get(run_id, [0.0])
        pending = run_id not in runs or any(entry[2] != entry[0] for entry in ours.values())
        keys = sorted(ours)
        if pending or now >= run_check:
            try:
                keys = run_scopes(run_id)
                plan.listed_runs += 1
            except Exception as err:  # this run's listing, not the tick's: the other runs go on
                plan.errors[run_id] = f"{type(err).__name__}: {err}"
                next_scopes.update(ours)
                next_runs[run_id] = [run_check]
                continue
        for key in keys:
            planned = _plan_scope(key, scopes.get(key), listing, published_at, now, settle, plan)
            if planned is not None:
                next_scopes[key] = planned
        plan.new_keys += [key for key in keys if key not in known and key in next_scopes]
        settled = all(key in next_scopes and next_scopes[key][2] == next_scopes[key][0] for key in keys)
        if settled:  # (or no trace_jobs/ yet)
            next_runs[run_id] = [run_check if now < run_check else now + _spread(run_id, run_recheck)]
        else:
            next_runs[run_id] = [now]
    plan.cursor = json.dumps(
        {"v": CURSOR_VERSION, "runs": next_runs, "scopes": next_scopes}, separators=(",", ":"), sort_keys=True
    )
    return plan


def _plan_scope(
    key: str,
    entry: list | None,
    listing: Callable[[str], Iterable[ObjectBatch]],
    published_at: Callable[[str], float | None],
    now: float,
    settle: float,
    plan: TickPlan,
) -> list | None:
    """The scope's next cursor entry (None: a new scope whose listing failed, tried afresh next tick)."""
    previous_fp, since, requested, next_check, backoff = entry or [None, None, None, 0.0, 0.0]
    if entry is not None and requested == previous_fp and now < next_check:
        plan.skipped[key] = f"published and unchanged; re-checked in {_minutes(next_check - now)} min"
        return entry
    try:
        current, newest = listing_fingerprint(listing(key))
    except Exception as err:  # this scope's listing only
        plan.errors[key] = f"{type(err).__name__}: {err}"
        return entry
    plan.listed_scopes += 1
    if current != previous_fp:  # quiet since its newest object, unless that is older (a deletion)
        since = newest if newest is not None and (since is None or newest > since) else now
        since = min(since, now)
    if requested == current:
        backoff = min(max(backoff * 2, BACKOFF_START), BACKOFF_MAX)
        plan.skipped[key] = "published and unchanged"
        return [current, since, requested, now + _spread(key, backoff), backoff]
    if now - since < settle:
        plan.skipped[key] = f"settling, {_minutes(settle - (now - since))} min left"
        return [current, since, requested, now, 0.0]
    published = published_at(key)
    if published is not None and newest is not None and published >= newest:
        plan.skipped[key] = "already published (by the CLI or a backfill) and unchanged since"
    else:
        plan.requests.append((key, current))
    return [current, since, current, now + _spread(key, BACKOFF_START), BACKOFF_START]
