"""Which runs to export, tick by tick: a run is exported once its listing has stopped changing.

The cursor maps each run to `[fingerprint, first_seen_with_it, fingerprint_last_requested]`,
so it survives restarts, stays a few dozen bytes a run, and a run that grows after its export
is exported again once it settles anew. Pure: the sensor hands in listings and the clock.

One bad run never hides the others: a run whose listing fails (or whose folder name is not
UTF-8, so it cannot be a partition key) is reported with its error, keeps its cursor entry, and
is listed again on the next tick.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from datetime import timedelta

from trace_assets.steps.incremental import fingerprint
from trace_assets.store.local_walk import escaped_name
from trace_assets.store.objects import ObjectBatch
from trace_assets.store.trace_store import EPOCH

CURSOR_VERSION = 1


def listing_fingerprint(pages: Iterable[ObjectBatch]) -> str:
    """Object count, total bytes and newest modification time: what changes while a run is written."""
    count = size = 0
    newest = None
    for page in pages:
        count += len(page)
        size += sum(page.sizes)
        newest = max((m for m in [*page.modified, newest] if m is not None), default=None)
    modified = "" if newest is None else (EPOCH + timedelta(microseconds=newest)).isoformat()
    return fingerprint([], count, size, modified)[:16]


def run_fingerprints(
    run_ids: Iterable[str], listing: Callable[[str], Iterable[ObjectBatch]]
) -> tuple[dict[str, str], dict[str, str]]:
    """Each run's listing fingerprint, and the runs that could not be listed, with why."""
    fingerprints: dict[str, str] = {}
    failures: dict[str, str] = {}
    for run_id in run_ids:
        if escaped_name(run_id) != run_id:
            failures[escaped_name(run_id)] = "the run folder's name is not UTF-8"
            continue
        try:
            fingerprints[run_id] = listing_fingerprint(listing(run_id))
        except Exception as err:  # this run's listing, not the tick's: the other runs go on
            failures[run_id] = f"{type(err).__name__}: {err}"
    return fingerprints, failures


def load_cursor(cursor: str | None) -> dict[str, list]:
    if not cursor:
        return {}
    data = json.loads(cursor)
    return data.get("runs", {}) if data.get("v") == CURSOR_VERSION else {}


def dump_cursor(runs: dict[str, list]) -> str:
    return json.dumps({"v": CURSOR_VERSION, "runs": runs}, separators=(",", ":"), sort_keys=True)


def plan_requests(
    seen: dict[str, list], fingerprints: dict[str, str], now: float, settle: float, unlisted: Iterable[str] = ()
) -> tuple[list[str], dict[str, list]]:
    """Which runs to export now, and the next cursor state. Pure, so ticks are easy to reason about.

    `unlisted` runs (their listing failed this tick) keep their cursor entry as it was.
    """
    to_request = []
    state: dict[str, list] = {run_id: seen[run_id] for run_id in unlisted if run_id in seen}
    for run_id, current in sorted(fingerprints.items()):
        previous_fp, since, requested = seen.get(run_id, [None, now, None])
        if previous_fp != current:
            since = now
        if requested != current and now - since >= settle:
            to_request.append(run_id)
            requested = current
        state[run_id] = [current, since, requested]
    return to_request, state
