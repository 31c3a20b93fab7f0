"""Why a scope asked for is not under the traces root, told apart for the person who typed it: a
wrong traces root, a mistyped run id (with the closest runs there), or a step the run does not have
(with the steps it has). Only asked once a scope's folder is found missing, so its listings cost
nothing on the way to a good run."""

from __future__ import annotations

import difflib

from trace_assets.core.scope import STEP_FOLDER, TRACE_JOBS, RunScope
from trace_assets.store.bucket_url import BucketRoot
from trace_assets.store.trace_store import TraceStore

SUGGESTIONS = 3  # closest run ids named
RUNS_NAMED = 5  # runs named when none is close


def root_problem(store: TraceStore, root_source: str) -> str | None:
    """What is wrong with the traces root as a whole: it does not exist, or holds no folder.
    `root_source`: where the operator set the root (its variable and option), named in the line."""
    if store.bucket is not None:
        root = BucketRoot.parse(store.root_url)
        problem = store.bucket.problem(root)
        if problem is None and not store.run_folders():
            where = f"under the prefix {root.prefix!r}" if root.prefix else "at its root"
            problem = f"the bucket {root.bucket_id!r} holds no folders {where} ({root_source}: {store.root_url})"
        return problem
    if not store.fs.isdir(store.root):
        return f"the traces root {store.root_url} ({root_source}) does not exist"
    if not _folders(store, store.root):
        return f"the traces root {store.root_url} ({root_source}) is empty"
    return None


def why_missing(store: TraceStore, scope: RunScope, root_source: str) -> str | None:
    """None when the scope's folder is there; else one line saying what is missing and what is there."""
    if store.fs.isdir(store.scope_path(scope)):
        return None
    problem = root_problem(store, root_source)
    if problem:
        return problem
    run_folder = f"{store.root}/{scope.run_id}"
    if store.fs.isdir(f"{run_folder}/{TRACE_JOBS}"):
        steps = [name for name in _folders(store, f"{run_folder}/{TRACE_JOBS}") if STEP_FOLDER.fullmatch(name)]
        steps.sort(key=lambda name: int(name.removeprefix("step-")))
        has = f"its steps: {', '.join(steps)}" if steps else f"it has no step folders; materialize {scope.run_id!r}"
        return f"run {scope.run_id!r} under {store.root_url} has no step {scope.step!r} ({has})"
    if store.fs.isdir(run_folder):
        return f"the folder {scope.run_id!r} under {store.root_url} has no {TRACE_JOBS}/ folder, so it is not a run"
    return f"no run {scope.run_id!r} under {store.root_url}; {_closest(store, scope.run_id)}"


def _closest(store: TraceStore, run_id: str) -> str:
    """The runs beside where `run_id` would be whose names are closest to it, or a few of them."""
    parent, _, _ = run_id.rpartition("/")
    if parent and not store.fs.isdir(f"{store.root}/{parent}"):
        parent = ""
    prefix = f"{parent}/" if parent else ""
    runs = [prefix + name for name in _folders(store, f"{store.root}/{parent}".rstrip("/")) if name != TRACE_JOBS]
    close = difflib.get_close_matches(run_id, runs, n=SUGGESTIONS)
    if close:
        return f"did you mean {' or '.join(map(repr, close))}?"
    named = ", ".join(runs[:RUNS_NAMED]) + (f" and {len(runs) - RUNS_NAMED} more" if len(runs) > RUNS_NAMED else "")
    return f"folders there: {named} (`trace-assets runs` lists the runs)"


def _folders(store: TraceStore, path: str) -> list[str]:
    """Names of the folders right under `path` (one delimiter listing)."""
    entries = store.fs.ls(path, detail=True, refresh=True)
    return sorted(e["name"].rstrip("/").rsplit("/", 1)[-1] for e in entries if e.get("type") == "directory")
