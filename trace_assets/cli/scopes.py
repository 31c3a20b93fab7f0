"""From what the operator typed to the scopes a command works on, and the checks made before any
work: that each scope is under the traces root, and that its publish target takes writes."""

from __future__ import annotations

from typing import TYPE_CHECKING

from trace_assets.cli.console import say
from trace_assets.core.scope import InvalidScopeKey, RunScope, validate_scope_key
from trace_assets.settings import PipelineSettings, env_name, flag_of

if TYPE_CHECKING:
    from trace_assets.defs.resources import TraceAssetsConfig
    from trace_assets.publishing.targets import PublishTarget
    from trace_assets.store.trace_store import TraceStore

# where the operator sets the traces root, named when it is missing or empty
ROOT_SOURCE = f"{env_name(PipelineSettings, 'traces_root')}, {flag_of(PipelineSettings, 'traces_root')}"


def listed_scopes(trace_config: TraceAssetsConfig) -> list[str]:
    """Scope keys under the traces root; folders whose names cannot be run ids are named and skipped."""
    from trace_assets.store.missing import root_problem

    store = trace_config.parts().store()
    if not store.fs.isdir(store.root):  # an empty root lists nothing, and is no error
        raise ValueError(root_problem(store, ROOT_SOURCE))
    found = []
    for run_id in store.run_ids():
        try:
            found.append(validate_scope_key(run_id))
        except InvalidScopeKey as error:
            say(f"skipping {error}")
    return expand_scopes(found, trace_config)


def expand_scopes(keys: list[str], trace_config: TraceAssetsConfig) -> list[str]:
    """Each run id given as the keys of its scopes (its steps, under `--scope step`); step keys,
    and runs not found (preflight names them), as they are."""
    expanded = []
    for key in keys:
        scope = RunScope.from_key(key)
        if scope.step is None and run_exists(trace_config, scope):
            expanded += [s.key for s in trace_config.parts().scopes(key)]
        else:
            expanded.append(key)
    return list(dict.fromkeys(expanded))


def run_exists(trace_config: TraceAssetsConfig, scope: RunScope) -> bool:
    import fsspec

    from trace_assets.store.s3_options import storage_options

    options = storage_options(trace_config.object_storage, trace_config.traces_root)
    fs, root = fsspec.core.url_to_fs(trace_config.traces_root, **options)
    return fs.isdir(f"{root.rstrip('/')}/{scope.source_prefix}")


def why_missing(store: TraceStore, scope: RunScope) -> str | None:
    """None when the scope is under the traces root (`store`: one for every scope a command checks,
    as a store on S3 is a new client, about 0.7 CPU s); else what is missing, and what is there instead."""
    from trace_assets.store.missing import why_missing as missing_from

    return missing_from(store, scope, ROOT_SOURCE)


def why_no_runs(trace_config: TraceAssetsConfig) -> str:
    """Why `--all` found nothing: the root is missing or empty, or none of its folders is a run."""
    from trace_assets.store.missing import root_problem

    problem = root_problem(trace_config.parts().store(), ROOT_SOURCE)
    return problem or f"no runs under {trace_config.traces_root}: no folder there holds a trace_jobs/ folder"


def preflight(run_ids: list[str], trace_config: TraceAssetsConfig, target: PublishTarget) -> dict[str, str]:
    """Runs that cannot be materialized, with why: not under the traces root, or not publishable to `target`."""
    problems = {}
    store = trace_config.parts().store()
    for run_id in run_ids:
        scope = RunScope.from_key(run_id)
        missing = why_missing(store, scope)
        if missing:
            problems[run_id] = missing
            continue
        try:
            target.check_writable(scope)
        except Exception as error:  # any access failure (permissions, S3, Hub) is reported, not raised
            problems[run_id] = f"cannot publish to {target.location(scope)}: {error}"
    return problems
