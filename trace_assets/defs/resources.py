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
from pydantic import Field, field_validator, model_validator

from trace_assets.core.scope import RunScope, ScopeUnit
from trace_assets.defs.s3_config import S3Config
from trace_assets.orchestration.context import ScopeContext, scope_context
from trace_assets.orchestration.options import card_settings, privacy_options, scan_options, scan_policy
from trace_assets.publishing.hub.naming import check_repo_id_template
from trace_assets.publishing.targets import HubSettings, PublishTarget, choose_target, naming_fields, publishes_to_hub
from trace_assets.runtime.progress import Progress
from trace_assets.secret_scan.policy import ScanPolicy
from trace_assets.secret_scan.scanner import ScanOptions
from trace_assets.settings import (
    DEFAULT_STAGING,
    ConfigError,
    HubRepoSettings,
    PipelineSettings,
    ProcessSettings,
    dagster_home,
    env_name,
    is_plain_str,
    load,
    variables,
)
from trace_assets.steps.scan import scan_options as parsed_scan_options
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
    (environment, CLI, the UI's launchpad, a backfill's run config). A root left to its variable
    (`dg.EnvVar`, when the code location loads without it) is read when a run or tick starts."""

    # A bad scan pattern, allowlist entry or scrub value is refused when the config is built, not in
    # the scan step; a Dagster EnvVar (a str naming the variable) is checked once Dagster has read it.
    @field_validator("secret_patterns", mode="before")
    @classmethod
    def _patterns_compile(cls, spec: Any) -> Any:
        if is_plain_str(spec):
            parsed_scan_options(spec, "")
        return spec

    @field_validator("secret_allowlist", mode="before")
    @classmethod
    def _allowlist_holds_fingerprints(cls, spec: Any) -> Any:
        if is_plain_str(spec):
            parsed_scan_options("", spec)
        return spec

    @model_validator(mode="after")
    def _scrub_values_compile(self) -> TraceAssetsConfig:
        privacy_options(self)  # a short literal or a bad regex is refused at start
        return self

    def scan_options(self) -> ScanOptions:
        return scan_options(self)

    def scan_policy(self) -> ScanPolicy:
        return scan_policy(self)

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
            card_settings(self),
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
                naming_fields(card_settings(self)),
                steps=self.scope_unit == ScopeUnit.STEP,
                variables=variables(),
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
    what is allowed; the process-wide settings (the sensor's interval) are checked too.

    A root in `require` must be set; another left unset is Dagster's `EnvVar`, read when a run or a
    sensor tick starts (which fails naming the variable if it is still unset): the code location
    loads without the roots, as `dg check defs` in a fresh clone needs."""
    load(ProcessSettings, env)
    defaults: dict[str, Any] = {"staging_root": str(dagster_home(env) / DEFAULT_STAGING)}
    defaults |= {root: dg.EnvVar(env_name(PipelineSettings, root)) for root in ROOTS if root not in require}
    config = load(TraceAssetsConfig, env, options, defaults)
    config.require(*require)
    return config


class HuggingFaceHub(dg.ConfigurableResource, HubRepoSettings):
    """Publishing to the Hub: for a publish root `hf://datasets/<org>/<name>`, or a repo per run.
    Where a scope's repo goes are `settings.HubRepoSettings`'s fields; the token and endpoint are
    huggingface_hub's own variables. The token comes from HF_TOKEN through Dagster's EnvVar and goes
    to huggingface_hub only."""

    token: str | None = Field(default=None, description="Hub token (set from the HF_TOKEN environment variable)")
    endpoint: str | None = Field(default=None, description="Hub URL; HF_ENDPOINT, else huggingface.co")

    def settings(self) -> HubSettings:
        return HubSettings(self.token, self.endpoint, self.repo_id_template, self.org, not self.public, self.revision)


def hub_from_env(env: Mapping[str, str] = os.environ) -> HuggingFaceHub:
    token = dg.EnvVar("HF_TOKEN") if env.get("HF_TOKEN") else None
    return load(HuggingFaceHub, env, defaults={"token": token, "endpoint": env.get("HF_ENDPOINT") or None})
