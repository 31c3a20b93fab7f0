"""The root card of a publish root (a folder, a bucket prefix or a shared Hub repo) holding many
scopes: one `config_name` per scope, its data files under the scope's folder, so
`datasets.load_dataset(root, name=<config>)` loads exactly that scope and the Hub viewer lists them.

A scope's configs are its own card's configs, renamed and re-rooted: `default` becomes the scope's
config name (its key with `/` as `--`: `run/step-25` -> `run--step-25`, a run without step folders
its run id), any other (`trials`, a subagent kind) `<scope config>--<name>`, and every path gets
the scope's key in front, so the root card names the same `data/<version>/` the scope's card does.
All are Parquet, as `datasets` reads every config of a card with one builder: a scope's session
files are a dataset of their own in `<scope>/sessions/` (see `publishing.sessions_card`), and the
`<scope config>--sessions` configs (JSON Lines) earlier versions declared are dropped at the next merge.

The root card is shared by every scope under the root, so it is updated read-modify-write with a
compare-and-swap: on object storage a conditional PUT (`If-Match` the ETag read, or
`If-None-Match: *` when there was none), retried on a conflict; on a local disk under an flock,
then an atomic rename; on the Hub in the scope's own commit, whose parent commit the Hub checks.
A config belongs to the scope whose folder all its data files lie in (scopes never nest), so a
concurrent publish of another scope never loses this one's configs, nor this one theirs.
"""

from __future__ import annotations

import errno
import fcntl
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import fsspec
import yaml
from fsspec.implementations.local import LocalFileSystem

from trace_assets.atomic_files import replaced_atomically
from trace_assets.scope import CONFIG_SEPARATOR, RunScope

ROOT_CARD = "README.md"
ROOT_LOCK = ".root-card.lock"  # hidden: never a scope's folder (segments start with a letter or digit)
CAS_ATTEMPTS = 20
ROOT_TAGS = ["harbor", "agent-traces", "reinforcement-learning"]


class ConfigNameClash(ValueError):
    """Two scopes map to one config name (`a--b/step-1` and `a/b--step-1`, say)."""


def card_header(text: str | None) -> dict[str, Any]:
    """A card's YAML header as `huggingface_hub` reads it (LF or CRLF line endings), {} when there is
    no card or no header. A byte order mark, which some editors write, is dropped first: the Hub's
    reader would take the header for text."""
    if not text:
        return {}
    from huggingface_hub import RepoCard  # slow to import: loaded only where a card is merged

    return RepoCard(text.removeprefix("\ufeff")).data.to_dict()


def _paths(config: dict[str, Any]) -> list[str]:
    files = config.get("data_files") or []
    files = files if isinstance(files, list) else [files]
    paths: list[Any] = []
    for entry in files:
        value = entry.get("path") if isinstance(entry, dict) else entry
        paths += value if isinstance(value, list) else [value]
    return [str(p) for p in paths if p]


def _owned_by(config: dict[str, Any], scope: RunScope) -> bool:
    paths = _paths(config)
    return bool(paths) and all(path.startswith(scope.key + "/") for path in paths)


def scope_configs(scope: RunScope, scope_card: str) -> list[dict[str, Any]]:
    """The scope card's configs as the root card names them (see the module's docstring)."""
    configs = []
    for config in card_header(scope_card).get("configs", []):
        name = config["config_name"]
        files = config["data_files"] if isinstance(config["data_files"], list) else [config["data_files"]]
        configs.append(
            {
                "config_name": scope.config_name
                if name == "default"
                else f"{scope.config_name}{CONFIG_SEPARATOR}{name}",
                "data_files": [
                    {**entry, "path": f"{scope.key}/{entry['path']}"}
                    if isinstance(entry, dict)
                    else f"{scope.key}/{entry}"
                    for entry in files
                ],
            }
        )
    return configs


def _declares_sessions(config: dict[str, Any]) -> bool:
    """A config of session files (JSON Lines): no reader of this card could load it, nor, since
    its builder is the first config's, any other config once it came first."""
    return any(path.endswith(".jsonl") for path in _paths(config))


def _tags(header: dict[str, Any]) -> list[str]:
    """The root card's tags first, then any an owner added."""
    theirs = header.get("tags") or []
    return [*ROOT_TAGS, *(tag for tag in (theirs if isinstance(theirs, list) else [theirs]) if tag not in ROOT_TAGS)]


def merged_root_card(existing: str | None, scope: RunScope, scope_card: str) -> str:
    """The root card with the scope's configs replaced by those of its current card; the header's
    other keys (a license, a pretty name an owner added) and tags are kept."""
    header = card_header(existing)
    others = [c for c in header.get("configs", []) if not _owned_by(c, scope) and not _declares_sessions(c)]
    ours = scope_configs(scope, scope_card)
    clash = {c["config_name"] for c in others} & {c["config_name"] for c in ours}
    if clash:
        raise ConfigNameClash(
            f"scope {scope.key!r}: config name(s) {', '.join(sorted(clash))} already name another scope's data "
            "in the root card (config names are scope keys with '/' as '--')"
        )
    configs = sorted([*others, *ours], key=lambda c: c["config_name"])
    yaml_header = yaml.safe_dump({**header, "configs": configs, "tags": _tags(header)}, sort_keys=False)
    table = "\n".join(f"| `{c['config_name']}` | `{_paths(c)[0].rsplit('/', 1)[0]}/` |" for c in configs)
    return (
        f"---\n{yaml_header}---\n\n# Harbor traces\n\n"
        "One config per scope (a run, or a run's step: `run/step-N` is config `run--step-N`); each scope's "
        "own card, coverage and `trials.parquet` are in its folder. Load one with "
        "`datasets.load_dataset(<this repo or folder>, name=<config>)`. A scope's session files (whole "
        "trajectories for the Hub's trace viewer) are a dataset of their own in `<scope>/sessions/`, declared "
        "by the card there; the scope's card says how to load them.\n\n"
        f"| config | files |\n|---|---|\n{table}\n"
    )


def update_folder_root_card(root_url: str, storage_options: dict[str, Any], scope: RunScope, scope_card: str) -> None:
    """Merge the scope's configs into `<root_url>/README.md` with a compare-and-swap (see above)."""
    fs, root = fsspec.core.url_to_fs(root_url, **storage_options)
    path = f"{root.rstrip('/')}/{ROOT_CARD}"
    if isinstance(fs, LocalFileSystem):
        Path(root).mkdir(parents=True, exist_ok=True)
        with _flock(Path(root) / ROOT_LOCK):
            existing = Path(path).read_text() if Path(path).exists() else None
            with replaced_atomically(Path(path), durable=True) as temp:  # fsynced: a flip
                temp.write_text(merged_root_card(existing, scope, scope_card))
        return
    _compare_and_swap(fs, path, lambda existing: merged_root_card(existing, scope, scope_card).encode())


def _compare_and_swap(fs: Any, path: str, merge: Callable[[str | None], bytes]) -> None:
    """Read the object's ETag then its bytes, and write the merge only if the object is still that
    version (a newer body read with an older ETag fails the condition too); retry on a conflict."""
    bucket, key, _ = fs.split_path(path)
    for attempt in range(CAS_ATTEMPTS):
        try:
            etag = fs.call_s3("head_object", Bucket=bucket, Key=key)["ETag"]
            existing: str | None = fs.cat_file(path).decode()
            condition = {"IfMatch": etag}
        except FileNotFoundError:
            existing, condition = None, {"IfNoneMatch": "*"}
        try:
            fs.call_s3("put_object", Bucket=bucket, Key=key, Body=merge(existing), **condition)
            fs.invalidate_cache(path)
            return
        except OSError as error:  # s3fs: FileExistsError for If-None-Match, EINVAL for If-Match
            if not (isinstance(error, FileExistsError) or error.errno == errno.EINVAL):
                raise
            time.sleep(0.05 * (attempt + 1))
    raise RuntimeError(f"{path}: {CAS_ATTEMPTS} concurrent updates in a row; publish again")


class _flock:
    """An exclusive flock on a hidden file in the root, held while the card is read and replaced."""

    def __init__(self, path: Path):
        self.path = path

    def __enter__(self) -> None:
        self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        fcntl.flock(self.fd, fcntl.LOCK_EX)

    def __exit__(self, *exc: object) -> None:
        fcntl.flock(self.fd, fcntl.LOCK_UN)
        os.close(self.fd)
