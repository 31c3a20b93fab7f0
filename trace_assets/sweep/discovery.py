"""Which scopes to export, tick by tick, at a cost that follows what changed, not the sweep's size.

A tick lists the traces root with a delimiter (one request per 1,000 runs); lists a run's
`trace_jobs/` with a delimiter (its step folders, one request) when the run is new, still has a
scope that is not exported, or every `run_recheck` seconds (spread over runs), so a new step of a
settled run is found within that time; and lists a scope in full only while it is growing or
settling, or when its re-check is due. A scope exported and unchanged is re-checked on a
back-off (doubling from `BACKOFF_START` to `BACKOFF_MAX`); deleting the sensor's cursor re-checks
every scope at once, and re-exports none that is already published.

A scope is exported once its listing has been quiet for the settle period, counted from its newest
object's modification time: a sweep finished days ago is requested on first sight. One whose newest
try published it (by the CLI or a backfill too: `ScopeFacts`, read from the instance as `trace-assets
status` reads them) after its listing took its form is taken as exported, never exported twice; one
whose newest try was blocked or failed is not "published", whatever an older version. A scope whose
export was requested is followed at every tick from the instance alone (no listing) until its try
ends: `published` at the next tick after its run succeeded. So is one whose export run someone else
started or ended since the last tick (the UI's Materialize, the CLI, a backfill: `TickSources.tried`),
whatever its back-off: the sensor says "exporting", then what that run did, as `status` does.

An operator's re-check request (`trace-assets recheck SCOPE`, the `recheck_scopes` job) lists a
scope at the next tick whatever its back-off (`recheck`); one whose listing (or its run's) fails
is listed again at the next tick. A scope requested but not published since its listing settled,
whose export run failed, is requested again (`TickPlan.retried`: a new run key, as Dagster never
launches a run key twice) at its next re-check or on request, so a transient failure does not
leave it unexported for good; at most `MAX_RETRIES` times for one listing (a refused shrink
fails every time), then only when its listing changes or on request. One whose run a blocking
check stopped (`ScopeState.BLOCKED`: the secret scan under a blocking policy, or the accounting)
is not requested again for the same listing, as it would read and scan the whole scope to be
blocked the same way: its skip reason is the check's line (`trace-assets status`'s), until its
listing changes or an operator asks (`trace-assets recheck KEY`, after changing the policy or
the allowlist). A scope requested afresh (a deleted cursor) whose last export failed or was
blocked is marked retried too: its run key may be the failed run's. Until its re-check, a scope's
skip reason is what its last check found (`LastCheck`).

Queue mode (`plan_queue_tick`): when the bucket sends S3 event notifications to an SQS queue, a
tick visits only the runs and steps the events touched, the scopes still settling, those an
operator asked to re-check and those whose back-off re-check is due; there is no root listing
and no back-off re-listing (the events say what changed). A settling or due scope no event
touched is not listed again: its listing is the one the cursor holds, so it settles on the clock
alone, and a due one costs only its publish and failure reads (a failed export retried as in
`plan_tick`). A touched scope already in the cursor costs one
listing; a new step folder also its run's `trace_jobs/` listing. The first tick (no cursor) plans
the whole root as `plan_tick` does, so a deleted cursor still re-checks every scope.

The cursor maps each scope to its `ScopeEntry` (a JSON list: fingerprint, quiet since, fingerprint
requested, next check, back-off, retries, last check, and for a blocked one its check's line) and
each run to `[next_check]`: about a hundred bytes a scope, a blocked one its line's length more;
in queue mode it also holds touches whose listing failed (`retry`, visited again next tick),
re-check requests among them. The sensor keeps its own state beside these (`extra`: the queue's
receipt handles to delete, the last re-check request read). Pure: the sensor hands in the
listings, what the instance says of each scope (`TickSources.facts`) and the clock. One bad run
or scope never hides the others: its error is reported, its cursor entry kept, and it is listed
again on the next tick; a scope whose folder is gone is dropped from the cursor.
"""

from __future__ import annotations

import json
import math
import zlib
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from enum import StrEnum
from typing import Any, NamedTuple

from trace_assets.core.scope import RunScope
from trace_assets.steps.incremental import fingerprint
from trace_assets.store.local_walk import escaped_name
from trace_assets.store.objects import ObjectBatch
from trace_assets.store.queue_events import Touch
from trace_assets.store.trace_store import EPOCH
from trace_assets.sweep.scope_state import FAILURES, FORGET_COMMAND, ScopeFacts, ScopeState, decided, exported_for

# 3: fingerprints hold the objects' change tokens; 4: entries hold retries and the last check; 5: a
# last check may be `blocked`, its entry then holding the check's line. Older cursors are read as
# is (a version-3 entry has five fields, a version-4 one seven); code that knows only older versions
# starts afresh from a newer one (a rollback re-checks every scope once) rather than misreading it.
CURSOR_VERSION = 5
READABLE_VERSIONS = (3, 4, CURSOR_VERSION)
DUE_PER_TICK = 200  # queue mode: due re-checks read from the instance in one tick, oldest first
BACKOFF_START = 3600.0  # an exported scope's first re-check, an hour after its export
BACKOFF_MAX = 7 * 86400.0  # then doubling up to a week
RUN_RECHECK = 600.0  # a settled run's step folders are listed again within this (a request a run)
MAX_RETRIES = 3  # automatic requests again of one listing whose export failed; an operator's re-check still retries
RECHECK_COMMAND = "trace-assets recheck"  # an operator's re-check request (cli/recheck.py)


class LastCheck(StrEnum):
    """What a scope's last check found, kept in its cursor entry: the skip reason until the next
    check (reading the instance for every scope at every tick would cost more than the listing
    the back-off saves)."""

    REQUESTED = "requested"  # export requested (at that check or before), not published
    PUBLISHED = "published"
    RETRIED = "retried"  # its export failed: requested again
    FAILED = "failed"  # its export failed after MAX_RETRIES retries: left until it changes or is asked
    BLOCKED = "blocked"  # a blocking check stopped its export: left until it changes or is asked


class Waiting(StrEnum):
    """Why a scope is not requested this tick, counted in the tick's summary in `ScopeState`'s words
    (`trace-assets status`'s), a published one saying it is unchanged."""

    PUBLISHED = f"{ScopeState.PUBLISHED} and unchanged"
    SETTLING = ScopeState.SETTLING.value
    EXPORTING = ScopeState.EXPORTING.value  # its export requested, not published yet
    FAILED = ScopeState.FAILED.value  # its export failed (and is retried at its re-check, or not past its retries)
    BLOCKED = ScopeState.BLOCKED.value  # a blocking check stopped its export: not retried for the same listing
    GONE = ScopeState.GONE.value
    UNCHANGED = "unchanged"  # a cursor entry from before checks were recorded: what it found unknown


FOLLOWED = (LastCheck.REQUESTED, LastCheck.RETRIED)  # exports on their way: the instance read each tick


class ScopeEntry(NamedTuple):
    """A scope's cursor entry, stored as a JSON list in this order (`stored`); one written before
    retries were counted has five fields and is read as none made, no check recorded; the blocked
    check's line is stored only when there is one."""

    fingerprint: str  # its listing's, at its last listing
    quiet_since: float | None  # when that listing took its current form
    requested: str | None  # the fingerprint whose export was requested (None: none yet)
    next_check: float  # when it is listed again
    backoff: float  # seconds between re-checks of an exported, unchanged scope
    retries: int = 0  # automatic requests again of this listing after a failed export
    last_check: LastCheck | None = None  # what its last check found: the skip reason until the next
    # a blocked export's line (`LastCheck.BLOCKED`), or a failed one's state and line (`LastCheck.FAILED`,
    # seen while followed), for its skip reason until the next
    blocked_by: str = ""

    @classmethod
    def read(cls, entry: list) -> ScopeEntry:
        fingerprint, since, requested, next_check, backoff, *counted = entry
        retries, last, *blocked_by = counted if counted else (0, None)
        return cls(
            fingerprint,
            since,
            requested,
            next_check,
            backoff,
            retries,
            None if last is None else LastCheck(last),
            *blocked_by,
        )

    def stored(self) -> list:
        """The JSON list the cursor holds: without an empty blocked line (most entries)."""
        return list(self) if self.blocked_by else list(self)[:-1]

    @property
    def settling(self) -> bool:
        """Its current listing's export not requested yet (new, growing or settling)."""
        return self.requested != self.fingerprint

    def due_now(self, now: float) -> ScopeEntry:
        """The same entry listed again at the next tick (a re-check request a failed listing did
        not use up)."""
        return self._replace(next_check=min(self.next_check, now))


def listing_fingerprint(pages: Iterable[ObjectBatch]) -> tuple[str, float | None]:
    """Object count, total bytes, newest modification time (what changes while a scope is written)
    and each object's change token (S3's ETag; on local disks inode and ctime, which a `cp -p`
    re-sync of new content cannot keep) as a fingerprint, and that newest time in seconds since the
    epoch (None: no objects). The tokens' CRCs are summed: the listing's order does not count, and
    one changed token always changes the sum."""
    count = size = tokens = 0
    newest = None
    for page in pages:
        count += len(page)
        size += sum(page.sizes)
        newest = max((m for m in [*page.modified, newest] if m is not None), default=None)
        for key, etag in zip(page.keys, page.etags):
            if etag:
                tokens += zlib.crc32(f"{key}|{etag}".encode())
    modified = "" if newest is None else (EPOCH + timedelta(microseconds=newest)).isoformat()
    return fingerprint([], count, size, modified, tokens)[:16], None if newest is None else newest / 1e6


@dataclass(frozen=True)
class TickSources:
    """What a tick reads, handed in by the sensor: a run's scope keys (its trace_jobs/ listed with a
    delimiter), a scope's full listing, what the instance says of a scope (its newest export try
    and what is published: `ScopeFacts`, the same facts `trace-assets status` decides from), and
    which scopes' export runs changed since the last tick."""

    run_scopes: Callable[[str], list[str]]
    listing: Callable[[str], Iterable[ObjectBatch]]
    facts: Callable[[str], ScopeFacts]
    tried: Collection[str] = ()  # scopes whose export run was created, started or ended since the last tick


@dataclass
class TickPlan:
    """What one tick decided: scopes to export (key, fingerprint), new keys, and why the rest wait."""

    requests: list[tuple[str, str]] = field(default_factory=list)
    # requested again after a failed, refused or blocked export (how it ended): a new run key
    retried: dict[str, ScopeState] = field(default_factory=dict)
    new_keys: list[str] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)  # scope key -> why it is not requested
    waiting: dict[str, Waiting] = field(default_factory=dict)  # scope key -> that reason's kind
    strays: list[str] = field(default_factory=list)  # partitions naming no scope under the root
    errors: dict[str, str] = field(default_factory=dict)  # run or scope -> its listing's error
    gone: list[str] = field(default_factory=list)  # scopes whose folder is gone: dropped from the cursor
    listed_runs: int = 0  # runs whose trace_jobs/ was listed this tick
    listed_scopes: int = 0  # scopes listed in full this tick
    cursor: str = ""

    def skip(self, key: str, waiting: Waiting, why: str) -> None:
        self.skipped[key], self.waiting[key] = why, waiting


@dataclass(frozen=True)
class _Tick:
    """What every scope of one tick is planned with: what it reads, its time and settle window,
    and the plan its decisions go to."""

    sources: TickSources
    now: float
    settle: float
    plan: TickPlan


STRAY = "no run under the traces root"


def tick_summary(plan: TickPlan, shown: int, notes: Iterable[str] = ()) -> str:
    """What a tick found, for a person reading the sensor's ticks (its cursor is for the code): a
    count of scopes by outcome, in `trace-assets status`'s words, then one line per scope, at most
    `shown`: requested, or why it waits (its state, and when it is checked next), or its listing's
    error; then the partitions that name no run there, with the command that removes them."""
    lines = [
        *(
            f"{key!r}: export requested"
            + (f" again, after a {plan.retried[key]} export" if key in plan.retried else "")
            for key, _ in plan.requests
        ),
        *(f"{key!r}: listing failed: {error}" for key, error in plan.errors.items()),
        *(f"{key!r}: {why}" for key, why in plan.skipped.items()),
        *(f"{key!r}: a partition with {STRAY}; `{FORGET_COMMAND} {key}` removes it" for key in plan.strays),
    ]
    waiting = Counter(plan.waiting.values())
    counts = [
        (len(plan.requests), "export requested"),
        *((waiting[state], str(state)) for state in Waiting),
        (len(plan.errors), "listing failed"),
        (len(plan.strays), f"with {STRAY}"),
    ]
    head = f"{len(lines)} scope(s): " + ", ".join(f"{n} {what}" for n, what in counts if n) if lines else "no scopes"
    more = [f"(and {len(lines) - shown} more)"] if len(lines) > shown else []
    # Each line ends with a full stop: the UI's tick details show the text as one paragraph.
    return "\n".join(f"{line}." for line in [*notes, head, *lines[:shown], *more])


def load_cursor(cursor: str | None) -> dict[str, ScopeEntry]:
    """The scopes' entries of a cursor (an older version's cursor starts afresh)."""
    return _load(cursor)[1]


def is_current(cursor: str | None) -> bool:
    """A cursor this version wrote (a full tick ran since): queue mode may take over from it."""
    return bool(cursor) and json.loads(cursor or "{}").get("v") in READABLE_VERSIONS


def cursor_extra(cursor: str | None) -> dict[str, Any]:
    """The sensor's own state kept in the cursor beside the plan's (see `plan_tick`'s `extra`)."""
    data = json.loads(cursor) if cursor else {}
    return data.get("extra", {}) if data.get("v") in READABLE_VERSIONS else {}


def _load(cursor: str | None) -> tuple[dict[str, list], dict[str, ScopeEntry]]:
    data = json.loads(cursor) if cursor else {}
    if data.get("v") not in READABLE_VERSIONS:
        return {}, {}
    return data.get("runs", {}), {key: ScopeEntry.read(entry) for key, entry in data.get("scopes", {}).items()}


def _dump(
    runs: dict[str, list], scopes: Mapping[str, ScopeEntry], extra: Mapping[str, Any], retry: Iterable[Touch] = ()
) -> str:
    data: dict[str, Any] = {
        "v": CURSOR_VERSION,
        "runs": runs,
        "scopes": {key: entry.stored() for key, entry in scopes.items()},
    }
    if extra:
        data["extra"] = dict(extra)
    retry = sorted(set(retry))
    if retry:
        data["retry"] = [[touch.run_id, touch.step] for touch in retry]
    return json.dumps(data, separators=(",", ":"), sort_keys=True)


def _spread(key: str, seconds: float) -> float:
    """Between half and all of `seconds`, fixed per key: re-checks of scopes exported in one tick
    do not all fall due in one later tick."""
    return seconds * (0.5 + (zlib.crc32(key.encode()) % 1000) / 2000)


def _minutes(seconds: float) -> int:
    return max(1, math.ceil(seconds / 60))


def plan_tick(
    cursor: str | None,
    run_ids: Iterable[str],
    sources: TickSources,
    known: Iterable[str],
    now: float,
    *,
    settle: float,
    run_recheck: float = RUN_RECHECK,
    recheck: Collection[str] = (),
    extra: Mapping[str, Any] | None = None,
) -> TickPlan:
    """One tick over the runs under the root (see the module's docstring). `recheck`: scope keys
    listed now whatever their back-off; `extra`: the sensor's own state, kept in the cursor."""
    runs, scopes = _load(cursor)
    known = set(known)
    plan = TickPlan()
    tick = _Tick(sources, now, settle, plan)
    next_runs: dict[str, list] = {}
    next_scopes: dict[str, ScopeEntry] = {}
    for run_id in sorted(run_ids):
        if escaped_name(run_id) != run_id:
            plan.errors[escaped_name(run_id)] = "the run folder's name is not UTF-8"
            continue
        ours = {k: v for k, v in scopes.items() if k == run_id or k.startswith(run_id + "/")}
        [run_check] = runs.get(run_id, [0.0])
        pending = run_id not in runs or any(entry.settling for entry in ours.values())
        keys = sorted(ours)
        if pending or now >= run_check:
            try:
                keys = sources.run_scopes(run_id)
                plan.listed_runs += 1
            except Exception as err:  # this run's listing, not the tick's: the other runs go on
                plan.errors[run_id] = f"{type(err).__name__}: {err}"
                next_scopes.update(ours)
                for key in ours.keys() & recheck:  # a re-check request is not used up: due next tick
                    next_scopes[key] = ours[key].due_now(now)
                next_runs[run_id] = [run_check]
                continue
        for key in keys:
            planned = _plan_scope(key, scopes.get(key), tick, force=key in recheck)
            if planned is not None:
                next_scopes[key] = planned
        plan.new_keys += [key for key in keys if key not in known and key in next_scopes]
        settled = all(key in next_scopes and not next_scopes[key].settling for key in keys)
        if settled:  # (or no trace_jobs/ yet)
            next_runs[run_id] = [run_check if now < run_check else now + _spread(run_id, run_recheck)]
        else:
            next_runs[run_id] = [now]
    plan.strays = _strays(known, next_scopes, plan)
    plan.cursor = _dump(next_runs, next_scopes, extra or {})
    return plan


def _strays(known: Collection[str], scopes: Collection[str], plan: TickPlan) -> list[str]:
    """Partitions that name no scope the sensor tracks under the root (a key mistyped in the UI, a
    run deleted), leaving out those whose listing failed this tick (their scopes are unknown)."""
    failed = set(plan.errors)
    return sorted(
        key
        for key in known
        if key not in scopes and key not in plan.skipped and key not in failed and _run_of(key) not in failed
    )


def _run_of(key: str) -> str:
    return RunScope.from_key(key).run_id


def _touch_of(key: str) -> Touch:
    scope = RunScope.from_key(key)
    return Touch(scope.run_id, scope.step)


def _touched_key(touch: Touch, keys: Collection[str]) -> str | None:
    """The scope an object of `touch` lies in, among the run's scope keys (None: in none of them)."""
    if touch.step is not None and f"{touch.run_id}/{touch.step}" in keys:
        return f"{touch.run_id}/{touch.step}"
    return touch.run_id if touch.run_id in keys else None


def plan_queue_tick(
    cursor: str,
    touches: Iterable[Touch],
    sources: TickSources,
    known: Iterable[str],
    now: float,
    *,
    settle: float,
    recheck: Collection[str] = (),
    extra: Mapping[str, Any] | None = None,
) -> TickPlan:
    """One tick over what the queue's events touched (see the module's docstring); the runs and
    scopes not visited keep their cursor entries as they are."""
    runs, scopes = _load(cursor)
    data = json.loads(cursor)
    touches = set(touches) | {Touch(run_id, step) for run_id, step in data.get("retry", [])}
    known = set(known)
    plan = TickPlan()
    tick = _Tick(sources, now, settle, plan)
    next_runs, next_scopes = dict(runs), dict(scopes)
    retry: set[Touch] = set()
    settling = {key for key, entry in scopes.items() if entry.settling}
    # Exported and unchanged, their re-check due: its publish and failure read again (no listing),
    # so a failed export is requested again on the back-off, as in `plan_tick`.
    # At most DUE_PER_TICK, oldest first: a cursor from before queue mode re-checked holds every
    # exported scope past due, and a tick must stay well inside the sensor's time limit.
    overdue = sorted((e.next_check, key) for key, e in scopes.items() if not e.settling and now >= e.next_check)
    due = {key for _, key in overdue[:DUE_PER_TICK]}
    due |= {
        key for key, e in scopes.items() if not e.settling and (e.last_check in FOLLOWED or key in sources.tried)
    }  # read, not listed
    asked = set(recheck)
    scopes_of_run: dict[str, list[str]] = {}  # grouped once: a tick's cost follows its touches
    for key in sorted(scopes):
        scopes_of_run.setdefault(_run_of(key), []).append(key)
    by_run: dict[str, set[Touch]] = {}
    for touch in touches:
        by_run.setdefault(touch.run_id, set()).add(touch)
    for key in settling | due | asked:
        by_run.setdefault(_run_of(key), set())
    for run_id in sorted(by_run):
        ours = scopes_of_run.get(run_id, [])
        keys = ours
        unseen = any(key not in scopes for key in asked if _run_of(key) == run_id)  # asked, not yet in the cursor
        if run_id not in runs or unseen or any(_touched_key(touch, ours) is None for touch in by_run[run_id]):
            try:  # a new run or step folder: its run's scopes, from one delimiter listing
                keys = sources.run_scopes(run_id)
                plan.listed_runs += 1
            except Exception as err:  # this run only: its touches and re-check requests are visited again next tick
                plan.errors[run_id] = f"{type(err).__name__}: {err}"
                retry |= by_run[run_id] | {_touch_of(key) for key in asked if _run_of(key) == run_id}
                continue
            for gone in set(ours) - set(keys):  # the run's layout changed (steps became the run, or back)
                next_scopes.pop(gone, None)
            if not keys:  # no trace_jobs/ (a run gone, or never one): nothing to remember
                next_runs.pop(run_id, None)
                continue
            next_runs[run_id] = [now + _spread(run_id, RUN_RECHECK)]
        touched = {_touched_key(touch, keys) for touch in by_run[run_id]} - {None}
        for key in keys:
            entry = scopes.get(key)
            if key not in touched and key not in asked and key not in settling and key not in due and entry is not None:
                continue  # nothing happened to it
            trusted = entry is not None and key not in touched and key not in asked  # settling or due
            planned = _plan_scope(key, entry, tick, force=key in touched or key in asked, unchanged=trusted)
            if key in plan.gone:
                next_scopes.pop(key, None)
                continue
            if planned is None or (key in plan.errors and key in touched):
                retry |= {touch for touch in by_run[run_id] if _touched_key(touch, keys) == key}
            if key in plan.errors and key in asked:  # a re-check request is not used up by a failed listing
                retry.add(_touch_of(key))
            if planned is not None:
                next_scopes[key] = planned
        plan.new_keys += [key for key in keys if key not in known and key in next_scopes]
    plan.strays = _strays(known, next_scopes, plan)
    plan.cursor = _dump(next_runs, next_scopes, extra or {}, retry)
    return plan


def _plan_scope(
    key: str, entry: ScopeEntry | None, tick: _Tick, *, force: bool, unchanged: bool = False
) -> ScopeEntry | None:
    """The scope's next cursor entry (None: a new scope whose listing failed, tried afresh next tick,
    or a scope that is gone).

    `force`: list it whatever its back-off; `unchanged`: take the cursor's listing as current
    (queue mode: no event touched the scope since)."""
    sources, now, settle, plan = tick.sources, tick.now, tick.settle, tick.plan
    if entry is not None and not entry.settling and now < entry.next_check and not force:
        if entry.last_check in FOLLOWED or key in sources.tried:  # on its way: followed each tick
            return _follow_export(key, entry, tick)
        plan.skip(key, *_waiting_reason(key, entry, entry.next_check - now))
        return entry
    previous = entry or ScopeEntry("", None, None, 0.0, 0.0)
    since = previous.quiet_since
    if unchanged and entry is not None:
        current, newest = entry.fingerprint, since
    else:
        try:
            current, newest = listing_fingerprint(sources.listing(key))
        except FileNotFoundError:  # deleted since its run was listed (or since the event that named it)
            plan.skip(key, Waiting.GONE, str(Waiting.GONE))
            plan.gone.append(key)
            return None
        except Exception as err:  # this scope's listing only: listed again next tick, a re-check request too
            plan.errors[key] = f"{type(err).__name__}: {err}"
            return None if entry is None else entry.due_now(now)
        plan.listed_scopes += 1
    if since is None or current != previous.fingerprint:  # quiet since its newest object, unless older (a deletion)
        since = newest if newest is not None and (since is None or newest > since) else now
        since = min(since, now)
    if previous.requested == current:
        return _check_export(key, previous, current, since, tick, force)
    if now - since < settle:
        plan.skip(key, Waiting.SETTLING, f"settling, {_minutes(settle - (now - since))} min left")
        return ScopeEntry(
            current, since, previous.requested, now, 0.0, 0, previous.last_check, previous.blocked_by
        )  # a new listing: its retries start afresh
    facts = sources.facts(key)
    # Published by its newest try after the listing took its current form (`since`: its newest
    # object's time, or when the sensor saw the change, for a re-sync that kept modification times):
    # nothing to export. A newest try still running (the CLI's, a backfill's) is not requested twice.
    if exported_for(facts, since):
        plan.skip(key, Waiting.PUBLISHED, str(Waiting.PUBLISHED))
        found = LastCheck.PUBLISHED
    elif facts.newest == ScopeState.EXPORTING:
        plan.skip(key, Waiting.EXPORTING, _exporting(facts.reason))
        found = LastCheck.REQUESTED
    else:
        plan.requests.append((key, current))
        if facts.newest in FAILURES:  # (a deleted cursor): its last run key may be this listing's
            plan.retried[key] = facts.newest
        found = LastCheck.REQUESTED
    return ScopeEntry(current, since, current, now + _spread(key, BACKOFF_START), BACKOFF_START, 0, found)


def _follow_export(key: str, entry: ScopeEntry, tick: _Tick) -> ScopeEntry:
    """A scope whose export was requested, between its re-checks: what the instance says of it now
    (no listing), so a published export reads `published` at the next tick, and a blocked or failed
    one says so from then on; only its re-check requests it again, as before."""
    facts, plan = tick.sources.facts(key), tick.plan
    state, reason = decided(facts)
    since = entry.quiet_since if entry.quiet_since is not None else tick.now
    if exported_for(facts, since):
        plan.skip(key, Waiting.PUBLISHED, str(Waiting.PUBLISHED))
        return entry._replace(last_check=LastCheck.PUBLISHED)
    # Blocked or failed (the requested run itself: Dagster creates a tick's runs before the next
    # tick): no longer followed; its re-check decides, as before.
    if state == ScopeState.BLOCKED:
        plan.skip(key, Waiting.BLOCKED, _blocked(key, reason))
        return entry._replace(last_check=LastCheck.BLOCKED, blocked_by=reason)
    if state in FAILURES:
        entry = entry._replace(last_check=LastCheck.FAILED, blocked_by=f"{state}: {reason}")
        plan.skip(key, *_waiting_reason(key, entry, entry.next_check - tick.now))
        return entry
    plan.skip(key, Waiting.EXPORTING, _exporting(reason))
    return entry if entry.last_check in FOLLOWED else entry._replace(last_check=LastCheck.REQUESTED)  # someone else's


def _exporting(reason: str) -> str:
    return "export requested, not published yet" + (f" ({reason})" if reason else "")


def _check_export(key: str, previous: ScopeEntry, current: str, since: float, tick: _Tick, force: bool) -> ScopeEntry:
    """The next entry of a scope whose export was requested for its current listing (`previous`:
    its entry, for its back-off and retries): published, still on its way, blocked (requested again
    only if `force`) or failed (requested again, at most `MAX_RETRIES` times unless `force`)."""
    sources, plan, retries = tick.sources, tick.plan, previous.retries
    backoff = min(max(previous.backoff * 2, BACKOFF_START), BACKOFF_MAX)
    due = tick.now + _spread(key, backoff)
    facts = sources.facts(key)
    state, reason = decided(facts)
    if exported_for(facts, since):
        plan.skip(key, Waiting.PUBLISHED, str(Waiting.PUBLISHED))
        return ScopeEntry(current, since, current, due, backoff, retries, LastCheck.PUBLISHED)
    if state not in FAILURES:  # queued, running, canceled by an operator (theirs to launch), or not started
        plan.skip(key, Waiting.EXPORTING, _exporting(""))
        return ScopeEntry(current, since, current, due, backoff, retries, LastCheck.REQUESTED)
    if state == ScopeState.BLOCKED:
        if not force:  # the same listing is blocked the same way: scanning it again would only cost
            plan.skip(key, Waiting.BLOCKED, _blocked(key, reason))
            return ScopeEntry(current, since, current, due, backoff, retries, LastCheck.BLOCKED, reason)
        plan.requests.append((key, current))  # an operator's re-check: the policy or allowlist may have changed
        plan.retried[key] = state
        return ScopeEntry(current, since, current, due, backoff, retries, LastCheck.REQUESTED)
    if retries >= MAX_RETRIES and not force:
        plan.skip(key, Waiting.FAILED, _gave_up(retries))
        return ScopeEntry(current, since, current, due, backoff, retries, LastCheck.FAILED)
    plan.requests.append((key, current))  # on the same back-off as a re-check
    plan.retried[key] = state
    return ScopeEntry(current, since, current, due, backoff, retries + 1, LastCheck.RETRIED)


def _gave_up(retries: int) -> str:
    return f"export failed after {retries} retries; requested again when it changes or on request"


def _blocked(key: str, reason: str) -> str:
    return (
        f"{reason}; not retried for this listing: requested again when its listing changes "
        f"or on `{RECHECK_COMMAND} {key}`"
    )


def _waiting_reason(key: str, entry: ScopeEntry, wait: float) -> tuple[Waiting, str]:
    """Why a scope whose re-check is not due is skipped: what its last check found."""
    until = f"re-checked in {_minutes(wait)} min"
    match entry.last_check:
        case LastCheck.PUBLISHED:
            return Waiting.PUBLISHED, f"published and unchanged; {until}"
        case LastCheck.FAILED if entry.retries < MAX_RETRIES and entry.blocked_by:  # seen while followed
            return Waiting.FAILED, f"export {entry.blocked_by}; requested again in {_minutes(wait)} min"
        case LastCheck.FAILED:
            return Waiting.FAILED, _gave_up(entry.retries)
        case LastCheck.BLOCKED:
            return Waiting.BLOCKED, _blocked(key, entry.blocked_by)
        case _:  # an entry from before checks were recorded (one requested is followed, see `FOLLOWED`)
            return Waiting.UNCHANGED, f"unchanged since its last check; {until}"
