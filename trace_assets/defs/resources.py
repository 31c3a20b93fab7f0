"""Dagster resources: where traces are read from, where datasets go, and how the steps behave.

Configuration only: `trace_config` holds the pipeline's settings and the two resources it reaches
storage and the Hub through; what a run reads and writes through is built from them in
`orchestration.context`, so no step logic lives here.
"""

import os
from collections.abc import Mapping
from typing import Any, Self

import dagster as dg
from pydantic import Field, field_validator, model_validator

from trace_assets.defs.s3_config import ObjectStorage
from trace_assets.orchestration.context import RunParts
from trace_assets.orchestration.options import privacy_options
from trace_assets.publishing.targets import HubSettings
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
)
from trace_assets.steps.scan import scan_options as parsed_scan_options

__all__ = [
    "ConfigError",
    "HuggingFaceHub",
    "ObjectStorage",
    "TraceAssetsConfig",
    "config_from_env",
    "hub_from_env",
    "resources_of",
]
ROOTS = ("traces_root", "publish_root")


class HuggingFaceHub(dg.ConfigurableResource, HubRepoSettings):
    """Publishing to the Hub: for a publish root `hf://datasets/<org>/<name>`, or a repo per run.
    Where a scope's repo goes are `settings.HubRepoSettings`'s fields; the token and endpoint are
    huggingface_hub's own variables. The token comes from HF_TOKEN through Dagster's EnvVar and goes
    to huggingface_hub only."""

    token: str | None = Field(default=None, description="Hub token (set from the HF_TOKEN environment variable)")
    endpoint: str | None = Field(default=None, description="Hub URL; HF_ENDPOINT, else huggingface.co")

    def settings(self) -> HubSettings:
        """Its token read from HF_TOKEN where it is still the EnvVar (the CLI's: a run's is read at its start)."""
        token = self.token.get_value() if isinstance(self.token, dg.EnvVar) else self.token
        return HubSettings(token, self.endpoint, self.repo_id_template, self.org, not self.public, self.revision)


class TraceAssetsConfig(dg.ConfigurableResource, PipelineSettings):
    """Everything a run's materialization depends on, shown in the UI's resource page: the fields
    and their checks are `settings.PipelineSettings`'s, validated wherever the resource is built
    (environment, CLI, the UI's launchpad, a backfill's run config). A root left to its variable
    (`dg.EnvVar`, when the code location loads without it) is read when a run or tick starts.
    Object storage and the Hub are resources of their own that it holds (`resources_of`), so an
    asset, check or sensor takes this one resource alone."""

    object_storage: ObjectStorage
    hub: HuggingFaceHub

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
    def _scrub_values_compile(self) -> Self:
        privacy_options(self)  # a short literal or a bad regex is refused at start
        return self

    def parts(self) -> RunParts:
        """What runs read and write through, built from these settings (`orchestration.context`)."""
        return RunParts(self, self.object_storage, self.hub.settings())

    def setup_for_execution(self, context: dg.InitResourceContext) -> None:
        """A launchpad config without a root is refused before the run's first step."""
        self.require("traces_root", "publish_root", "staging_root")


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
    defaults: dict[str, Any] = {
        "staging_root": str(dagster_home(env) / DEFAULT_STAGING),
        "object_storage": ObjectStorage(),
        "hub": hub_from_env(env),
    }
    defaults |= {root: dg.EnvVar(env_name(PipelineSettings, root)) for root in ROOTS if root not in require}
    config = load(TraceAssetsConfig, env, options, defaults)
    config.require(*require)
    return config


def hub_from_env(env: Mapping[str, str] = os.environ) -> HuggingFaceHub:
    token = dg.EnvVar("HF_TOKEN") if env.get("HF_TOKEN") else None
    return load(HuggingFaceHub, env, defaults={"token": token, "endpoint": env.get("HF_ENDPOINT") or None})


def resources_of(trace_config: TraceAssetsConfig) -> dict[str, Any]:
    """The code location's resources: `trace_config`, and the two it holds under their own keys
    `object_storage` and `hub` too, as before. It holds them as configured at launch, so a run's
    config for those keys (the launchpad's) is what `trace_config` reaches storage and the Hub with.
    (This module has no `from __future__ import annotations`: Dagster reads those two fields' types
    to let them be configured at launch.)"""
    storage = ObjectStorage.configure_at_launch(**_fields(trace_config.object_storage))
    hub = HuggingFaceHub.configure_at_launch(**_fields(trace_config.hub))
    settings = {name: getattr(trace_config, name) for name in PipelineSettings.model_fields}
    return {
        "trace_config": TraceAssetsConfig(**settings, object_storage=storage, hub=hub),
        "object_storage": storage,
        "hub": hub,
    }


def _fields(resource: dg.ConfigurableResource) -> dict[str, Any]:
    return {name: getattr(resource, name) for name in type(resource).model_fields}
