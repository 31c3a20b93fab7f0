"""The sensor's tick plans (`discovery.plan_tick`, `plan_queue_tick`) and cursor, without an instance: what a
tick lists, requests, skips and keeps, from stand-in listings and clocks."""

from __future__ import annotations

import json
from typing import NamedTuple

from trace_assets.defs.sensors import _run_key
from trace_assets.store.objects import ObjectBatch
from trace_assets.store.queue_events import Touch
from trace_assets.sweep.discovery import (
    BACKOFF_START,
    CURSOR_VERSION,
    DUE_PER_TICK,
    MAX_RETRIES,
    RUN_RECHECK,
    TickSources,
    Waiting,
    is_current,
    listing_fingerprint,
    load_cursor,
    plan_queue_tick,
    plan_tick,
    tick_summary,
)
from trace_assets.sweep.scope_state import ScopeFacts, ScopeState


class Failure(NamedTuple):
    """How a stand-in export run failed."""

    state: ScopeState
    reason: str


FAILED = Failure(ScopeState.FAILED, "step published_shards failed: [Errno 20] Not a directory")
BLOCKED = Failure(
    ScopeState.BLOCKED,
    "blocked by check no_live_secrets on secret_scan_report: credentials found (hf_token: 1); "
    "hf_token blocked by policy; set on_secret (live) or on_unverified to redact, or allowlist known placeholders",
)


def _sources(run_scopes, listing, published_at=lambda key: None, export_failure=lambda key: None) -> TickSources:
    """The instance's facts from stand-ins: when a scope was published (None: never), and how its
    newest export run failed (None: it did not fail; published when `published_at` says so)."""

    def facts(key: str) -> ScopeFacts:
        published, failure = published_at(key), export_failure(key)
        if failure is not None:
            return ScopeFacts(failure.state, failure.reason, published)
        return ScopeFacts(None if published is None else ScopeState.PUBLISHED, "", published)

    return TickSources(run_scopes, listing, facts)


def _failing(failed: set[str]):
    """Each scope in `failed` failed (not blocked)."""
    return lambda key: FAILED if key in failed else None


def _pages(count: int, newest_us: int) -> list[ObjectBatch]:
    return [ObjectBatch([f"t{i}/result.json" for i in range(count)], [1] * count, [None] * count, [newest_us] * count)]


def test_settled_scopes_are_listed_again_only_on_their_back_off():
    listed: list[str] = []
    sizes = {f"run-{i}": 3 for i in range(10)}

    def listing(key):
        listed.append(key)
        return _pages(sizes[key], 1_000_000_000)

    def tick(cursor, now):
        listed.clear()
        return plan_tick(cursor, sizes, _sources(lambda run: [run], listing), [], now, settle=600)

    first = tick(None, 2000.0)
    assert len(first.requests) == 10 and len(listed) == 10
    quiet = tick(first.cursor, 2060.0)
    assert quiet.requests == [] and listed == [] and quiet.listed_runs == 0
    sizes["run-3"] = 4  # grows after its export: seen at its re-check, exported once it settles
    due = tick(quiet.cursor, 2000.0 + BACKOFF_START + 1)
    assert len(listed) == 10 and due.skipped["run-3"].startswith("settling")
    settled = tick(due.cursor, 2000.0 + BACKOFF_START + 700)
    assert [key for key, _ in settled.requests] == ["run-3"] and listed == ["run-3"]
    later = tick(
        settled.cursor, 2000.0 + 1.5 * BACKOFF_START + 699
    )  # before any re-check is due  # the others' back-off has doubled
    assert listed == [] and later.requests == []


def test_cursor_stays_small_for_thousands_of_scopes():
    runs = [f"sweep-run-{i:05d}" for i in range(1000)]
    plan = plan_tick(
        None,
        runs,
        _sources(lambda run: [f"{run}/step-{s}" for s in (1, 2)], lambda key: _pages(2, 1_000_000)),
        [],
        now=1e6,
        settle=0,
    )
    assert len(plan.requests) == 2000
    assert len(plan.cursor) / 2000 < 130  # bytes per scope, the run's entry included


def test_queue_ticks_list_only_touched_scopes_and_retry_failed_touches():
    steps = {f"run-{i}": [f"run-{i}/step-1", f"run-{i}/step-2"] for i in range(10)}
    sizes = {key: 3 for keys in steps.values() for key in keys}
    known = set(sizes)  # the partitions the first tick added
    listed: list[str] = []
    runs_listed: list[str] = []
    broken: set[str] = set()

    def listing(key):
        listed.append(key)
        if key in broken:
            raise OSError("endpoint down")
        if key not in sizes:
            raise FileNotFoundError(key)
        return _pages(sizes[key], 1_000_000_000)

    def run_scopes(run):
        runs_listed.append(run)
        return steps[run]

    published: dict[str, float] = {}  # each requested export published before the next tick
    sources = _sources(run_scopes, listing, published.get)

    def tick(cursor, touches, now, recheck=()):
        listed.clear()
        runs_listed.clear()
        plan = plan_queue_tick(cursor, touches, sources, known, now, settle=600, recheck=recheck)
        published.update({key: now + 1 for key, _ in plan.requests})
        return plan

    first = plan_tick(None, steps, sources, [], 2000.0, settle=600)
    published.update({key: 2001.0 for key, _ in first.requests})
    assert len(first.requests) == 20
    quiet = tick(first.cursor, [], 2060.0)
    assert listed == [] and runs_listed == [] and quiet.requests == []
    # the exports on their way read from the instance (no listing): published at the next tick
    assert quiet.skipped == {key: "published and unchanged" for key in sizes}

    sizes["run-3/step-2"] = 4  # an event for it: listed alone, its run's steps already known
    touched = tick(quiet.cursor, [Touch("run-3", "step-2")], 2120.0)
    assert listed == ["run-3/step-2"] and runs_listed == []
    assert touched.skipped == {"run-3/step-2": "settling, 10 min left"}
    calm = tick(touched.cursor, [], 2180.0)  # settling and no event since: not listed again
    assert listed == [] and calm.skipped == {"run-3/step-2": "settling, 9 min left"}
    settled = tick(calm.cursor, [], 2120.0 + 600)
    assert [key for key, _ in settled.requests] == ["run-3/step-2"] and listed == []

    steps["run-7"].append("run-7/step-3")  # a new step folder: its run's trace_jobs/ listed too
    sizes["run-7/step-3"] = 1
    broken.add("run-7/step-3")
    failed = tick(settled.cursor, [Touch("run-7", "step-3")], 2800.0)
    assert runs_listed == ["run-7"] and listed == ["run-7/step-3"] and "run-7/step-3" in failed.errors
    broken.clear()
    retried = tick(failed.cursor, [], 2860.0)  # the failed touch is kept in the cursor, visited again
    assert listed == ["run-7/step-3"] and retried.new_keys == ["run-7/step-3"]
    assert [key for key, _ in retried.requests] == ["run-7/step-3"]  # its newest object is old
    assert "retry" not in json.loads(retried.cursor)

    asked = tick(retried.cursor, [], 2920.0, recheck={"run-0/step-1"})  # the operator's re-check
    assert listed == ["run-0/step-1"] and asked.skipped == {
        "run-0/step-1": "published and unchanged",
        "run-7/step-3": "published and unchanged",  # requested by the tick before: followed, not listed
    }

    del sizes["run-9/step-1"]  # deleted: its ObjectRemoved events touch it, its listing finds nothing
    deleted = tick(asked.cursor, [Touch("run-9", "step-1")], 2980.0)
    assert deleted.skipped == {"run-9/step-1": "gone from the traces root"} and deleted.errors == {}
    assert "run-9/step-1" not in json.loads(deleted.cursor)["scopes"] and "retry" not in json.loads(deleted.cursor)
    assert tick(deleted.cursor, [], 3040.0).skipped == {} and listed == []

    # Events for a run that is not (or no longer) there leave nothing in the cursor.
    steps["ghost"] = []
    ghost = tick(deleted.cursor, [Touch("ghost", None)], 3100.0)
    assert runs_listed == ["ghost"] and "ghost" not in json.loads(ghost.cursor)["runs"]

    # A re-check of a scope the cursor does not hold yet (a partition only the CLI knew) lists it.
    steps["run-new"] = ["run-new/step-1"]
    sizes["run-new/step-1"] = 2
    fresh = tick(ghost.cursor, [], 3160.0, recheck={"run-new/step-1"})
    assert runs_listed == ["run-new"] and listed == ["run-new/step-1"] and fresh.new_keys == ["run-new/step-1"]


def test_fingerprint_holds_change_tokens_in_any_order():
    def page(keys, etags):
        return ObjectBatch(list(keys), [5] * len(keys), list(etags), [1_000_000] * len(keys))

    listed = listing_fingerprint([page(["a", "b"], ["1:10", "2:20"])])
    assert listing_fingerprint([page(["b"], ["2:20"]), page(["a"], ["1:10"])]) == listed
    assert listing_fingerprint([page(["a", "b"], ["1:10", "2:21"])])[0] != listed[0]  # same size and time
    assert listing_fingerprint([page(["a", "b"], [None, None])])[0] != listed[0]


def test_a_scope_whose_export_failed_is_requested_again_at_its_re_check_or_on_request():
    failed: set[str] = set()
    published: dict[str, float] = {}
    sources = _sources(lambda run: [run], lambda key: _pages(3, 1_000_000_000), published.get, _failing(failed))

    def tick(cursor, now, recheck=()):
        return plan_tick(cursor, ["run-a", "run-b"], sources, [], now, settle=600, recheck=recheck)

    first = tick(None, 2000.0)
    assert sorted(key for key, _ in first.requests) == ["run-a", "run-b"] and first.retried == {}
    published["run-b"] = 2100.0  # run-b's export published; run-a's still running
    running = tick(first.cursor, 2060.0, recheck={"run-a", "run-b"})
    assert running.requests == []
    assert running.skipped == {"run-a": "export requested, not published yet", "run-b": "published and unchanged"}
    failed.add("run-a")  # then it failed: asked again, it is requested again
    asked = tick(running.cursor, 2120.0, recheck={"run-a"})
    assert asked.requests == first.requests[:1] and list(asked.retried) == ["run-a"]
    assert tick(asked.cursor, 2180.0).requests == []  # not every tick: on the re-check's back-off
    due = tick(asked.cursor, 2120.0 + 4 * BACKOFF_START + 1)  # still failed at its next re-check (back-off doubled)
    assert list(due.retried) == ["run-a"] and [key for key, _ in due.requests] == ["run-a"]


def test_a_re_check_whose_listing_fails_is_not_used_up():
    broken = {"run-a"}

    def listing(key):
        if key in broken:
            raise OSError("endpoint down")
        return _pages(3, 1_000_000_000)

    sources = _sources(lambda run: [run], listing)
    broken.clear()
    first = plan_tick(None, ["run-a"], sources, [], 2000.0, settle=600)
    broken.add("run-a")
    asked = plan_tick(first.cursor, ["run-a"], sources, [], 2060.0, settle=600, recheck={"run-a"})
    assert "run-a" in asked.errors
    broken.clear()
    again = plan_tick(asked.cursor, ["run-a"], sources, [], 2120.0, settle=600)  # no new request: still listed
    assert again.listed_scopes == 1 and again.skipped == {"run-a": "export requested, not published yet"}

    queued = plan_queue_tick(first.cursor, [], sources, ["run-a"], 2060.0, settle=600)  # queue mode alike
    broken.add("run-a")
    asked = plan_queue_tick(queued.cursor, [], sources, ["run-a"], 2120.0, settle=600, recheck={"run-a"})
    assert "run-a" in asked.errors
    broken.clear()
    again = plan_queue_tick(asked.cursor, [], sources, ["run-a"], 2180.0, settle=600)
    assert again.listed_scopes == 1 and again.skipped == {"run-a": "export requested, not published yet"}


def _due(cursor: str, key: str) -> float:
    return load_cursor(cursor)[key].next_check


def test_a_failed_export_is_retried_at_most_max_retries_times_unless_asked_or_changed():
    sizes = {"run-a": 3}
    failed = {"run-a"}  # every export fails (a shrink refused)
    sources = _sources(
        lambda run: [run], lambda key: _pages(sizes[key], 1_000_000_000), lambda key: None, _failing(failed)
    )

    def tick(cursor, now, recheck=()):
        return plan_tick(cursor, ["run-a"], sources, [], now, settle=600, recheck=recheck)

    plan = tick(None, 2000.0)
    retried, waiting = [], []
    for _ in range(MAX_RETRIES + 1):
        now = _due(plan.cursor, "run-a")  # each re-check, its back-off doubling
        plan = tick(plan.cursor, now)
        retried.append(list(plan.retried))
        waiting.append(tick(plan.cursor, now + 60).skipped["run-a"])
    assert retried == [["run-a"]] * MAX_RETRIES + [[]]
    assert waiting[0].startswith(f"export failed: {FAILED.reason}; requested again in ")  # followed
    gave_up = f"export failed after {MAX_RETRIES} retries; requested again when it changes or on request"
    assert plan.skipped == {"run-a": gave_up} and waiting[-1] == gave_up

    asked = tick(plan.cursor, now + 120, recheck={"run-a"})  # an operator's re-check still retries
    assert list(asked.retried) == ["run-a"]
    assert tick(asked.cursor, _due(asked.cursor, "run-a")).requests == []  # but only once

    sizes["run-a"] = 4  # a changed listing: requested (a new run key), its retries counted afresh
    changed = tick(asked.cursor, _due(asked.cursor, "run-a"))
    assert changed.skipped["run-a"].startswith("settling")
    settled = tick(changed.cursor, _due(asked.cursor, "run-a") + 600)
    assert list(settled.retried) == ["run-a"] and load_cursor(settled.cursor)["run-a"].retries == 0
    assert list(tick(settled.cursor, _due(settled.cursor, "run-a")).retried) == ["run-a"]


def test_a_blocked_export_is_not_retried_until_its_listing_changes_or_an_operator_asks():
    """A blocking check (the secret scan under on_secret=block) blocks the same listing every time:
    its re-checks say so with the check's line, and request nothing until the listing changes or
    an operator asks; a plain failure after it is retried as before."""
    sizes = {"run-a": 3}
    failures: dict[str, Failure] = {}
    sources = _sources(lambda run: [run], lambda key: _pages(sizes[key], 1_000_000_000), lambda key: None, failures.get)

    def tick(cursor, now, recheck=()):
        return plan_tick(cursor, ["run-a"], sources, [], now, settle=600, recheck=recheck)

    blocked = f"{BLOCKED.reason}; not retried for this listing: requested again when its listing changes or on "
    blocked += "`trace-assets recheck run-a`"
    plan = tick(None, 2000.0)
    failures["run-a"] = BLOCKED
    for _ in range(MAX_RETRIES + 2):  # each re-check, its back-off doubling: never requested
        now = _due(plan.cursor, "run-a")
        plan = tick(plan.cursor, now)
        assert plan.requests == [] and plan.retried == {} and plan.skipped == {"run-a": blocked}
        assert plan.waiting == {"run-a": Waiting.BLOCKED}
        waiting = tick(plan.cursor, now + 60)  # before its next re-check: the line kept in the cursor
        assert waiting.skipped == {"run-a": blocked} and waiting.waiting == {"run-a": Waiting.BLOCKED}
    assert tick_summary(waiting, shown=20).splitlines() == ["1 scope(s): 1 blocked.", f"'run-a': {blocked}."]
    assert load_cursor(plan.cursor)["run-a"].retries == 0

    asked = tick(plan.cursor, now + 120, recheck={"run-a"})  # the operator changed the policy: one more try
    assert [key for key, _ in asked.requests] == ["run-a"] and asked.retried == {"run-a": ScopeState.BLOCKED}
    assert "'run-a': export requested again, after a blocked export." in tick_summary(asked, shown=20)
    waiting = tick(asked.cursor, now + 180)  # followed: what its newest run says (still the blocked one here)
    assert waiting.skipped == {"run-a": blocked} and waiting.requests == []
    still = tick(asked.cursor, _due(asked.cursor, "run-a"))  # blocked again: one try only
    assert still.requests == [] and still.skipped == {"run-a": blocked}

    afresh = tick(None, 9000.0)  # a deleted cursor requests it under a new run key, as an operator's re-check
    assert afresh.retried == {"run-a": ScopeState.BLOCKED}

    sizes["run-a"] = 4  # a changed listing (its trials rewritten): requested once it settles
    changed = tick(still.cursor, _due(still.cursor, "run-a"))
    assert changed.skipped["run-a"].startswith("settling") and changed.requests == []
    settled = tick(changed.cursor, _due(still.cursor, "run-a") + 600)
    assert [key for key, _ in settled.requests] == ["run-a"] and settled.retried == {"run-a": ScopeState.BLOCKED}

    failures["run-a"] = FAILED  # then a plain failure of the new listing: retried on the back-off as before
    retried = tick(settled.cursor, _due(settled.cursor, "run-a"))
    assert retried.retried == {"run-a": ScopeState.FAILED}
    assert "'run-a': export requested again, after a failed export." in tick_summary(retried, shown=20)

    failures["run-a"] = BLOCKED  # queue mode: a blocked scope due is read, not requested
    queued = plan_queue_tick(settled.cursor, [], sources, ["run-a"], _due(settled.cursor, "run-a"), settle=600)
    assert queued.requests == [] and queued.skipped == {"run-a": blocked} and queued.listed_scopes == 0


def test_a_version_4_cursor_loads_and_only_a_blocked_entry_holds_its_line():
    failures: dict[str, Failure] = {}
    sources = _sources(lambda run: [run], lambda key: _pages(3, 1_000_000_000), lambda key: None, failures.get)
    runs = ["run-a", "run-b"]
    first = plan_tick(None, runs, sources, [], 2000.0, settle=600)
    failures["run-b"] = BLOCKED
    checked = plan_tick(first.cursor, runs, sources, [], 2000.0 + BACKOFF_START, settle=600)  # both due
    stored = json.loads(checked.cursor)
    assert stored["v"] == CURSOR_VERSION
    assert stored["scopes"]["run-a"][6:] == ["requested"] and stored["scopes"]["run-b"][6:] == [
        "blocked",
        BLOCKED.reason,
    ]
    assert load_cursor(checked.cursor)["run-b"].blocked_by == BLOCKED.reason

    stored["v"] = 4  # written before blocked was a check (entries of seven fields): read as is
    stored["scopes"]["run-b"] = json.loads(first.cursor)["scopes"]["run-b"]
    old = json.dumps(stored)
    assert is_current(old) and load_cursor(old)["run-a"] == load_cursor(checked.cursor)["run-a"]
    later = plan_tick(old, runs, sources, [], 2000.0 + BACKOFF_START + 60, settle=600)
    assert later.skipped["run-a"] == "export requested, not published yet"  # followed at every tick
    assert later.skipped["run-b"].startswith(BLOCKED.reason) and later.requests == []  # found blocked at its re-check


def test_the_skip_reason_before_a_re_check_says_what_the_last_check_found():
    published: dict[str, float] = {}
    sources = _sources(lambda run: [run], lambda key: _pages(3, 1_000_000_000), published.get)
    first = plan_tick(None, ["run-a", "run-b"], sources, [], 2000.0, settle=600)
    published["run-b"] = 2100.0  # run-b's export published; run-a's never ran
    checked = plan_tick(first.cursor, ["run-a", "run-b"], sources, [], 2120.0, settle=600, recheck={"run-a", "run-b"})
    waiting = plan_tick(checked.cursor, ["run-a", "run-b"], sources, [], 2180.0, settle=600).skipped
    assert waiting["run-a"] == "export requested, not published yet"  # followed at every tick
    assert waiting["run-b"].startswith("published and unchanged; re-checked in")

    cursor = json.loads(checked.cursor)  # an entry written before checks were recorded: five fields
    cursor["scopes"] = {key: entry[:5] for key, entry in cursor["scopes"].items()}
    old = plan_tick(json.dumps(cursor), ["run-a", "run-b"], sources, [], 2180.0, settle=600)
    assert old.skipped["run-a"].startswith("unchanged since its last check; re-checked in")
    assert old.cursor == plan_tick(json.dumps(cursor), ["run-a", "run-b"], sources, [], 2180.0, settle=600).cursor
    assert plan_tick(old.cursor, ["run-a"], sources, [], _due(old.cursor, "run-a"), settle=600).skipped == {
        "run-a": "export requested, not published yet"
    }


def test_queue_mode_requests_a_failed_export_again_at_its_back_off_without_listing_it():
    runs = [f"run-{i}" for i in range(10)]
    failed: set[str] = set()
    listed: list[str] = []
    queried: list[str] = []

    def listing(key):
        listed.append(key)
        return _pages(3, 1_000_000_000)

    published: dict[str, float] = {}

    def published_at(key):
        queried.append(key)
        return published.get(key)

    def export_failure(key):
        return FAILED if key in failed else None

    sources = _sources(lambda run: [run], listing, published_at, export_failure)
    first = plan_tick(None, runs, sources, [], 2000.0, settle=600)
    failed.add("run-3")
    published.update({key: 2030.0 for key in runs if key != "run-3"})
    listed.clear()
    queried.clear()
    quiet = plan_queue_tick(first.cursor, [], sources, runs, 2060.0, settle=600)
    # the exports on their way read from the instance, not listed: nine published, run-3's failed
    assert listed == [] and set(queried) == set(runs) and quiet.requests == []
    assert quiet.skipped["run-0"] == "published and unchanged"
    assert quiet.skipped["run-3"].startswith(f"export failed: {FAILED.reason}; requested again in ")
    queried.clear()
    calm = plan_queue_tick(quiet.cursor, [], sources, runs, 2120.0, settle=600)
    assert listed == [] and queried == [] and calm.skipped == {}  # none followed now: its re-check decides
    now = _due(first.cursor, "run-3")
    due = {key for key in runs if _due(first.cursor, key) <= now}
    queried.clear()
    retried = plan_queue_tick(calm.cursor, [], sources, runs, now, settle=600)
    assert retried.requests == [("run-3", load_cursor(first.cursor)["run-3"].fingerprint)]
    assert list(retried.retried) == ["run-3"] and listed == [] and retried.listed_scopes == 0  # no S3 request
    assert set(queried) == due and retried.skipped == {key: "published and unchanged" for key in due - {"run-3"}}
    queried.clear()
    assert plan_queue_tick(retried.cursor, [], sources, runs, now + 60, settle=600).requests == []
    assert queried == ["run-3"]  # its retry followed


def test_a_re_check_whose_run_listing_fails_is_kept_for_the_next_tick():
    steps = {"run-a": ["run-a/step-1"]}
    down: set[str] = set()

    def run_scopes(run):
        if run in down:
            raise OSError("endpoint down")
        return steps[run]

    failed = {"run-a/step-1"}
    sources = _sources(run_scopes, lambda key: _pages(3, 1_000_000_000), lambda key: None, _failing(failed))
    first = plan_tick(None, ["run-a"], sources, [], 2000.0, settle=600)
    now = 2000.0 + RUN_RECHECK + 1  # the run's step folders are due, the scope's re-check is not
    down.add("run-a")
    asked = plan_tick(first.cursor, ["run-a"], sources, [], now, settle=600, recheck={"run-a/step-1"})
    assert "run-a" in asked.errors and asked.requests == []
    down.clear()
    assert list(plan_tick(asked.cursor, ["run-a"], sources, [], now + 60, settle=600).retried) == ["run-a/step-1"]

    queued = plan_queue_tick(first.cursor, [], sources, ["run-a/step-1"], 2060.0, settle=600)  # queue mode alike
    steps["run-a"].append("run-a/step-2")  # a step the cursor does not hold yet: asked, its run's listing fails
    down.add("run-a")
    known = ["run-a/step-1", "run-a/step-2"]
    asked = plan_queue_tick(queued.cursor, [], sources, known, 2120.0, settle=600, recheck={"run-a/step-2"})
    assert "run-a" in asked.errors
    down.clear()
    again = plan_queue_tick(asked.cursor, [], sources, known, 2180.0, settle=600)
    assert [key for key, _ in again.requests] == ["run-a/step-2"]


def test_a_deleted_cursor_requests_a_failed_export_under_a_new_run_key():
    failed: set[str] = set()
    sources = _sources(lambda run: [run], lambda key: _pages(3, 1_000_000_000), lambda key: None, _failing(failed))
    first = plan_tick(None, ["run-a"], sources, [], 2000.0, settle=600)
    assert first.retried == {}
    failed.add("run-a")  # its export failed; then the cursor is deleted
    afresh = plan_tick(None, ["run-a"], sources, [], 9000.0, settle=600)
    assert afresh.requests == first.requests and list(afresh.retried) == ["run-a"]
    [(key, fp)] = afresh.requests
    assert _run_key(key, fp, True, 9000.0) != _run_key(key, fp, False, 2000.0)  # Dagster launches it


def test_a_version_3_cursor_is_read_and_its_overdue_scopes_are_re_checked_a_bounded_number_a_tick():
    """A cursor from before queue mode re-checked (version 3, entries of five fields) holds every
    exported scope past due: queue mode reads them DUE_PER_TICK at a time, oldest first."""
    runs = [f"run-{i:04d}" for i in range(2 * DUE_PER_TICK + 50)]
    queried: list[str] = []
    sources = _sources(
        lambda run: [run], lambda key: _pages(3, 1_000_000_000), lambda key: queried.append(key) or 1500.0
    )
    first = plan_tick(None, runs, sources, [], 2000.0, settle=600)
    cursor = json.loads(first.cursor)
    cursor["v"] = 3
    cursor["scopes"] = {key: entry[:5] for key, entry in cursor["scopes"].items()}
    later = 2000.0 + 30 * 86400  # every scope long past its first re-check
    counts = []
    state = json.dumps(cursor)
    for tick in range(3):
        queried.clear()
        plan = plan_queue_tick(state, [], sources, runs, later + tick * 60, settle=600)
        assert plan.listed_scopes == 0 and plan.requests == []  # no S3 request; nothing failed
        counts.append(len(queried))
        state = plan.cursor
    assert counts == [DUE_PER_TICK, DUE_PER_TICK, 50]
    assert json.loads(state)["v"] == CURSOR_VERSION and is_current(json.dumps(cursor))


def test_a_ticks_summary_counts_scopes_then_says_each_ones_state_and_next_check():
    """The skip reason (and each tick's log line) a person reads, in place of the cursor's JSON."""
    published: dict[str, float] = {}
    newest = {"run-a": 1_000_000_000, "run-b": 1_000_000_000, "run-c": 2_000_000_000}  # run-c: written at 2000 s
    sources = _sources(lambda run: [run], lambda key: _pages(3, newest[key]), published.get)
    runs = list(newest)
    first = plan_tick(None, runs, sources, [], 2100.0, settle=600)
    assert tick_summary(first, shown=20).splitlines() == [
        "3 scope(s): 2 export requested, 1 settling.",
        "'run-a': export requested.",
        "'run-b': export requested.",
        "'run-c': settling, 9 min left.",
    ]
    published["run-b"] = 2200.0
    checked = plan_tick(first.cursor, runs, sources, [], 2220.0, settle=600, recheck={"run-a", "run-b"})
    lines = tick_summary(checked, shown=2, notes=["queue messages ignored: 1 test_event"]).splitlines()
    assert lines == [
        "queue messages ignored: 1 test_event.",
        "3 scope(s): 1 published and unchanged, 1 settling, 1 exporting.",
        "'run-a': export requested, not published yet.",
        "'run-b': published and unchanged.",
        "(and 1 more).",
    ]
    later = tick_summary(plan_tick(checked.cursor, runs[:2], sources, [], 2280.0, settle=600), shown=20)
    assert "'run-b': published and unchanged; re-checked in " in later
    assert tick_summary(plan_tick(None, [], sources, [], 2000.0, settle=600), shown=20) == "no scopes."


def test_a_partition_naming_no_run_is_listed_with_the_command_that_removes_it():
    """A key mistyped in the UI's "add partition" (or a run deleted): the tick names it, in plain
    and in queue mode, and only once its run's listing has not failed."""
    published = {"run-a": 2000.0}
    sources = _sources(lambda run: [run], lambda key: _pages(3, 1_000_000_000), published.get)
    known = ["run-a", "run-aa"]
    plan = plan_tick(None, ["run-a"], sources, known, 2100.0, settle=600)
    assert plan.strays == ["run-aa"] and not plan.requests
    lines = tick_summary(plan, shown=20).splitlines()
    assert lines == [
        "2 scope(s): 1 published and unchanged, 1 with no run under the traces root.",
        "'run-a': published and unchanged.",
        "'run-aa': a partition with no run under the traces root; `trace-assets forget run-aa` removes it.",
    ]
    queued = plan_queue_tick(plan.cursor, [], sources, known, 2200.0, settle=600)
    assert queued.strays == ["run-aa"]

    def failing(run_id: str) -> list[str]:
        raise OSError("listing failed")

    broken = plan_tick(None, ["run-aa"], _sources(failing, sources.listing, published.get), known, 2100.0, settle=600)
    assert broken.strays == ["run-a"]  # run-aa's listing failed: not called a stray


def test_a_scope_blocked_after_a_publish_is_blocked_and_a_re_check_publishes_it():
    """Issue 48's first story: a redact run published the scope, then a blocking run stopped it. The
    tick says blocked (never "published and unchanged", whatever the older version's time); the
    operator's re-check requests it; its successful run reads `published` at the very next tick."""
    facts = {"run-a": ScopeFacts(ScopeState.PUBLISHED, "", 2100.0)}
    sources = TickSources(lambda run: [run], lambda key: _pages(3, 1_000_000_000), facts.__getitem__)

    def tick(cursor, now, recheck=()):
        return plan_tick(cursor, ["run-a"], sources, ["run-a"], now, settle=600, recheck=recheck)

    first = tick(None, 2200.0)
    assert first.skipped == {"run-a": "published and unchanged"}
    facts["run-a"] = ScopeFacts(ScopeState.BLOCKED, BLOCKED.reason, 2100.0)  # the block kept the version
    due = tick(first.cursor, _due(first.cursor, "run-a"))
    assert due.waiting == {"run-a": Waiting.BLOCKED} and due.skipped["run-a"].startswith(BLOCKED.reason)
    asked = tick(due.cursor, _due(first.cursor, "run-a") + 60, recheck={"run-a"})
    assert [key for key, _ in asked.requests] == ["run-a"] and asked.retried == {"run-a": ScopeState.BLOCKED}
    facts["run-a"] = ScopeFacts(ScopeState.EXPORTING, "run 1234 is started", 2100.0)
    running = tick(asked.cursor, _due(first.cursor, "run-a") + 120)
    assert running.skipped == {"run-a": "export requested, not published yet (run 1234 is started)"}
    facts["run-a"] = ScopeFacts(ScopeState.PUBLISHED, "", _due(first.cursor, "run-a") + 150)
    done = tick(running.cursor, _due(first.cursor, "run-a") + 180)
    assert done.skipped == {"run-a": "published and unchanged"} and done.listed_scopes == 0
    assert tick_summary(done, shown=20).splitlines()[0] == "1 scope(s): 1 published and unchanged."


def test_a_fresh_cursor_neither_requests_a_scope_an_export_is_running_for_nor_calls_a_blocked_one_published():
    facts = {
        "run-a": ScopeFacts(ScopeState.EXPORTING, "run 1 is queued", None),
        "run-b": ScopeFacts(ScopeState.BLOCKED, BLOCKED.reason, 2100.0),  # published, then blocked
    }
    sources = TickSources(lambda run: [run], lambda key: _pages(3, 1_000_000_000), facts.__getitem__)
    plan = plan_tick(None, ["run-a", "run-b"], sources, [], 2200.0, settle=600)
    assert plan.skipped == {"run-a": "export requested, not published yet (run 1 is queued)"}
    assert [key for key, _ in plan.requests] == ["run-b"] and plan.retried == {"run-b": ScopeState.BLOCKED}


def test_an_export_someone_else_ran_is_followed_at_the_next_tick_whatever_the_back_off():
    """Issue 48: a scope the sensor last found published, then run from the UI or the CLI (its run
    created, started or ended since the last tick: `TickSources.tried`): "exporting" while it runs,
    then what it did (blocked here), never "published and unchanged" until its re-check."""
    facts = {"run-a": ScopeFacts(ScopeState.PUBLISHED, "", 2100.0)}
    listed: list[str] = []

    def listing(key):
        listed.append(key)
        return _pages(3, 1_000_000_000)

    def tick(cursor, now, tried=()):
        sources = TickSources(lambda run: [run], listing, facts.__getitem__, tried)
        return plan_tick(cursor, ["run-a"], sources, ["run-a"], now, settle=600)

    first = tick(None, 2200.0)
    assert first.skipped == {"run-a": "published and unchanged"} and listed == ["run-a"]
    facts["run-a"] = ScopeFacts(ScopeState.EXPORTING, "run 77 is started", 2100.0)
    untouched = tick(first.cursor, 2260.0)  # no run of it changed: its entry says, no read
    assert untouched.skipped["run-a"].startswith("published and unchanged; re-checked in")
    started = tick(first.cursor, 2260.0, tried={"run-a"})
    assert started.skipped == {"run-a": "export requested, not published yet (run 77 is started)"}
    still = tick(started.cursor, 2320.0)  # followed while it runs, though no run of it changed since
    assert still.waiting == {"run-a": Waiting.EXPORTING}
    facts["run-a"] = ScopeFacts(ScopeState.BLOCKED, BLOCKED.reason, 2100.0)
    blocked = tick(still.cursor, 2380.0, tried={"run-a"})
    assert blocked.waiting == {"run-a": Waiting.BLOCKED} and blocked.skipped["run-a"].startswith(BLOCKED.reason)
    after = tick(blocked.cursor, 2440.0)
    assert after.waiting == {"run-a": Waiting.BLOCKED} and not after.requests
    assert listed == ["run-a"]  # no listing for any of it


def test_queue_mode_follows_an_export_someone_else_ran_too():
    facts = {"run-a": ScopeFacts(ScopeState.PUBLISHED, "", 2100.0)}
    first = plan_tick(
        None, ["run-a"], TickSources(lambda run: [run], lambda key: _pages(3, 1_000_000_000), facts.__getitem__),
        ["run-a"], 2200.0, settle=600,
    )  # fmt: skip
    facts["run-a"] = ScopeFacts(ScopeState.BLOCKED, BLOCKED.reason, 2100.0)

    def no_listing(key):
        raise AssertionError(f"{key} listed")

    sources = TickSources(no_listing, no_listing, facts.__getitem__, {"run-a"})
    plan = plan_queue_tick(first.cursor, [], sources, ["run-a"], 2260.0, settle=600)
    assert plan.waiting == {"run-a": Waiting.BLOCKED}
