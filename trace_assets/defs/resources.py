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
from dagster_aws.s3 import S3Resource
from pydantic import Field

from trace_assets.publishing.targets import HubSettings, PublishTarget, choose_target
from trace_assets.scope import RunScope
from trace_assets.secret_scan.policy import OnSecret, parse_on_secret
from trace_assets.steps.rows import DEFAULT_ROWS_PER_SHARD
from trace_assets.steps.staging import RunStaging
from trace_assets.store.trace_store import DEFAULT_BATCH_BYTES, TraceStore

PROJECT_DIR = Path(__file__).resolve().parent.parent.parent
SAMPLE_TRACES = PROJECT_DIR / "sample_traces"


class ObjectStorage(S3Resource):
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


class TraceAssetsConfig(dg.ConfigurableResource):
    """Everything a run's materialization depends on, shown in the UI's resource page."""

    traces_root: str = Field(description="fsspec URL holding <run_id>/trace_jobs/ folders")
    publish_root: str = Field(description="fsspec URL datasets are published under, as <publish_root>/<run_id>/")
    staging_root: str = Field(description="Local folder for the intermediate Parquet files between assets")
    include_subagents: bool = Field(default=False, description="Also export subagent (summarization) rows")
    batch_size: int = Field(default=256, description="Trials fetched and parsed per batch")
    batch_bytes: int = Field(default=DEFAULT_BATCH_BYTES, description="Listed bytes fetched and parsed per batch")
    max_concurrency: int = Field(default=64, description="Object reads in flight at once")
    max_rows_per_shard: int = Field(default=DEFAULT_ROWS_PER_SHARD, description="Rows per published Parquet shard")
    min_export_ratio: float = Field(default=0.9, description="Exported/scored below this warns")
    on_secret: OnSecret = Field(default="block", description="On live credentials: block, redact or allow")
    secret_patterns: str = Field(default="", description="Extra patterns, 'name=regex;name2=regex2'")
    secret_allowlist: str = Field(default="", description="Comma-separated fingerprints of known placeholders")
    settle_seconds: float = Field(default=600, description="Sensor: how long a run's listing must stay unchanged")

    def staging(self, scope: RunScope) -> RunStaging:
        return RunStaging(Path(self.staging_root), scope)

    def store(self, storage: ObjectStorage) -> TraceStore:
        return TraceStore(
            self.traces_root,
            storage.storage_options(self.traces_root),
            self.max_concurrency,
            batch_bytes=self.batch_bytes,
        )

    def publish_target(self, storage: ObjectStorage, hub: HuggingFaceHub) -> PublishTarget:
        return choose_target(self.publish_root, storage.storage_options(self.publish_root), hub.settings())


def _flag(value: str | None) -> bool:
    return (value or "").strip().lower() in ("1", "true", "yes", "on")


def config_from_env(env: Mapping[str, str] = os.environ, **overrides: Any) -> TraceAssetsConfig:
    """The config for `dagster dev` and the CLI: environment variables, then explicit overrides."""
    home = Path(env.get("DAGSTER_HOME") or PROJECT_DIR / ".dagster_home")
    values: dict[str, Any] = {
        "traces_root": env.get("TRACE_ASSETS_TRACES_ROOT") or str(SAMPLE_TRACES),
        "publish_root": env.get("TRACE_ASSETS_PUBLISH_ROOT") or str(PROJECT_DIR / "published"),
        "staging_root": env.get("TRACE_ASSETS_STAGING_ROOT") or str(home / "trace_assets_staging"),
        "include_subagents": _flag(env.get("TRACE_ASSETS_SUBAGENTS")),
        "on_secret": parse_on_secret(env.get("TRACE_ASSETS_ON_SECRET") or "block"),
        "secret_patterns": env.get("TRACE_ASSETS_SECRET_PATTERNS", ""),
        "secret_allowlist": env.get("TRACE_ASSETS_SECRET_ALLOWLIST", ""),
    }
    for name, key in (
        ("batch_size", "TRACE_ASSETS_BATCH_SIZE"),
        ("batch_bytes", "TRACE_ASSETS_BATCH_BYTES"),
        ("max_rows_per_shard", "TRACE_ASSETS_MAX_ROWS_PER_SHARD"),
    ):
        if env.get(key):
            values[name] = int(env[key])
    for name, key in (
        ("min_export_ratio", "TRACE_ASSETS_MIN_EXPORT_RATIO"),
        ("settle_seconds", "TRACE_ASSETS_SETTLE_SECONDS"),
    ):
        if env.get(key):
            values[name] = float(env[key])
    values.update({k: v for k, v in overrides.items() if v is not None})
    values["on_secret"] = parse_on_secret(values["on_secret"])
    return TraceAssetsConfig(**values)


class HuggingFaceHub(dg.ConfigurableResource):
    """Publishing to the Hub: for a publish root `hf://datasets/<org>/<name>`, or a repo per run.

    The token comes from HF_TOKEN through Dagster's EnvVar and goes to huggingface_hub only.
    """

    token: str | None = Field(default=None, description="Hub token (set from the HF_TOKEN environment variable)")
    endpoint: str | None = Field(default=None, description="Hub URL; HF_ENDPOINT, else huggingface.co")
    repo_id_template: str = Field(default="", description="One repo per run, e.g. '{org}/traces-{run_id}'")
    org: str = Field(default="", description="Fills {org} in repo_id_template")
    private: bool = Field(default=True, description="Create repos private")
    revision: str = Field(default="main", description="Branch to commit to")

    def settings(self) -> HubSettings:
        return HubSettings(self.token, self.endpoint, self.repo_id_template, self.org, self.private, self.revision)


def hub_from_env(env: Mapping[str, str] = os.environ) -> HuggingFaceHub:
    return HuggingFaceHub(
        token=dg.EnvVar("HF_TOKEN") if env.get("HF_TOKEN") else None,
        endpoint=env.get("HF_ENDPOINT") or None,
        repo_id_template=env.get("TRACE_ASSETS_HUB_REPO_ID", ""),
        org=env.get("TRACE_ASSETS_HUB_ORG", ""),
        private=not _flag(env.get("TRACE_ASSETS_HUB_PUBLIC")),
        revision=env.get("TRACE_ASSETS_HUB_REVISION") or "main",
    )
