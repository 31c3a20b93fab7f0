"""Every setting, declared once: its type, default, bounds, meaning, environment variable and CLI flag.

pydantic-settings reads each setting from its variable (`load`); pydantic parses and bounds it. The
CLI's flags and their help (`cli/parser.py`), the Dagster resources (`defs/resources.py`, subclasses
of these models), the sensor's interval and the table in docs/configuration.md (`settings_table`,
checked by `unit/test_settings.py`) all read the fields below; a new setting is one field here plus
its use. The domain's options are built from these settings in `orchestration/options.py`; a default
the domain's code falls back to without settings is `core/defaults.py`'s, taken from there.

Values are checked when the settings are built, before any work: a bad one raises `ConfigError`,
`NAME='value': what is allowed`. This module imports nothing heavy (the CLI's `--help` reads it).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import asdict, dataclass
from enum import StrEnum
from functools import cache
from pathlib import Path
from typing import Any, Literal, TypeVar, get_args, get_origin

import annotated_types
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    TypeAdapter,
    ValidationError,
    create_model,
    field_validator,
    model_validator,
)
from pydantic.fields import FieldInfo
from pydantic_settings import BaseSettings, EnvSettingsSource

from trace_assets.core.defaults import (
    DEFAULT_BATCH_BYTES,
    DEFAULT_FETCH_AHEAD,
    DEFAULT_LEASE_SECONDS,
    DEFAULT_PUBLISH_CONCURRENCY,
    DEFAULT_ROWS_PER_SHARD,
    DEFAULT_WRAP_WIDTH,
)
from trace_assets.core.roots import refuse_overlapping_roots
from trace_assets.core.run_tags import SWEEP_LABEL, sweep_label
from trace_assets.harbor.options import Episodes, Subagents, SuccessFilter
from trace_assets.secret_scan.policy import OnNearMiss, OnPrivate, OnSecret, OnUnverified
from trace_assets.store.bucket_url import BucketRoot
from trace_assets.store.queue_events import bucket_and_prefix

ScopeUnitName = Literal["step", "run"]  # a scope.ScopeUnit value: Dagster run config takes strings
BOOL_WORDS = "1/true/yes/on or 0/false/no/off"  # what pydantic reads as a boolean, in words


class ConfigError(ValueError):
    """A refused setting: the message names the variable or option, the value and what is allowed."""


class Group(StrEnum):
    """The sections of the settings, in the order the docs and `--help` show them."""

    ROOTS = "Roots and scopes"
    ROWS = "Harbor export (harbor traces export)"
    SESSIONS = "Session files"
    SECRETS = "Secret scan and privacy"
    GUARDS = "Publish guards"
    THROUGHPUT = "Throughput"
    CARD = "Dataset card"
    SENSOR = "Sensor"
    HUB = "Hugging Face Hub"
    WEBSERVER = "Backfill's webserver"


@dataclass(frozen=True)
class Meta:
    """What a field's declaration says beyond its type and bounds."""

    env: str  # the environment variable
    group: Group
    flag: str = ""  # the CLI option, if any (an option of `materialize` and `backfill`)
    default_text: str = ""  # the default in words, where the field's own default is not it
    metavar: str = ""
    bare_value: str = ""  # what the flag means given without a value (argparse's nargs="?")
    repeatable: bool = False  # the flag may be given more than once


def setting(default: Any = "", *, env: str, group: Group, description: str, **extra: Any) -> Any:
    """A field with its metadata; `extra` splits into `Meta`'s fields and pydantic's bounds. The
    metadata is kept as JSON in the field's schema extra (where pydantic keeps what it does not use)."""
    found = Meta(env, group, **{key: extra.pop(key) for key in list(extra) if key in Meta.__dataclass_fields__})
    return Field(default, description=description, json_schema_extra={"setting": asdict(found)}, **extra)


def is_setting(field: FieldInfo) -> bool:
    """Declared with `setting()` (a resource deriving from a model may add fields of its own)."""
    return isinstance(field.json_schema_extra, dict) and "setting" in field.json_schema_extra


def meta(field: FieldInfo) -> Meta:
    extra = field.json_schema_extra
    assert isinstance(extra, dict) and isinstance(extra["setting"], dict), "a setting is declared with setting()"
    found: dict[str, Any] = dict(extra["setting"])
    found["group"] = Group(found["group"])
    return Meta(**found)


def is_plain_str(value: Any) -> bool:
    """A value to check now: not a Dagster EnvVar (a str subclass naming a variable, read at launch)."""
    return type(value) is str


class PipelineSettings(BaseModel):
    """What a scope's export and publish depend on; the `trace_config` resource's fields."""

    model_config = ConfigDict(extra="forbid")

    # roots and scopes
    traces_root: str = setting(
        env="TRACE_ASSETS_TRACES_ROOT",
        group=Group.ROOTS,
        flag="--traces-root",
        metavar="URL",
        default_text="none, required",
        description="folder, fsspec URL (`s3://bucket/prefix`) or Hub Storage Bucket "
        "(`hf://buckets/<namespace>/<bucket>[/<prefix>]`) holding one folder per run, `<run_id>/trace_jobs/`",
    )
    publish_root: str = setting(
        env="TRACE_ASSETS_PUBLISH_ROOT",
        group=Group.ROOTS,
        flag="--publish-root",
        metavar="URL",
        default_text="none, required",
        description="folder, fsspec URL, or `hf://datasets/<org>/<name>[@revision][/path]` to publish under",
    )
    staging_root: str = setting(
        env="TRACE_ASSETS_STAGING_ROOT",
        group=Group.ROOTS,
        default_text="`$DAGSTER_HOME/trace_assets_staging`",
        description="intermediate files and the row cache; a folder, or a URL (`s3://bucket/staging`: each step "
        "works on a scratch folder under `$TMPDIR`, synced at its start and end)",
    )
    staging_lease_seconds: float = setting(
        DEFAULT_LEASE_SECONDS,
        gt=0,
        env="TRACE_ASSETS_STAGING_LEASE_SECONDS",
        group=Group.ROOTS,
        description="staging URL only: how long a dead holder's lease on a scope blocks it",
    )
    scope_unit: ScopeUnitName = setting(
        "step",
        env="TRACE_ASSETS_SCOPE",
        group=Group.ROOTS,
        flag="--scope",
        description="a dataset per step folder (for runs whose `trace_jobs/` holds only `step-N/` folders), "
        "or one per run",
    )
    # Harbor's row options
    episodes: Episodes = setting(
        "last",
        env="TRACE_ASSETS_EPISODES",
        group=Group.ROWS,
        flag="--episodes",
        description="the last episode of each trial, or a row per episode (Harbor's `--episodes`)",
    )
    sharegpt: bool = setting(
        False,
        env="TRACE_ASSETS_SHAREGPT",
        group=Group.ROWS,
        flag="--sharegpt",
        description="add Harbor's `conversations_sharegpt` column (`human`/`gpt` turns)",
    )
    success_filter: SuccessFilter = setting(
        "all",
        env="TRACE_ASSETS_FILTER",
        group=Group.ROWS,
        flag="--filter",
        description="only trials with a reward above 0 (success), or only the others (failure); the rest are "
        "excluded as `filtered_out`",
    )
    instruction_metadata: bool = setting(
        True,
        env="TRACE_ASSETS_INSTRUCTION_METADATA",
        group=Group.ROWS,
        flag="--no-instruction-metadata",
        description="the `instruction` column (the flag leaves it out)",
    )
    verifier_metadata: bool = setting(
        True,
        env="TRACE_ASSETS_VERIFIER_METADATA",
        group=Group.ROWS,
        flag="--no-verifier-metadata",
        description="the `verifier_output` column (the flag leaves it out)",
    )
    subagents: Subagents = setting(
        "none",
        env="TRACE_ASSETS_SUBAGENTS",
        group=Group.ROWS,
        flag="--subagents",
        bare_value="merged",
        description="subagent rows: none; merged, with a `trace_source` column (the bare flag, or a true flag "
        "value); or a config per subagent kind",
    )
    # session files
    sessions: bool = setting(
        True,
        env="TRACE_ASSETS_SESSIONS",
        group=Group.SESSIONS,
        description="also publish each exported trial's whole trajectory as session files",
    )
    session_harness: str = setting(
        env="TRACE_ASSETS_SESSION_HARNESS",
        group=Group.SESSIONS,
        default_text="the trial's agent",
        description="the session files' `harness` id",
    )
    # secret scan and privacy
    on_secret: OnSecret = setting(
        "block",
        env="TRACE_ASSETS_ON_SECRET",
        group=Group.SECRETS,
        flag="--on-secret",
        description="live credentials (a credential's exact format) in the published text: block publishing "
        "(only the scan report is published), get redacted, or pass",
    )
    on_unverified: OnUnverified = setting(
        "redact",
        env="TRACE_ASSETS_ON_UNVERIFIED",
        group=Group.SECRETS,
        flag="--on-unverified",
        description="the same for credentials of the right rough shape but not verifiable",
    )
    on_near_miss: OnNearMiss = setting(
        "redact",
        env="TRACE_ASSETS_ON_NEAR_MISS",
        group=Group.SECRETS,
        flag="--on-near-miss",
        description="a vendor's prefix on a generated-looking body that fails its exact format (checksum, length, "
        "marker): judged unverified (so --on-unverified applies), or kept and reported as a near miss",
    )
    on_private: OnPrivate = setting(
        "keep",
        env="TRACE_ASSETS_ON_PRIVATE",
        group=Group.SECRETS,
        flag="--on-private",
        description="private values (e-mails, private IPs, internal hosts and URLs, home paths): reported only, "
        "replaced by stable tokens (`[EMAIL-1]`), or block publishing; operator values are replaced whatever "
        "this says",
    )
    secret_patterns: str = setting(
        env="TRACE_ASSETS_SECRET_PATTERNS",
        group=Group.SECRETS,
        description="extra scan patterns, `name=regex;name2=regex2`, in Rust regex syntax (the scan's engine: no "
        "lookaround; `\\w`, `\\d`, `\\s` and `\\b` are ASCII); a bad one is refused at start, naming the pattern",
    )
    secret_allowlist: str = setting(
        env="TRACE_ASSETS_SECRET_ALLOWLIST",
        group=Group.SECRETS,
        description="comma-separated fingerprints of known placeholders: 16 to 64 hex digits, the start of the "
        "secret's sha256 as `secret_scan.json` names it; anything else is refused at start",
    )
    secret_wrap_width: int = setting(
        DEFAULT_WRAP_WIDTH,
        gt=0,
        env="TRACE_ASSETS_SECRET_WRAP_WIDTH",
        group=Group.SECRETS,
        description="the terminal width whose hard wraps the scan joins",
    )
    scrub_literals: str = setting(
        env="TRACE_ASSETS_SCRUB_LITERALS",
        group=Group.SECRETS,
        flag="--scrub-literal",
        metavar="VALUE",
        repeatable=True,
        description="comma-separated values of the collection environment, always replaced (at least 3 "
        "characters each), beside the traces root's bucket and prefix and this machine's host and user name; "
        "the flag is repeatable and adds to the variable's",
    )
    scrub_patterns: str = setting(
        env="TRACE_ASSETS_SCRUB_PATTERNS",
        group=Group.SECRETS,
        description="`;`-separated regexes of operator values, always replaced",
    )
    raw_scan: bool = setting(
        False,
        env="TRACE_ASSETS_RAW_SCAN",
        group=Group.SECRETS,
        flag="--raw-scan",
        description="also scan every object under the scope's prefix (episode prompts included), as the "
        "`raw_tree_secrets` check (warns, never blocks)",
    )
    # publish guards
    allow_shrink: bool = setting(
        False,
        env="TRACE_ASSETS_ALLOW_SHRINK",
        group=Group.GUARDS,
        flag="--allow-shrink",
        description="publish even a version with 0 rows, or one smaller than the published one past the threshold",
    )
    shrink_threshold: float = setting(
        0.1,
        ge=0,
        le=1,
        env="TRACE_ASSETS_SHRINK_THRESHOLD",
        group=Group.GUARDS,
        description="how much smaller (trial folders or rows) a new version may be than the published one",
    )
    min_export_ratio: float = setting(
        0.9,
        ge=0,
        le=1,
        env="TRACE_ASSETS_MIN_EXPORT_RATIO",
        group=Group.GUARDS,
        description="exported / scored below this makes the `export_ratio_above_threshold` check warn",
    )
    # throughput
    max_rows_per_shard: int = setting(
        DEFAULT_ROWS_PER_SHARD,
        gt=0,
        env="TRACE_ASSETS_MAX_ROWS_PER_SHARD",
        group=Group.THROUGHPUT,
        description="rows per published Parquet shard",
    )
    batch_size: int = setting(
        256,
        gt=0,
        env="TRACE_ASSETS_BATCH_SIZE",
        group=Group.THROUGHPUT,
        description="trials fetched and parsed per batch",
    )
    batch_bytes: int = setting(
        DEFAULT_BATCH_BYTES,
        gt=0,
        env="TRACE_ASSETS_BATCH_BYTES",
        group=Group.THROUGHPUT,
        description="listed bytes of trial files held at once over all batches in flight (a larger trial is a "
        "batch alone)",
    )
    fetch_ahead: int = setting(
        DEFAULT_FETCH_AHEAD,
        ge=0,
        env="TRACE_ASSETS_FETCH_AHEAD",
        group=Group.THROUGHPUT,
        description="batches fetched while one is parsed (0: in turn); each gets `batch_bytes / (fetch_ahead + 1)`",
    )
    max_concurrency: int = setting(
        64,
        gt=0,
        env="TRACE_ASSETS_MAX_CONCURRENCY",
        group=Group.THROUGHPUT,
        description="object reads in flight at once",
    )
    publish_concurrency: int = setting(
        DEFAULT_PUBLISH_CONCURRENCY,
        gt=0,
        env="TRACE_ASSETS_PUBLISH_CONCURRENCY",
        group=Group.THROUGHPUT,
        description="uploads in flight at once while publishing to object storage (`s3://`): the shards and "
        "session files, then the other files; the cards go one at a time after them",
    )
    # the dataset card
    card_license: str = setting(
        "unknown",
        env="TRACE_ASSETS_CARD_LICENSE",
        group=Group.CARD,
        flag="--card-license",
        metavar="ID",
        description="the Hub license id of the traces",
    )
    card_pretty_name: str = setting(
        env="TRACE_ASSETS_CARD_PRETTY_NAME",
        group=Group.CARD,
        flag="--card-pretty-name",
        metavar="TITLE",
        default_text="`<run> step <N> traces of <model>`",
        description="the card's title; by default the step when the scope has one, the trained model "
        "(`--card-model`), else the one served model; a shared root's card: `Harbor traces of <model>`",
    )
    card_language: str = setting(
        "en", env="TRACE_ASSETS_CARD_LANGUAGE", group=Group.CARD, description="the card's languages, comma-separated"
    )
    card_task_categories: str = setting(
        "text-generation",
        env="TRACE_ASSETS_CARD_TASK_CATEGORIES",
        group=Group.CARD,
        description="the card's task categories, comma-separated",
    )
    card_framework: str = setting(
        env="TRACE_ASSETS_CARD_FRAMEWORK",
        group=Group.CARD,
        flag="--card-framework",
        metavar="NAME",
        description="provenance: the training framework, e.g. SkyRL",
    )
    card_task_source: str = setting(
        env="TRACE_ASSETS_CARD_TASK_SOURCE",
        group=Group.CARD,
        flag="--card-task-source",
        metavar="TEXT",
        description="provenance: where the tasks came from",
    )
    card_model: str = setting(
        env="TRACE_ASSETS_CARD_MODEL",
        group=Group.CARD,
        flag="--card-model",
        metavar="ID",
        description="provenance: the trained model's id, e.g. `Qwen/Qwen3-30B-A3B`",
    )
    card_intro: str = setting(
        env="TRACE_ASSETS_CARD_INTRO", group=Group.CARD, description="free prose placed first under the card's title"
    )
    card_plots: bool = setting(
        True,
        env="TRACE_ASSETS_CARD_PLOTS",
        group=Group.CARD,
        description="the card's reward and turn histograms (`plots/*.svg`)",
    )
    # the sensor
    settle_seconds: float = setting(
        600.0,
        ge=0,
        env="TRACE_ASSETS_SETTLE_SECONDS",
        group=Group.SENSOR,
        description="how long a scope's listing must stay unchanged before its export",
    )
    event_queue_url: str = setting(
        env="TRACE_ASSETS_EVENT_QUEUE_URL",
        group=Group.SENSOR,
        description="an SQS queue receiving the traces bucket's S3 event notifications (needs an `s3://` traces "
        "root); ticks then list only the scopes touched",
    )
    sweep: str = setting(
        env="TRACE_ASSETS_SWEEP",
        group=Group.SENSOR,
        pattern=SWEEP_LABEL,
        default_text="the traces root's last path segment",
        description="the `trace_assets/sweep` tag on the sensor's, CLI's and backfills' runs (a Kubernetes label "
        "value)",
    )

    @field_validator("subagents", mode="before")
    @classmethod
    def _a_flag_word_means_merged(cls, value: Any) -> Any:
        """A true or false word (`1`, `off`) means merged or none, as before the choice existed."""
        if isinstance(value, str) and value not in get_args(Subagents):
            try:
                return "merged" if TypeAdapter(bool).validate_python(value) else "none"
            except ValidationError:
                pass
        return value

    @field_validator("traces_root")
    @classmethod
    def _hub_traces_root_is_a_bucket(cls, value: str) -> str:
        if is_plain_str(value) and value.startswith("hf://"):
            BucketRoot.parse(value)  # a Hub repo is a publish root, never a traces root
        return value

    @model_validator(mode="after")
    def _roots_are_sane(self) -> PipelineSettings:
        names = ("traces_root", "staging_root", "publish_root")
        roots = {name: getattr(self, name) for name in names}
        refuse_overlapping_roots({name: root for name, root in roots.items() if root and is_plain_str(root)})
        return self

    @model_validator(mode="after")
    def _event_queue_needs_s3_root(self) -> PipelineSettings:
        if self.event_queue_url and is_plain_str(self.traces_root):
            bucket_and_prefix(self.traces_root)  # S3 events name a bucket: refuse a local root now
        return self

    def require(self, *names: str) -> None:
        """ConfigError for the first of `names` left unset (or left to a variable read at launch):
        the roots have no defaults."""
        for name in names:
            value = getattr(self, name)
            if not value or not is_plain_str(value):
                raise ConfigError(unset_message(type(self), name))

    def sweep_name(self) -> str:
        """The run tag's value: `sweep`, else derived from the traces root."""
        return self.sweep or sweep_label(self.traces_root)


class HubRepoSettings(BaseModel):
    """Where on the Hub a scope goes; the token and endpoint are huggingface_hub's own variables."""

    model_config = ConfigDict(extra="forbid")

    repo_id_template: str = setting(
        env="TRACE_ASSETS_HUB_REPO_ID",
        group=Group.HUB,
        description="one repo per scope (the Hub's other layout: an `hf://` publish root is one repo per sweep), "
        "named from this template: `{org}` (the Hub org setting, as given), `{run}` (the run id), `{step}` (25 for "
        "`step-25`), `{run_id}` (the scope's key, `/` as `-`), `{date}` (the run id's date stamp, e.g. "
        "`20260730_053956`), `{model}` (`--card-model` after its owner: `Qwen3-30B-A3B`), `{framework}`, "
        "`{task_source}`, `{license}`, `{pretty_name}` (the card settings); each value but `{org}` made a valid "
        "name part (other characters as `-`), a name past 96 characters cut with 8 hex characters of its sha256. "
        "Refused at start (the CLI, `dagster dev`, `dg check defs`): an unknown placeholder, one whose setting is "
        "empty, no `{run}`/`{run_id}`/`{date}`, no `{step}`/`{run_id}` under step scopes, or an id the Hub "
        "refuses (1-96 characters of `A-Za-z0-9._-` a part, no leading or trailing `-` or `.`, no `--` or `..`, "
        "no `.git` ending). A scope with no step folder (or date stamp) for `{step}` (`{date}`) fails its "
        "pre-flight saying so. E.g. `{org}/terminal_bench_2_tasktrove_dq_stack_pytest_step{step}_30b_a3b_{date}`",
    )
    org: str = setting(env="TRACE_ASSETS_HUB_ORG", group=Group.HUB, description="fills `{org}` in the repo id template")
    public: bool = setting(
        False,
        env="TRACE_ASSETS_HUB_PUBLIC",
        group=Group.HUB,
        description="create Hub repos public (an existing public repo needs it too)",
    )
    revision: str = setting(
        "main", env="TRACE_ASSETS_HUB_REVISION", group=Group.HUB, description="the Hub branch to commit to"
    )


DEFAULT_STAGING = "trace_assets_staging"  # the staging root's folder under the Dagster home, by default


def dagster_home(env: Mapping[str, str]) -> Path:
    """The Dagster instance's folder: `DAGSTER_HOME`, else `.dagster_home` in the working directory
    (where `make` puts it), never a folder inside the installed package."""
    return Path(env.get("DAGSTER_HOME") or ".dagster_home").absolute()


class ProcessSettings(BaseModel):
    """Read once per process, not per run: the sensor's tick interval (its decorator takes it when the
    definitions load) and the webserver `backfill` talks to."""

    model_config = ConfigDict(extra="forbid")

    sensor_interval_seconds: int = setting(
        60,
        gt=0,
        env="TRACE_ASSETS_SENSOR_INTERVAL_SECONDS",
        group=Group.SENSOR,
        description="seconds between the sensor's ticks",
    )
    dagster_url: str = setting(
        env="TRACE_ASSETS_DAGSTER_URL",
        group=Group.WEBSERVER,
        flag="--webserver",
        metavar="URL",
        default_text="start a private one on 127.0.0.1",
        description="a running Dagster webserver, for `backfill`'s GraphQL calls",
    )
    dagster_headers: str = setting(
        env="TRACE_ASSETS_DAGSTER_HEADERS",
        group=Group.WEBSERVER,
        flag="--webserver-header",
        metavar="NAME=VALUE",
        repeatable=True,
        description="extra HTTP headers on every GraphQL call of `backfill`, `Name=value;Name2=value2`, for a "
        "webserver behind authentication (a 401 or 403 names this setting); the flag is repeatable and wins "
        "over the variable's header of that name",
    )


MODELS: tuple[type[BaseModel], ...] = (PipelineSettings, HubRepoSettings, ProcessSettings)
Model = TypeVar("Model", bound=BaseModel)


def declared() -> Iterator[tuple[type[BaseModel], str, FieldInfo]]:
    """Every setting, as (model, field name, field)."""
    for model in MODELS:
        for name, field in model.model_fields.items():
            yield model, name, field


def env_name(model: type[BaseModel], name: str) -> str:
    return meta(model.model_fields[name]).env


def flag_of(model: type[BaseModel], name: str) -> str:
    return meta(model.model_fields[name]).flag


def variables() -> dict[str, str]:
    """Each setting's variable by its field name (the names domain messages are given to show)."""
    return {name: meta(field).env for _, name, field in declared()}


def unset_message(model: type[BaseModel], name: str) -> str:
    field = model.model_fields[name]
    found = meta(field)
    option = f" (nor {found.flag})" if found.flag else ""
    return f"{found.env}{option} is not set, and has no default: set it to a {plain(field.description or '')}"


def plain(text: str) -> str:
    """A description without its Markdown code marks, for `--help` and messages."""
    return text.replace("`", "")


# --------------------------------------------------------------------------- what each type takes, in words


def choices(field: FieldInfo) -> tuple[str, ...]:
    """A closed choice's values (Literal or Enum); () for an open type."""
    annotation = field.annotation
    if get_origin(annotation) is Literal:
        return tuple(str(value) for value in get_args(annotation))
    if isinstance(annotation, type) and issubclass(annotation, StrEnum):
        return tuple(member.value for member in annotation)
    return ()


def _bounds(field: FieldInfo) -> dict[str, float]:
    found: dict[str, float] = {}
    for item in field.metadata:
        for key in ("gt", "ge", "lt", "le"):
            value = getattr(item, key, None)
            if isinstance(item, annotated_types.BaseMetadata) and value is not None:
                found[key] = value
    return found


def allowed(field: FieldInfo) -> str:
    """What a field takes, in words (the errors and the docs' `allowed` column say the same)."""
    if field.annotation is bool:
        return BOOL_WORDS
    if options := choices(field):
        return "one of " + ", ".join(options)
    if field.annotation in (int, float):
        noun = "a whole number" if field.annotation is int else "a number"
        bounds = _bounds(field)
        if "ge" in bounds and "le" in bounds:
            return f"{noun} from {bounds['ge']:g} to {bounds['le']:g}"
        if "gt" in bounds:
            return f"{noun} above {bounds['gt']:g}"
        if "ge" in bounds:
            return f"{noun}, {bounds['ge']:g} or more"
        return noun
    return "text"


# --------------------------------------------------------------------------- the environment loader


class _Variables(EnvSettingsSource):
    """pydantic-settings' environment source over a given mapping (`os.environ`, or a test's); a
    variable holding only blanks is unset."""

    def __init__(self, settings_cls: type[BaseSettings], env: Mapping[str, str]) -> None:
        super().__init__(settings_cls, case_sensitive=True, env_ignore_empty=True)
        self.env_vars = {name: value for name, value in env.items() if value.strip()}


@cache
def _environment(model: type[BaseModel]) -> type[BaseSettings]:
    """`model`'s settings as pydantic-settings reads them: each under its declared variable, as the
    text set (`model` parses and bounds it, with its own checks)."""
    fields: dict[str, Any] = {
        name: (str, Field("", validation_alias=meta(field).env))
        for name, field in model.model_fields.items()
        if is_setting(field)
    }
    return create_model(f"{model.__name__}Variables", __base__=BaseSettings, **fields)


# pydantic's errors for a value of the wrong type or out of bounds: the message says what is allowed
_NOT_ALLOWED = {
    "bool_parsing",
    "bool_type",
    "int_parsing",
    "int_from_float",
    "int_type",
    "float_parsing",
    "float_type",
    "finite_number",
    "greater_than",
    "greater_than_equal",
    "less_than",
    "less_than_equal",
    "literal_error",
    "enum",
}


def load(
    model: type[Model],
    env: Mapping[str, str],
    options: Mapping[str, Any] | None = None,
    defaults: Mapping[str, Any] | None = None,
) -> Model:
    """`model` from `defaults`, then its variables in `env` (an empty one is unset), then `options`
    (the CLI's, None for not given). Raises ConfigError naming the variable or option."""
    values: dict[str, Any] = dict(defaults or {})
    origin: dict[str, str] = {}
    read = _Variables(_environment(model), env)()
    for name, field in model.model_fields.items():
        variable = meta(field).env if is_setting(field) else ""
        if variable in read:  # a word or number as typed, spaces around it dropped; text as it is
            values[name] = read[variable] if field.annotation is str else read[variable].strip()
            origin[name] = variable
    for name, value in (options or {}).items():
        if value is not None:
            values[name] = value
            origin[name] = (is_setting(model.model_fields[name]) and flag_of(model, name)) or name
    try:
        return model(**values)
    except ValidationError as error:
        raise ConfigError(describe(model, error, values, origin)) from None
    except ValueError as error:  # a check outside pydantic's own (roots, queue) names its settings itself
        raise ConfigError(str(error)) from None


def variable_text(model: type[BaseModel], name: str, env: Mapping[str, str]) -> str | None:
    """One setting's variable in `env` as `load` reads it (one of only blanks is unset), neither parsed
    nor checked: for a command that takes this setting alone, or adds its option's values to it."""
    return _Variables(_environment(model), env)().get(env_name(model, name))


def describe(
    model: type[BaseModel], error: ValidationError, values: Mapping[str, Any], origin: Mapping[str, str]
) -> str:
    """The first problem pydantic found, as `SOURCE='value': what is allowed`."""
    first = error.errors()[0]
    name = str(first["loc"][0]) if first["loc"] else ""
    message = first["msg"].removeprefix("Value error, ")
    if not name:
        return message
    if first["type"] in _NOT_ALLOWED and name in model.model_fields and is_setting(model.model_fields[name]):
        message = f"must be {allowed(model.model_fields[name])}"
    return f"{origin.get(name, name)}={values.get(name)!r}: {message}"


# --------------------------------------------------------------------------- docs/configuration.md

TABLE_START = "<!-- settings table: generated by `python -m trace_assets.settings`; edit trace_assets/settings.py -->"
TABLE_END = "<!-- end of settings table -->"


def default_text(field: FieldInfo) -> str:
    found = meta(field)
    if found.default_text:
        return found.default_text
    if field.annotation is bool:
        return "on" if field.default else "off"
    if field.default == "":
        return "empty"
    return f"`{field.default:g}`" if isinstance(field.default, float) else f"`{field.default}`"


def settings_table() -> str:
    """The docs' table of every setting, a section per group."""
    lines = []
    rows = sorted(declared(), key=lambda row: list(Group).index(meta(row[2]).group))
    group = None
    for _model, _name, field in rows:
        found = meta(field)
        if found.group != group:
            group = found.group
            lines += ["", f"### {group.value}", ""]
            lines += ["| variable | CLI option | default | allowed | meaning |", "|---|---|---|---|---|"]
        option = f"`{found.flag}`" if found.flag else ""
        cells = [f"`{found.env}`", option, default_text(field), allowed(field), field.description or ""]
        lines.append("| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |")
    return "\n".join([TABLE_START, *lines, "", TABLE_END])


def with_table(document: str) -> str:
    """`document` with its generated table replaced by the declaration's."""
    before, start, rest = document.partition(TABLE_START)
    _, end, after = rest.partition(TABLE_END)
    if not (start and end):
        raise ValueError("the document has no generated settings table")
    return before + settings_table() + after


if __name__ == "__main__":  # rewrite docs/configuration.md's table
    docs = Path(__file__).resolve().parent.parent / "docs" / "configuration.md"
    docs.write_text(with_table(docs.read_text()))
