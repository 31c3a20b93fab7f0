"""Dagster resources: where traces are read from, where datasets go, and how the steps behave.

Each is configuration plus a method that hands the domain code what it needs (a `TraceStore`, a
`RunStaging`, a `PublishTarget`); no step logic lives here.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import dagster as dg
from pydantic import Field

from trace_assets.core.scope import RunScope, ScopeUnit
from trace_assets.defs.s3_config import S3Config
from trace_assets.orchestration.context import ScopeContext, scope_context
from trace_assets.publishing.hub.naming import check_repo_id_template
from trace_assets.publishing.targets import HubSettings, PublishTarget, choose_target, naming_fields, publishes_to_hub
from trace_assets.runtime.progress import Progress
from trace_assets.settings import (
    ConfigError,
    HubRepoSettings,
    PipelineSettings,
    ProcessSettings,
    dagster_home,
    env_name,
    load,
)
from trace_assets.steps.staging import RunStaging
from trace_assets.steps.staging_mirror import StagingMirror, staging_scratch
from trace_assets.store.trace_store import TraceStore

__all__ = ["ConfigError", "HuggingFaceHub", "ObjectStorage", "TraceAssetsConfig", "config_from_env", "hub_from_env"]
ROOTS = ("traces_root", "publish_root")


class ObjectStorage(S3Config):
    """Object-storage access, S3Resource's config (endpoint_url for MinIO, R2, Ceph), handed to s3fs.

    Unset fields fall through to botocore's own environment handling (AWS_ENDPOINT_URL,
    AWS_ENDPOINT_URL_S3, AWS_PROFILE, ...). Credentials stay inside the s3fs client.
    """

    max_attempts: int = 8

    def storage_options(self, url: str) -> dict[str, Any]:
        if not url.startswith(("s3://", "s3a://")):
            return {}
        options: dict[str, Any] = {
            "config_kwargs": {"retries": {"max_attempts": self.max_attempts, "mode": "standard"}},
            "skip_instance_cache": True,
            # Trace files are small: one GET each, without the HEAD s3fs sends to plan ranged reads.
            "max_concurrency": 1,
        }
        client_kwargs: dict[str, Any] = {}
        if self.region_name:
            client_kwargs["region_name"] = self.region_name
        if self.verify is not None:
            client_kwargs["verify"] = self.verify
        if client_kwargs:
            options["client_kwargs"] = client_kwargs
        if self.endpoint_url:
            options["endpoint_url"] = self.endpoint_url
        if self.use_unsigned_session:
            options["anon"] = True
        if self.profile_name:
            options["profile"] = self.profile_name
        if self.aws_access_key_id:
            options["key"] = self.aws_access_key_id
        if self.aws_secret_access_key:
            options["secret"] = self.aws_secret_access_key
        if self.aws_session_token:
            options["token"] = self.aws_session_token
        if not self.use_ssl:
            options["use_ssl"] = False
        return options

    def aws_session_options(self) -> tuple[dict[str, Any], dict[str, Any]]:
        """The same settings for a boto3 session and its clients (the sensor's SQS queue): unset
        ones fall through to botocore's environment handling, as for S3."""
        session = {
            name: value
            for name, value in (
                ("profile_name", self.profile_name),
                ("region_name", self.region_name),
                ("aws_access_key_id", self.aws_access_key_id),
                ("aws_secret_access_key", self.aws_secret_access_key),
                ("aws_session_token", self.aws_session_token),
            )
            if value
        }
        client: dict[str, Any] = {"use_ssl": self.use_ssl}
        if self.verify is not None:
            client["verify"] = self.verify
        return session, client


class TraceAssetsConfig(dg.ConfigurableResource, PipelineSettings):
    """Everything a run's materialization depends on, shown in the UI's resource page: the fields
    and their checks are `settings.PipelineSettings`'s, validated wherever the resource is built
    (environment, CLI, the UI's launchpad, a backfill's run config)."""

    def setup_for_execution(self, context: dg.InitResourceContext) -> None:
        """A launchpad config without a root is refused before the run's first step."""
        self.require("traces_root", "publish_root", "staging_root")

    def staging(self, scope: RunScope, storage: ObjectStorage | None = None) -> RunStaging:
        """Local staging, or a scratch folder mirrored to the staging URL (see `staging_mirror`)."""
        if "://" not in self.staging_root:
            return RunStaging(Path(self.staging_root), scope)
        options = (storage or ObjectStorage()).storage_options(self.staging_root)
        return RunStaging(
            staging_scratch(self.staging_root),
            scope,
            StagingMirror(self.staging_root, options, self.staging_lease_seconds),
        )

    def store(self, storage: ObjectStorage) -> TraceStore:
        return TraceStore(
            self.traces_root,
            storage.storage_options(self.traces_root),
            self.max_concurrency,
            batch_bytes=self.batch_bytes,
            fetch_ahead=self.fetch_ahead,
        )

    def scope_context(
        self,
        staging: RunStaging,
        storage: ObjectStorage,
        hub: HuggingFaceHub,
        progress: Progress,
        target: PublishTarget | None = None,
    ) -> ScopeContext:
        """The steps' context for the scope `staging` holds (its target built when first used, or `target`)."""

        def make_target() -> PublishTarget:
            return target if target is not None else self.publish_target(storage, hub)

        return scope_context(self, staging, self.store(storage), make_target, progress)

    def run_scopes(self, storage: ObjectStorage, run_id: str) -> list[RunScope]:
        """The run's scopes under `scope_unit`: its step folders, or the run as one."""
        return self.store(storage).scopes(run_id, ScopeUnit(self.scope_unit))

    def publish_target(self, storage: ObjectStorage, hub: HuggingFaceHub) -> PublishTarget:
        self.check_hub_names(hub)
        return choose_target(
            self.publish_root,
            storage.storage_options(self.publish_root),
            hub.settings(),
            self.publish_concurrency,
            self.card_settings(),
        )

    def publishes_to_hub(self, hub: HuggingFaceHub) -> bool:
        self.check_hub_names(hub)  # where the definitions are built: `dagster dev` and `dg check defs` refuse it
        return publishes_to_hub(self.publish_root, hub.repo_id_template)

    def check_hub_names(self, hub: HuggingFaceHub) -> None:
        """A repo id template no scope's repo could be named from is refused at start (see `hub.naming`)."""
        if not hub.repo_id_template:
            return
        try:
            check_repo_id_template(
                hub.repo_id_template,
                hub.org,
                naming_fields(self.card_settings()),
                steps=self.scope_unit == ScopeUnit.STEP,
            )
        except ValueError as error:
            why = str(error).removeprefix(f"repo id template {hub.repo_id_template!r}").lstrip(": ")
            variable = env_name(HubRepoSettings, "repo_id_template")
            raise ConfigError(f"{variable}={hub.repo_id_template!r}: {why}") from None


def config_from_env(
    env: Mapping[str, str] = os.environ, require: tuple[str, ...] = ROOTS, **options: Any
) -> TraceAssetsConfig:
    """The config for the code location and the CLI: the declared variables, then the CLI's
    options (None: not given). Raises `ConfigError` naming the variable or option, the value and
    what is allowed; the process-wide settings (the sensor's interval) are checked too."""
    load(ProcessSettings, env)
    home = dagster_home(env)
    settings = load(PipelineSettings, env, options, {"staging_root": str(home / "trace_assets_staging")})
    settings.require(*require)
    return TraceAssetsConfig(**settings.model_dump())


class HuggingFaceHub(dg.ConfigurableResource):
    """Publishing to the Hub: for a publish root `hf://datasets/<org>/<name>`, or a repo per run.

    The token comes from HF_TOKEN through Dagster's EnvVar and goes to huggingface_hub only.
    """

    token: str | None = Field(default=None, description="Hub token (set from the HF_TOKEN environment variable)")
    endpoint: str | None = Field(default=None, description="Hub URL; HF_ENDPOINT, else huggingface.co")
    repo_id_template: str = Field(
        default="",
        description="One repo per scope, named from {org} {run} {step} {run_id} {date} {model} {framework}"
        " {task_source} {license} {pretty_name}, e.g. '{org}/traces-{run_id}'",
    )
    org: str = Field(default="", description="Fills {org} in repo_id_template")
    private: bool = Field(default=True, description="Create repos private")
    revision: str = Field(default="main", description="Branch to commit to")

    def settings(self) -> HubSettings:
        return HubSettings(self.token, self.endpoint, self.repo_id_template, self.org, self.private, self.revision)


def hub_from_env(env: Mapping[str, str] = os.environ) -> HuggingFaceHub:
    repo = load(HubRepoSettings, env)
    return HuggingFaceHub(
        token=dg.EnvVar("HF_TOKEN") if env.get("HF_TOKEN") else None,
        endpoint=env.get("HF_ENDPOINT") or None,
        repo_id_template=repo.repo_id_template,
        org=repo.org,
        private=not repo.public,
        revision=repo.revision,
    )
