"""The Hub's names: repo ids (validated before any network call), a scope's repo id from the
repo id template (the Hub's `repo_id_template` setting, checked at start-up, see `check_repo_id_template`),
`hf://datasets/<org>/<name>[@revision][/path]` publish roots, and paths inside a repo."""

from __future__ import annotations

import hashlib
import re
import string
from collections.abc import Mapping
from typing import NamedTuple
from urllib.parse import unquote

from trace_assets.core.scope import RunScope

DEFAULT_REVISION = "main"
PUBLISH_ROOT_PREFIX = "hf://datasets/"

_CHARS_NOT_ALLOWED_IN_REPO_NAMES = re.compile(r"[^A-Za-z0-9._-]+")
_REPEATED_SEPARATORS = re.compile(r"-{2,}|\.{2,}")


class PublishRoot(NamedTuple):
    """A parsed `hf://datasets/<org>/<name>[@revision][/path]` URL."""

    repo_id: str
    revision: str
    path_in_repo: str


def validate_repo_id(repo_id: str, source: str = "") -> str:
    """Return `repo_id` unchanged if the Hub accepts it as `namespace/name`, else raise ValueError
    naming `source` (the setting it came from), so a bad id fails before any network call.

    The rules are `huggingface_hub`'s (`validate_repo_id`); a bare name, which the client would
    complete with the token's user, is refused: the target must say where its data goes.
    """
    from huggingface_hub.errors import HFValidationError
    from huggingface_hub.utils import validate_repo_id as hub_validate_repo_id

    where = f" (from {source})" if source else ""
    if "/" not in repo_id:
        raise ValueError(f"Hub repo id must be 'namespace/name', got {repo_id!r}{where}")
    try:
        hub_validate_repo_id(repo_id)
    except HFValidationError:
        raise ValueError(
            f"Invalid Hub repo id {repo_id!r}{where}: each part must be 1-96 characters of [A-Za-z0-9._-],"
            " must not start or end with '-' or '.', must not contain '--' or '..', and the name must not"
            " end in '.git'"
        ) from None
    return repo_id


def sanitize_repo_name_part(value: str) -> str:
    """Turn a free-form value such as a run id into something usable inside a Hub repo name.

    Runs of disallowed characters become `-`, repeated separators collapse (the Hub rejects `--`
    and `..`), and separators are trimmed from both ends.
    """
    sanitized = _CHARS_NOT_ALLOWED_IN_REPO_NAMES.sub("-", value)
    sanitized = _REPEATED_SEPARATORS.sub(lambda match: match.group()[0], sanitized).strip("-.")
    if not sanitized:
        raise ValueError(f"{value!r} has no characters usable in a Hub repo name")
    return sanitized


# The repo id template's placeholders: what each stands for, and the setting (its field name) that
# gives it a value (none: the scope's key gives it). The card's settings are named as the card reads them.
PLACEHOLDERS: dict[str, tuple[str, str]] = {
    "org": ("the Hub namespace, as given (never rewritten)", "org"),
    "run": ("the run id", ""),
    "step": ("the step number (25 for step-25)", ""),
    "run_id": ("the scope's key (run, or run/step-N with '/' as '-')", ""),
    "date": ("the run id's date stamp, e.g. 20260730_053956", ""),
    "model": ("the trained model's name, its id after the owner", "card_model"),
    "framework": ("the training framework", "card_framework"),
    "task_source": ("where the tasks came from", "card_task_source"),
    "license": ("the card's license id", "card_license"),
    "pretty_name": ("the card's title", "card_pretty_name"),
}
MAX_NAME_LENGTH = 96  # the Hub's limit on each part of a repo id
DIGEST_LENGTH = 8  # hex characters of sha256 that stand for what a long name's cut dropped
# A date stamp in a run id: 20260730_053956, 20260730-053956, 2026-07-30T05-39-56, or a date alone.
_DATE_STAMPS = (
    re.compile(r"(?<![0-9])(20[0-9]{2})([01][0-9])([0-3][0-9])[_T-]?([0-2][0-9])([0-5][0-9])([0-5][0-9])(?![0-9])"),
    re.compile(r"(?<![0-9])(20[0-9]{2})-([01][0-9])-([0-3][0-9])[_T-]([0-2][0-9])[.-]([0-5][0-9])[.-]([0-5][0-9])"),
    re.compile(r"(?<![0-9])(20[0-9]{2})-?([01][0-9])-?([0-3][0-9])(?![0-9])"),
)


class RepoIdTemplateError(ValueError):
    """A repo id template no scope could be published under; the message names the placeholder."""


def template_placeholders(template: str) -> list[str]:
    """The placeholders a template names, in order; refused when one is unknown or is not a plain
    `{name}` (an index, attribute, conversion or format spec would be Python's, not ours)."""
    known = ", ".join(f"{{{name}}}" for name in PLACEHOLDERS)
    try:
        parsed = list(string.Formatter().parse(template))
    except ValueError as error:
        raise RepoIdTemplateError(f"repo id template {template!r} is not a template: {error}") from None
    names = []
    for _, name, spec, conversion in parsed:
        if name is None:
            continue
        if name not in PLACEHOLDERS or spec or conversion:
            shown = "{" + name + (f"!{conversion}" if conversion else "") + (f":{spec}" if spec else "") + "}"
            raise RepoIdTemplateError(f"repo id template {template!r}: unknown placeholder {shown}; known: {known}")
        names.append(name)
    return names


def check_repo_id_template(
    template: str, org: str, fields: Mapping[str, str], steps: bool, variables: Mapping[str, str]
) -> None:
    """Refuse, before any work, a template that could not name every scope's repo, or would name
    two scopes' repos alike: an unknown placeholder, a setting it needs left empty, no placeholder
    telling runs apart ({run}, {run_id} or {date}), or under step scopes none telling steps apart
    ({step} or {run_id}); then a sample scope's id must be one the Hub accepts. `fields` are the
    card's settings (`model`, `framework`, ...); `steps`: scopes may be a run's steps; `variables`:
    the name the operator sets each setting by, keyed by its field name (`card_model`, `scope_unit`)."""
    names = set(template_placeholders(template))
    for name in sorted(names):
        _, setting = PLACEHOLDERS[name]
        value = org if name == "org" else fields.get(name, "")
        if setting and not value.strip():
            shown = variables.get(setting, setting)
            raise RepoIdTemplateError(f"repo id template {template!r} uses {{{name}}}, but {shown} is empty")
    if not names & {"run", "run_id", "date"}:
        raise RepoIdTemplateError(
            f"repo id template {template!r} names no run ({{run}}, {{run_id}} or {{date}}): every run would"
            " publish to one repo"
        )
    if steps and not names & {"step", "run_id"}:
        raise RepoIdTemplateError(
            f"repo id template {template!r} names no step ({{step}} or {{run_id}}): a run's steps would publish"
            f" to one repo (or set {variables.get('scope_unit', 'scope_unit')}=run)"
        )
    if not steps and "step" in names:
        raise RepoIdTemplateError(f"repo id template {template!r} uses {{step}}, but scopes are whole runs")
    render_repo_id(template, "run-20260101_000000/step-1" if steps else "run-20260101_000000", org=org, fields=fields)


def _date_stamp(run_id: str) -> str | None:
    """The run id's last date stamp as `YYYYMMDD_HHMMSS` (or `YYYYMMDD` for a date alone)."""
    for pattern in _DATE_STAMPS:
        found = list(pattern.finditer(run_id))
        if found:
            parts = found[-1].groups()
            return "".join(parts[:3]) + ("_" + "".join(parts[3:]) if len(parts) > 3 else "")
    return None


def _values(scope_key: str, org: str, fields: Mapping[str, str], names: set[str]) -> dict[str, str]:
    """Each placeholder the template names, sanitised into a repo name part ({org} kept as given:
    a rewritten namespace would publish into someone else's)."""
    scope = RunScope.from_key(scope_key)
    raw: dict[str, str | None] = {
        "run": scope.run_id,
        "step": scope.step.removeprefix("step-") if scope.step else None,
        "run_id": scope.key,
        "date": _date_stamp(scope.run_id),
        "model": fields.get("model", "").rsplit("/", 1)[-1],
        **{name: fields.get(name, "") for name in ("framework", "task_source", "license", "pretty_name")},
    }
    values = {"org": org}
    for name in (n for n in PLACEHOLDERS if n in names and n != "org"):  # a stable first complaint
        value = raw[name]
        if value is None:
            what = "step folder" if name == "step" else "date stamp (e.g. 20260730_053956)"
            raise RepoIdTemplateError(f"scope {scope_key!r} has no {what} to fill {{{name}}}")
        try:
            values[name] = sanitize_repo_name_part(value)
        except ValueError as error:
            raise RepoIdTemplateError(f"{{{name}}}: {error}") from None
    return values


def _fit(name: str) -> str:
    """A repo name cut to the Hub's 96 characters, ending in a digest of the whole name so two long
    names that share their first 87 characters still differ."""
    if len(name) <= MAX_NAME_LENGTH:
        return name
    digest = hashlib.sha256(name.encode()).hexdigest()[:DIGEST_LENGTH]
    kept = _REPEATED_SEPARATORS.sub(lambda m: m.group()[0], name[: MAX_NAME_LENGTH - DIGEST_LENGTH - 1]).rstrip("-.")
    return f"{kept}-{digest}"


def render_repo_id(template: str, scope_key: str, *, org: str = "", fields: Mapping[str, str] | None = None) -> str:
    """The repo id of one scope: `template`'s placeholders (see `PLACEHOLDERS`) filled from the scope's
    key, `org` and the card's settings, each sanitised; a name past 96 characters cut with a digest;
    then validated as the Hub would. E.g. `{org}/tb2_step{step}_{date}` for `run_20260730_053956/step-25`
    is `<org>/tb2_step25_20260730_053956`."""
    names = set(template_placeholders(template))
    repo_id = template.format(**_values(scope_key, org, fields or {}, names))
    namespace, slash, name = repo_id.partition("/")
    if slash and "/" not in name:
        repo_id = f"{namespace}/{_fit(name)}"
    return validate_repo_id(repo_id, f"repo id template {template!r}")


def parse_publish_root(url: str) -> PublishRoot:
    """Split `hf://datasets/<org>/<name>[@revision][/path]` into repo id, revision and path.

    The revision defaults to `main`; a revision containing `/` must be percent-encoded
    (`@release%2F2025`) since a literal `/` starts the path.
    """
    if not url.startswith(PUBLISH_ROOT_PREFIX):
        raise ValueError(f"Publish root must look like 'hf://datasets/<org>/<name>[@revision][/path]', got {url!r}")
    parts = url[len(PUBLISH_ROOT_PREFIX) :].strip("/").split("/", 2)
    if len(parts) < 2:
        raise ValueError(f"Publish root {url!r} must name both an organisation and a dataset")
    namespace, name_and_revision = parts[0], parts[1]
    name, at, revision = name_and_revision.partition("@")
    if at and not revision:
        raise ValueError(f"Publish root {url!r} has an empty revision after '@'")
    repo_id = validate_repo_id(f"{namespace}/{name}", f"publish root {url!r}")
    path_in_repo = normalize_path_in_repo(parts[2] if len(parts) == 3 else "")
    return PublishRoot(repo_id, unquote(revision) or DEFAULT_REVISION, path_in_repo)


def normalize_path_in_repo(path_in_repo: str) -> str:
    """Strip surrounding slashes and reject paths that could escape or blur the prefix."""
    path = path_in_repo.strip("/")
    if path and any(segment in ("", ".", "..") for segment in path.split("/")):
        raise ValueError(f"Invalid path in repo {path_in_repo!r}: empty, '.' or '..' segments are not allowed")
    return path
