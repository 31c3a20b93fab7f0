"""Dagster resources: where traces are read from, where datasets go, and how the steps behave.

Each is configuration plus a method that hands the domain code what it needs (a `TraceStore`, a
`RunStaging`, a `PublishTarget`); no step logic lives here.
"""

from __future__ import annotations

import getpass
import os
import socket
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

import dagster as dg
from pydantic import Field, ValidationError, field_validator, model_validator

from trace_assets.defs.s3_config import S3Config
from trace_assets.harbor.options import EXPORT_FIELDS, Episodes, ExportOptions, Subagents, SuccessFilter, export_env
from trace_assets.publishing.card import CardSettings
from trace_assets.publishing.hub.naming import check_repo_id_template
from trace_assets.publishing.shrink_guard import DEFAULT_SHRINK_THRESHOLD
from trace_assets.publishing.targets import (
    DEFAULT_PUBLISH_CONCURRENCY,
    HubSettings,
    PublishTarget,
    choose_target,
    naming_fields,
    publishes_to_hub,
)
from trace_assets.queue_events import bucket_and_prefix
from trace_assets.roots import refuse_overlapping_roots
from trace_assets.run_tags import SWEEP_LABEL, sweep_label
from trace_assets.scope import RunScope, ScopeUnit
from trace_assets.secret_scan.normalise import DEFAULT_WRAP_WIDTH
from trace_assets.secret_scan.policy import OnSecret, OnUnverified, ScanPolicy, parse_on_secret, parse_on_unverified
from trace_assets.secret_scan.privacy import OnPrivate, PrivacyOptions, operator_literals, parse_on_private
from trace_assets.secret_scan.scanner import ScanOptions
from trace_assets.steps.rows import DEFAULT_ROWS_PER_SHARD
from trace_assets.steps.scan import scan_options
from trace_assets.steps.sessions import SessionWriter, staged_sessions
from trace_assets.steps.staging import RunStaging
from trace_assets.steps.staging_mirror import DEFAULT_LEASE_SECONDS, StagingMirror, staging_scratch
from trace_assets.store.trace_store import DEFAULT_BATCH_BYTES, DEFAULT_FETCH_AHEAD, TraceStore

PROJECT_DIR = Path(__file__).resolve().parent.parent.parent
SAMPLE_TRACES = PROJECT_DIR / "sample_traces"


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


class TraceAssetsConfig(dg.ConfigurableResource):
    """Everything a run's materialization depends on, shown in the UI's resource page.

    Validated wherever it is built (environment, CLI, the UI's launchpad, a backfill's run config):
    counts are positive, ratios within 0..1, and the three roots pairwise disjoint.
    """

    traces_root: str = Field(min_length=1, description="fsspec URL holding <run_id>/trace_jobs/ folders")
    publish_root: str = Field(
        min_length=1, description="fsspec URL datasets are published under, as <publish_root>/<run_id>/"
    )
    staging_root: str = Field(
        min_length=1,
        description="Folder or fsspec URL (s3://bucket/staging) for the intermediate files between assets; "
        "a URL is mirrored from a local scratch folder at each step's start and end",
    )
    staging_lease_seconds: float = Field(
        default=DEFAULT_LEASE_SECONDS, gt=0, description="Staging URL: how long a dead holder's lease blocks its scope"
    )
    episodes: Episodes = Field(default="last", description="Harbor's --episodes: last, or all (a row per episode)")
    sharegpt: bool = Field(default=False, description="Harbor's --sharegpt: add a conversations_sharegpt column")
    success_filter: SuccessFilter = Field(default="all", description="Harbor's --filter: all, success or failure")
    instruction_metadata: bool = Field(default=True, description="The instruction column (--no-instruction-metadata)")
    verifier_metadata: bool = Field(default=True, description="The verifier_output column (--no-verifier-metadata)")
    subagents: Subagents = Field(
        default="none", description="Subagent rows: none, merged (trace_source column) or separate (a config per kind)"
    )
    batch_size: int = Field(default=256, gt=0, description="Trials fetched and parsed per batch")
    batch_bytes: int = Field(default=DEFAULT_BATCH_BYTES, gt=0, description="Listed bytes fetched and parsed per batch")
    max_concurrency: int = Field(default=64, gt=0, description="Object reads in flight at once")
    publish_concurrency: int = Field(
        default=DEFAULT_PUBLISH_CONCURRENCY,
        gt=0,
        description="Object-storage uploads in flight at once while publishing",
    )
    fetch_ahead: int = Field(
        default=DEFAULT_FETCH_AHEAD, ge=0, description="Batches fetched while one is parsed; batch_bytes covers all"
    )
    max_rows_per_shard: int = Field(
        default=DEFAULT_ROWS_PER_SHARD, gt=0, description="Rows per published Parquet shard"
    )
    min_export_ratio: float = Field(default=0.9, ge=0, le=1, description="Exported/scored below this warns")
    on_secret: OnSecret = Field(default="block", description="On live credentials: block, redact or allow")
    secret_patterns: str = Field(default="", description="Extra patterns, 'name=regex;name2=regex2'")
    secret_allowlist: str = Field(default="", description="Comma-separated fingerprints of known placeholders")
    on_unverified: OnUnverified = Field(
        default="redact", description="On unverified credentials: keep, redact or block"
    )
    secret_wrap_width: int = Field(
        default=DEFAULT_WRAP_WIDTH, gt=0, description="Terminal width whose hard wraps the scan joins"
    )
    on_private: OnPrivate = Field(
        default="keep", description="On e-mails, private IPs, internal hosts/URLs, home paths: keep, redact or block"
    )
    scrub_literals: str = Field(default="", description="Comma-separated operator values, always replaced")
    scrub_patterns: str = Field(default="", description="Operator regexes, always replaced, 'regex;regex2'")
    raw_scan: bool = Field(
        default=False,
        description="Also scan every object under the scope's prefix (episode prompts included) for secrets, "
        "as the raw_tree_secrets check; off by default, on per run or per sweep",
    )
    sessions: bool = Field(default=True, description="Also publish each trial's whole trajectory as session files")
    session_harness: str = Field(default="", description="Session files' harness id; default: the trial's agent")
    scope_unit: Literal["step", "run"] = Field(  # a scope.ScopeUnit value: Dagster run config takes strings
        default="step",
        description="A partition per step folder (step) where a run's trace_jobs/ holds only step-N folders, or per run (run)",
    )
    settle_seconds: float = Field(default=600, ge=0, description="Sensor: how long a run's listing must stay unchanged")
    event_queue_url: str = Field(
        default="",
        description="Sensor: an SQS queue URL receiving the traces bucket's S3 event notifications; "
        "a tick then lists only the scopes the events touched (empty: list the root each tick)",
    )
    sweep: str = Field(
        default="",
        pattern=SWEEP_LABEL,
        description="The trace_assets/sweep tag on the sensor's, CLI's and backfills' runs (tag concurrency "
        "limits per sweep); empty: the traces root's last path segment",
    )
    allow_shrink: bool = Field(
        default=False, description="Publish even when the run has 0 rows or shrank past shrink_threshold"
    )
    shrink_threshold: float = Field(
        default=DEFAULT_SHRINK_THRESHOLD,
        ge=0,
        le=1,
        description="Refuse to replace a published dataset with one this much smaller (trial folders or rows)",
    )
    card_license: str = Field(default="unknown", description="Card: the Hub license id of the traces")
    card_pretty_name: str = Field(default="", description="Card: the title; default '<run> step <N> traces of <model>'")
    card_language: str = Field(default="en", description="Card: comma-separated language codes")
    card_task_categories: str = Field(default="text-generation", description="Card: comma-separated task categories")
    card_framework: str = Field(default="", description="Card: the training framework, e.g. SkyRL")
    card_task_source: str = Field(default="", description="Card: where the tasks came from")
    card_model: str = Field(default="", description="Card: the trained model's id, e.g. Qwen/Qwen3-30B-A3B")
    card_intro: str = Field(default="", description="Card: free prose placed first under the title")
    card_plots: bool = Field(default=True, description="Card: reward and turn histograms as SVG images")

    # A bad scan pattern or allowlist entry is refused when the config is built, not in the scan
    # step; an EnvVar (a str naming the variable) is checked once Dagster has read it.
    @field_validator("secret_patterns", mode="before")
    @classmethod
    def _patterns_compile(cls, spec: Any) -> Any:
        if isinstance(spec, str) and not isinstance(spec, dg.EnvVar):
            scan_options(spec, "")
        return spec

    @field_validator("secret_allowlist", mode="before")
    @classmethod
    def _allowlist_holds_fingerprints(cls, spec: Any) -> Any:
        if isinstance(spec, str) and not isinstance(spec, dg.EnvVar):
            scan_options("", spec)
        return spec

    @model_validator(mode="after")
    def _scrub_values_compile(self) -> TraceAssetsConfig:
        self.privacy_options()  # a short literal or a bad regex is refused at start
        return self

    @model_validator(mode="after")
    def _roots_are_sane(self) -> TraceAssetsConfig:
        refuse_overlapping_roots(
            {"traces_root": self.traces_root, "staging_root": self.staging_root, "publish_root": self.publish_root}
        )
        return self

    @model_validator(mode="after")
    def _event_queue_needs_s3_root(self) -> TraceAssetsConfig:
        if self.event_queue_url:
            bucket_and_prefix(self.traces_root)  # S3 events name a bucket: refuse a local root now
        return self

    def sweep_name(self) -> str:
        """The run tag's value: `sweep`, else derived from the traces root."""
        return self.sweep or sweep_label(self.traces_root)

    def export_options(self) -> ExportOptions:
        return ExportOptions(**{name: getattr(self, name) for name in EXPORT_FIELDS})

    def card_settings(self) -> CardSettings:
        def words(text: str) -> tuple[str, ...]:
            return tuple(word.strip() for word in text.split(",") if word.strip())

        return CardSettings(
            license=self.card_license,
            pretty_name=self.card_pretty_name,
            language=words(self.card_language),
            task_categories=words(self.card_task_categories),
            framework=self.card_framework,
            task_source=self.card_task_source,
            model=self.card_model,
            intro=self.card_intro,
        )

    def scan_options(self) -> ScanOptions:
        return scan_options(self.secret_patterns, self.secret_allowlist, self.secret_wrap_width, self.privacy_options())

    def privacy_options(self) -> PrivacyOptions:
        """The operator's values: the traces root's bucket and prefix, this machine's host and user
        name, and the configured literals and regexes."""
        root = urlsplit(self.traces_root)
        bucket, prefix = (root.netloc, root.path) if root.scheme and root.netloc else (None, "")
        extra = [value for value in self.scrub_literals.split(",") if value.strip()]
        literals = operator_literals(bucket, prefix, socket.gethostname(), getpass.getuser(), extra)
        return PrivacyOptions(literals, tuple(p for p in self.scrub_patterns.split(";") if p.strip()))

    def scan_policy(self) -> ScanPolicy:
        return ScanPolicy(self.on_secret, self.on_unverified, self.on_private)

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

    def run_scopes(self, storage: ObjectStorage, run_id: str) -> list[RunScope]:
        """The run's scopes under `scope_unit`: its step folders, or the run as one."""
        return self.store(storage).scopes(run_id, ScopeUnit(self.scope_unit))

    def sessions_folder(self, staging: RunStaging) -> Path | None:
        return staged_sessions(staging) if self.sessions else None

    def session_writer(self, staging: RunStaging) -> SessionWriter | None:
        return SessionWriter(staged_sessions(staging), self.session_harness) if self.sessions else None

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
            raise ConfigError(f"TRACE_ASSETS_HUB_REPO_ID={hub.repo_id_template!r}: {why}") from None


class ConfigError(ValueError):
    """A configuration value that is refused: the message names the option, the value and what is allowed."""


# Where each field is set from outside, for error messages: environment variable (and CLI option).
CONFIG_SOURCES = {
    "traces_root": "TRACE_ASSETS_TRACES_ROOT (--traces-root)",
    "publish_root": "TRACE_ASSETS_PUBLISH_ROOT (--publish-root)",
    "staging_root": "TRACE_ASSETS_STAGING_ROOT",
    "staging_lease_seconds": "TRACE_ASSETS_STAGING_LEASE_SECONDS",
    "episodes": "TRACE_ASSETS_EPISODES (--episodes)",
    "sharegpt": "TRACE_ASSETS_SHAREGPT (--sharegpt)",
    "success_filter": "TRACE_ASSETS_FILTER (--filter)",
    "instruction_metadata": "TRACE_ASSETS_INSTRUCTION_METADATA (--no-instruction-metadata)",
    "verifier_metadata": "TRACE_ASSETS_VERIFIER_METADATA (--no-verifier-metadata)",
    "subagents": "TRACE_ASSETS_SUBAGENTS (--subagents)",
    "on_unverified": "TRACE_ASSETS_ON_UNVERIFIED (--on-unverified)",
    "raw_scan": "TRACE_ASSETS_RAW_SCAN (--raw-scan)",
    "secret_wrap_width": "TRACE_ASSETS_SECRET_WRAP_WIDTH",
    "sessions": "TRACE_ASSETS_SESSIONS",
    "batch_size": "TRACE_ASSETS_BATCH_SIZE",
    "batch_bytes": "TRACE_ASSETS_BATCH_BYTES",
    "fetch_ahead": "TRACE_ASSETS_FETCH_AHEAD",
    "publish_concurrency": "TRACE_ASSETS_PUBLISH_CONCURRENCY",
    "max_rows_per_shard": "TRACE_ASSETS_MAX_ROWS_PER_SHARD",
    "min_export_ratio": "TRACE_ASSETS_MIN_EXPORT_RATIO",
    "on_secret": "TRACE_ASSETS_ON_SECRET (--on-secret)",
    "secret_patterns": "TRACE_ASSETS_SECRET_PATTERNS",
    "secret_allowlist": "TRACE_ASSETS_SECRET_ALLOWLIST",
    "on_private": "TRACE_ASSETS_ON_PRIVATE (--on-private)",
    "scrub_literals": "TRACE_ASSETS_SCRUB_LITERALS (--scrub-literal)",
    "scrub_patterns": "TRACE_ASSETS_SCRUB_PATTERNS",
    "settle_seconds": "TRACE_ASSETS_SETTLE_SECONDS",
    "event_queue_url": "TRACE_ASSETS_EVENT_QUEUE_URL",
    "sweep": "TRACE_ASSETS_SWEEP",
    "scope_unit": "TRACE_ASSETS_SCOPE (--scope)",
    "allow_shrink": "TRACE_ASSETS_ALLOW_SHRINK (--allow-shrink)",
    "shrink_threshold": "TRACE_ASSETS_SHRINK_THRESHOLD",
    "card_plots": "TRACE_ASSETS_CARD_PLOTS",
}
# The card's text settings, each from TRACE_ASSETS_<FIELD>, e.g. TRACE_ASSETS_CARD_LICENSE.
_CARD_TEXT: tuple[str, ...] = ("card_license", "card_pretty_name", "card_language", "card_task_categories")
_CARD_TEXT += ("card_framework", "card_task_source", "card_model", "card_intro")
CONFIG_SOURCES.update({name: f"TRACE_ASSETS_{name.upper()}" for name in _CARD_TEXT})
_INT_VARS = {
    "batch_size": "TRACE_ASSETS_BATCH_SIZE",
    "max_rows_per_shard": "TRACE_ASSETS_MAX_ROWS_PER_SHARD",
    "secret_wrap_width": "TRACE_ASSETS_SECRET_WRAP_WIDTH",
    "batch_bytes": "TRACE_ASSETS_BATCH_BYTES",
    "fetch_ahead": "TRACE_ASSETS_FETCH_AHEAD",
    "publish_concurrency": "TRACE_ASSETS_PUBLISH_CONCURRENCY",
}
_FLOAT_VARS = {
    "min_export_ratio": "TRACE_ASSETS_MIN_EXPORT_RATIO",
    "settle_seconds": "TRACE_ASSETS_SETTLE_SECONDS",
    "shrink_threshold": "TRACE_ASSETS_SHRINK_THRESHOLD",
    "staging_lease_seconds": "TRACE_ASSETS_STAGING_LEASE_SECONDS",
}
_FLAG_WORDS = {"1": True, "true": True, "yes": True, "on": True, "0": False, "false": False, "no": False, "off": False}


def parse_flag(name: str, value: str | None) -> bool:
    """An on/off environment variable; anything but the usual words is an error, never a silent off."""
    word = (value or "").strip().lower()
    if not word:
        return False
    if word not in _FLAG_WORDS:
        raise ConfigError(f"{name}={value!r}: must be one of {', '.join(_FLAG_WORDS)}")
    return _FLAG_WORDS[word]


def _number(name: str, value: str, kind: type[int] | type[float]) -> int | float:
    try:
        return kind(value)
    except ValueError:
        raise ConfigError(f"{name}={value!r}: must be a {'whole ' if kind is int else ''}number") from None


SENSOR_INTERVAL_VARIABLE = "TRACE_ASSETS_SENSOR_INTERVAL_SECONDS"


def sensor_interval(env: Mapping[str, str] = os.environ) -> int:
    """Seconds between the sensor's ticks, fixed when the definitions load (Dagster takes whole seconds)."""
    value = env.get(SENSOR_INTERVAL_VARIABLE) or "60"
    seconds = int(value) if value.strip().isdigit() else 0
    if seconds <= 0:
        raise ConfigError(f"{SENSOR_INTERVAL_VARIABLE}={value!r}: must be a positive number of whole seconds, e.g. 60")
    return seconds


def config_from_env(env: Mapping[str, str] = os.environ, **overrides: Any) -> TraceAssetsConfig:
    """The config for `dagster dev` and the CLI: environment variables, then explicit overrides.

    Raises `ConfigError` naming the variable (or option), the value and what is allowed.
    """
    sensor_interval(env)  # not a field (the sensor's decorator takes it), but refused at start all the same
    home = Path(env.get("DAGSTER_HOME") or PROJECT_DIR / ".dagster_home")
    values: dict[str, Any] = {
        "traces_root": env.get("TRACE_ASSETS_TRACES_ROOT") or str(SAMPLE_TRACES),
        "publish_root": env.get("TRACE_ASSETS_PUBLISH_ROOT") or str(PROJECT_DIR / "published"),
        "staging_root": env.get("TRACE_ASSETS_STAGING_ROOT") or str(home / "trace_assets_staging"),
        "allow_shrink": parse_flag("TRACE_ASSETS_ALLOW_SHRINK", env.get("TRACE_ASSETS_ALLOW_SHRINK")),
        "on_secret": env.get("TRACE_ASSETS_ON_SECRET") or "block",
        "secret_patterns": env.get("TRACE_ASSETS_SECRET_PATTERNS", ""),
        "secret_allowlist": env.get("TRACE_ASSETS_SECRET_ALLOWLIST", ""),
        "on_unverified": env.get("TRACE_ASSETS_ON_UNVERIFIED") or "redact",
        "on_private": env.get("TRACE_ASSETS_ON_PRIVATE") or "keep",
        "scrub_literals": env.get("TRACE_ASSETS_SCRUB_LITERALS", ""),
        "scrub_patterns": env.get("TRACE_ASSETS_SCRUB_PATTERNS", ""),
        "raw_scan": parse_flag("TRACE_ASSETS_RAW_SCAN", env.get("TRACE_ASSETS_RAW_SCAN")),
        "sessions": parse_flag("TRACE_ASSETS_SESSIONS", env.get("TRACE_ASSETS_SESSIONS") or "on"),
        "session_harness": env.get("TRACE_ASSETS_SESSION_HARNESS", ""),
        "card_plots": parse_flag("TRACE_ASSETS_CARD_PLOTS", env.get("TRACE_ASSETS_CARD_PLOTS") or "on"),
        **{name: env[CONFIG_SOURCES[name]] for name in _CARD_TEXT if env.get(CONFIG_SOURCES[name])},
        "scope_unit": env.get("TRACE_ASSETS_SCOPE") or ScopeUnit.STEP.value,
        "event_queue_url": env.get("TRACE_ASSETS_EVENT_QUEUE_URL", ""),
        "sweep": env.get("TRACE_ASSETS_SWEEP", ""),
    }
    for field_name, variable in _INT_VARS.items():
        if env.get(variable):
            values[field_name] = _number(variable, env[variable], int)
    for field_name, variable in _FLOAT_VARS.items():
        if env.get(variable):
            values[field_name] = _number(variable, env[variable], float)
    try:
        values.update(export_env(env))
    except ValueError as error:
        raise ConfigError(str(error)) from None
    values.update({k: v for k, v in overrides.items() if v is not None})
    parsers = (("on_secret", parse_on_secret), ("on_unverified", parse_on_unverified), ("on_private", parse_on_private))
    for name, parse in parsers:
        try:
            values[name] = parse(values[name])
        except ValueError as error:
            raise ConfigError(f"{CONFIG_SOURCES[name]}: {error}") from None
    try:
        return TraceAssetsConfig(**values)
    except ValidationError as error:
        raise ConfigError(_describe(error, values)) from None


def _describe(error: ValidationError, values: Mapping[str, Any]) -> str:
    """The first problem pydantic found, as `SOURCE=value: what is allowed`."""
    first = error.errors()[0]
    field_name = str(first["loc"][0]) if first["loc"] else ""
    message = first["msg"].removeprefix("Value error, ")
    if not field_name:
        return message
    return f"{CONFIG_SOURCES.get(field_name, field_name)}={values.get(field_name)!r}: {message}"


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
    return HuggingFaceHub(
        token=dg.EnvVar("HF_TOKEN") if env.get("HF_TOKEN") else None,
        endpoint=env.get("HF_ENDPOINT") or None,
        repo_id_template=env.get("TRACE_ASSETS_HUB_REPO_ID", ""),
        org=env.get("TRACE_ASSETS_HUB_ORG", ""),
        private=not parse_flag("TRACE_ASSETS_HUB_PUBLIC", env.get("TRACE_ASSETS_HUB_PUBLIC")),
        revision=env.get("TRACE_ASSETS_HUB_REVISION") or "main",
    )
