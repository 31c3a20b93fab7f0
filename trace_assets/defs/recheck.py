"""Re-check requests: an operator asks the sensor to list scopes at its next tick, whatever their
back-off. A request is a runless observation of `published_shards` for the scope's partition
(shown on the asset's page); `trace-assets recheck` and the `recheck_scopes` job (the UI's
Launchpad) record it through `request_rechecks`, the sensor reads it once (`recheck_requests`).

The job takes no pool and is not partitioned, so neither `hub_commits` nor the one-run-per-partition
limit holds it behind, or it behind it, a running export of the same scope.
"""

import dagster as dg
from pydantic import Field

from trace_assets.core.scope import InvalidScopeKey, partitions_named, validate_scope_keys
from trace_assets.defs.assets import published_shards
from trace_assets.defs.jobs import RUN_EXECUTOR
from trace_assets.defs.partitions import TRACE_RUNS

PUBLISHED = published_shards.key
RECHECK_METADATA = "recheck_requested_by"  # marks a re-check request among the asset's observations


def unknown_scope_reason(key: str) -> str:
    return f"{key!r} is not a partition the sensor knows; nothing to re-check"


def request_rechecks(instance: dg.DagsterInstance, keys: list[str], requested_by: str) -> dict[str, list[str]]:
    """Each key validated (`InvalidScopeKey` naming every bad one, before anything is recorded),
    then a request recorded for each partition it names (a run: its step partitions); returns the
    partitions asked for, per key (none: a key the sensor does not know)."""
    keys = validate_scope_keys(keys)
    known = set(instance.get_dynamic_partitions(TRACE_RUNS))
    asked = {key: partitions_named(key, known) for key in keys}
    for scopes in asked.values():
        for scope in scopes:
            observation = dg.AssetObservation(
                asset_key=PUBLISHED, partition=scope, metadata={RECHECK_METADATA: requested_by}
            )
            instance.report_runless_asset_event(observation)
    return asked


def recheck_requests(instance: dg.DagsterInstance, after: int | None) -> tuple[set[str], int | None]:
    """Scopes asked to be re-checked since storage id `after`, and the newest id seen (on a first
    tick, `after` None: none asked, the id to read from next)."""
    if after is None:
        latest = instance.fetch_observations(PUBLISHED, limit=1).records
        return set(), latest[0].storage_id if latest else 0
    keys, newest = set(), after
    cursor = None
    while True:
        page = instance.fetch_observations(
            dg.AssetRecordsFilter(asset_key=PUBLISHED, after_storage_id=after),
            limit=1000,
            cursor=cursor,
            ascending=True,
        )
        for record in page.records:
            newest = max(newest, record.storage_id)
            observation = record.asset_observation
            if observation is not None and observation.partition and RECHECK_METADATA in observation.metadata:
                keys.add(observation.partition)
        if not page.has_more:
            return keys, newest
        cursor = page.cursor


EXAMPLE_SCOPES = ["rl-sample-run"]  # the Launchpad's default: the sample's run, to be replaced by the operator's


class RecheckScopes(dg.Config):
    scopes: list[str] = Field(
        description="scope keys to re-check, as a list: runs (all their steps) or steps, e.g. [my-run, my-run/step-3]"
    )


@dg.op(description="Records a re-check request for each scope; the sensor lists them at its next tick")
def request_recheck(context: dg.OpExecutionContext, config: RecheckScopes) -> None:
    if not config.scopes:
        raise dg.Failure(description="no scopes given: name at least one scope key in `scopes`", allow_retries=False)
    try:
        asked = request_rechecks(context.instance, config.scopes, f"recheck_scopes run {context.run_id}")
    except InvalidScopeKey as error:  # the run fails naming the keys, without a traceback to read
        raise dg.Failure(description=str(error), allow_retries=False) from None
    for key, scopes in asked.items():
        if scopes:
            named = key if scopes == [key] else f"{key} ({', '.join(scopes)})"  # a run: its step partitions
            context.log.info(f"re-check requested for {named}; the sensor lists it at its next tick")
    unknown = [key for key, scopes in asked.items() if not scopes]
    if unknown:
        raise dg.Failure(
            description="; ".join(unknown_scope_reason(key) for key in unknown),
            metadata={"requested": [scope for scopes in asked.values() for scope in scopes], "unknown": unknown},
            allow_retries=False,
        )


@dg.job(
    executor_def=RUN_EXECUTOR,
    # The Launchpad opens with this, a valid config to edit, rather than `{}` and a missing-field error.
    config=dg.RunConfig(ops={"request_recheck": RecheckScopes(scopes=EXAMPLE_SCOPES)}),
    description="Make the sensor list these scopes at its next tick, whatever their back-off (as `trace-assets recheck`)",
)
def recheck_scopes() -> None:
    request_recheck()
