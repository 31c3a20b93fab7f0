"""The root card of a publish root (a folder, a bucket prefix or a shared Hub repo) holding many
scopes: a dataset card of the whole sweep, which is what the Hub shows on the repo's page.

It is written from the root's index (`sweep_index.json`): an entry per scope (`ScopeEntry`) made from
the files that scope published (its card's configs, `coverage.json`, `versions.json`,
`secret_scan.json`), never from a run's memory. A publish reads the index and the card, puts its own
scope's entry in from its new files, and writes both: its cost does not grow with the scopes already
there. With no index (a root published before it, or an index deleted so it is built again), every
scope folder under the root is read once to build it. A scope folder is one holding
`secret_scan.json`; one holding nothing else is a scope the secret scan blocked, listed with its
verdict and no config.

The card: the YAML header the Hub validates (`license`, `pretty_name`, `language`,
`task_categories` from the card settings, `size_categories` of all rows, `configs`, tags), the
sweep's provenance, a table of every run (its steps' trial folders, scored, exported, ratio, mean
reward and verdicts, a link to its last step's card) and blocked scope with a total row, its
progress (`sweep_progress.svg` beside it: each run's mean reward and export ratio over its steps),
and how to load each config.

Configs: a scope's are its own card's configs, renamed and re-rooted: `default` becomes the scope's
config name (its key with `/` as `--`: `run/step-25` -> `run--step-25`, a run without step folders
its run id), any other (`trials`, a subagent kind) `<scope config>--<name>`, and every path gets
the scope's key in front; those of a run without steps are the card's. A run published as step
scopes gets configs spanning its steps instead, none per step (the dataset viewer takes 3,000
configs): `<run config>` (and `<run config>--<name>`) whose data files are all its published steps'
files of that config (an unversioned file each step holds, `trials.parquet`, as one pattern). All are Parquet, as `datasets` reads every config of a card with one builder: a scope's
session files are a dataset of their own in `<scope>/sessions/` (see `publishing.sessions_card`).

The index and the card are shared by every scope under the root, so they are updated
read-modify-write with a compare-and-swap: on object storage a conditional PUT of the index (`If-Match`
the ETag read, or `If-None-Match: *` when there was none), retried on a conflict, then one of the card
written from the index read after the card's ETag; on a local disk both under an flock, each by an
atomic rename; on the Hub both in the scope's own commit, whose parent commit the Hub checks, the
index read at that parent. The header's keys this
module does not write (an owner's `homepage`, say) and an owner's tags are kept.
"""

from __future__ import annotations

import errno
import json
import math
import re
import time
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from glob import has_magic
from pathlib import Path
from typing import Any

import fsspec
import yaml
from fsspec.implementations.local import LocalFileSystem

from trace_assets.core.scope import CONFIG_SEPARATOR, InvalidScopeKey, RunScope
from trace_assets.publishing.card import CardSettings
from trace_assets.publishing.card_facts import size_category
from trace_assets.publishing.plots import sweep_progress_svg
from trace_assets.runtime.atomic_files import replaced_atomically
from trace_assets.runtime.file_lock import hold_lock

ROOT_CARD = "README.md"
INDEX = "sweep_index.json"  # the entries the root card is written from, one per scope
ROOT_PLOT = "sweep_progress.svg"  # the card's picture of the sweep, written with it from the index
ROOT_LOCK = ".root-card.lock"  # hidden: never a scope's folder (segments start with a letter or digit)
CAS_ATTEMPTS = 20
LIST_WORKERS = 16  # folder listings in flight while the scope folders are found
ROOT_TAGS = ["harbor", "agent-traces", "reinforcement-learning"]
# The files of a scope's folder the root card is written from (`publishing.dataset_folder`'s names).
SCOPE_CARD, COVERAGE, VERSIONS, SCAN_REPORT = "README.md", "coverage.json", "versions.json", "secret_scan.json"
SCOPE_FILES = (SCOPE_CARD, COVERAGE, VERSIONS, SCAN_REPORT)
# The header keys the root card writes; any other an owner added is kept.
OUR_KEYS = ("license", "pretty_name", "language", "task_categories", "size_categories", "configs", "tags")
UNKNOWN = "-"
_TRIALS = f"{CONFIG_SEPARATOR}trials"  # the suffix of a scope's (and run's) trials config

# A scope folder's file by name, as bytes, or None when it has none.
ScopeReader = Callable[[RunScope, str], bytes | None]


class ConfigNameClash(ValueError):
    """Two scopes map to one config name (`a--b/step-1` and `a/b--step-1`, say)."""


# libyaml's safe loader and dumper where PyYAML was built with it (the wheels are): a root card's header
# lists a config per run and scope, which the pure-Python ones took 2.4 ms a scope to read and write.
_SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_SAFE_DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)

# huggingface_hub's `repocard.REGEX_YAML_BLOCK` (2.x): where a card's YAML header is found
_YAML_HEADER = re.compile(r"^(\s*---(?:\r\n|\r|\n))([\S\s]*?)((?:\r\n|\r|\n)---[ \t]*(\r\n|\n|$))")


def card_header(text: str | None) -> dict[str, Any]:
    """A card's YAML header as `huggingface_hub`'s `RepoCard(text).data.to_dict()` reads it (LF or CRLF
    line endings; keys whose value is null left out), {} when there is no card or no header. Done
    here, not by `RepoCard`, whose import took 0.9 s of every publish to a folder. A byte order mark,
    which some editors write, is dropped first: the Hub's reader would take the header for text.
    Raises ValueError (or yaml.YAMLError) for a header `RepoCard` refuses: not a mapping, or a key
    that is not a string (YAML's `on:` or `yes:` read as true, a number)."""
    match = _YAML_HEADER.search((text or "").removeprefix("\ufeff"))
    if match is None:
        return {}
    data = yaml.load(match.group(2), Loader=_SAFE_LOADER)
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ValueError("a card's header must be a mapping")
    if odd := [key for key in data if not isinstance(key, str)]:
        raise ValueError(f"a card's header keys must be strings, not {odd[0]!r}")
    return {key: value for key, value in data.items() if value is not None}


@dataclass(frozen=True)
class ScopeFiles:
    """What one scope's published folder holds, as read back: its card and three JSON files (None
    where missing or unreadable: a reader of the root card gets '-', never a failed publish)."""

    scope: RunScope
    card: str | None = None
    coverage: dict[str, Any] | None = None
    versions: dict[str, Any] | None = None
    scan: dict[str, Any] | None = None

    @classmethod
    def read(cls, scope: RunScope, read: ScopeReader) -> ScopeFiles:
        def json_of(name: str) -> dict[str, Any] | None:
            data = read(scope, name)
            try:
                value = json.loads(data) if data is not None else None
            except ValueError:
                return None
            return value if isinstance(value, dict) else None

        card = read(scope, SCOPE_CARD)
        return cls(
            scope,
            card.decode("utf-8", "replace") if card is not None else None,
            json_of(COVERAGE),
            json_of(VERSIONS),
            json_of(SCAN_REPORT),
        )

    @classmethod
    def of_folder(cls, scope: RunScope, folder: Path) -> ScopeFiles:
        """The files a publish is about to put in place (a local build folder)."""
        return cls.read(scope, lambda _, name: (folder / name).read_bytes() if (folder / name).is_file() else None)

    @property
    def blocked(self) -> bool:
        """The folder holds the scan report and no card: the scan blocked the scope's publishing."""
        return self.card is None and self.scan is not None

    @property
    def last_version(self) -> dict[str, Any]:
        entries = (self.versions or {}).get("versions")
        last = entries[-1] if isinstance(entries, list) and entries else None
        return last if isinstance(last, dict) else {}


# The `configs` key of a header as yaml.dump writes it: its line, then the lines of its value (list
# items and their indented lines).
_CONFIGS_KEY = re.compile(r"^configs:[^\n]*\n(?:(?:- | )[^\n]*(?:\n|$))*", re.M)


def owner_header(card: str | None) -> dict[str, Any]:
    """`readable_header` of the root card now there, but for its `configs` (which the card writes
    again, and which is most of its header at thousands of scopes): their lines are cut before the
    rest is read. A header whose rest is unreadable once they are cut is read whole."""
    match = _YAML_HEADER.search((card or "").removeprefix("\ufeff"))
    configs = _CONFIGS_KEY.search(match.group(2)) if match else None
    if match is None or configs is None:
        return readable_header(card)
    text = match.group(2)
    rest = text[: configs.start()] + text[configs.end() :]
    try:
        return card_header(f"---\n{rest}\n---\n")
    except (ValueError, yaml.YAMLError):
        return readable_header(card)


def readable_header(text: str | None) -> dict[str, Any]:
    """`card_header`, or {} for a card whose header does not parse (an editor's slip, a torn write):
    the root card is then written from the scope folders alone."""
    try:
        return card_header(text)
    except (ValueError, yaml.YAMLError):
        return {}


FIGURES = ("trial_dirs", "scored", "exported", "rows")  # coverage.json's counts the card shows
INDEX_FORMAT = 2  # 2: compact entries (figures a list, defaults and a scope's usual configs left out)


@dataclass(frozen=True)
class ScopeEntry:
    """What the root card says of one scope, kept in the root's index (`sweep_index.json`) so an
    update reads one file, not every scope folder: its configs as the root card names them (None:
    `usual_configs`, nearly every scope's), its figures, scan verdict and last published version.
    `listed`: it has a card (published) or is blocked; a folder with neither gets no row."""

    scope: RunScope
    configs: list[dict[str, Any]] | None = None
    blocked: bool = False
    listed: bool = True
    verdict: str = UNKNOWN
    figures: dict[str, int] = field(default_factory=dict)
    version: str = ""
    published_at: str = ""
    mean_reward: float | None = None
    rewards: int = 0
    line: str = field(default="", compare=False, repr=False)  # its line in the index it was read from

    @classmethod
    def of(cls, files: ScopeFiles) -> ScopeEntry:
        last = files.last_version
        version = str(last.get("version") or "")
        configs = scope_configs(files.scope, files.card) if files.card is not None else []
        return cls(
            files.scope,
            None if configs == usual_configs(files.scope, version) else configs,
            files.blocked,
            files.card is not None or files.blocked,
            str((files.scan or {}).get("verdict", UNKNOWN)),
            {key: _int(files.coverage, key) for key in FIGURES},
            version,
            str(last.get("published_at") or ""),
            _finite(last.get("mean_reward")),
            _int(last, "rewards"),
        )

    @property
    def named_configs(self) -> list[dict[str, Any]]:
        return usual_configs(self.scope, self.version) if self.configs is None else self.configs

    @property
    def config_names(self) -> list[str]:
        own = self.scope.config_name
        if self.configs is None:
            return [own, f"{own}{_TRIALS}"] if self.version else []
        return [c["config_name"] for c in self.configs]

    def config_paths(self) -> list[tuple[str, list[str]]]:
        """Each config's name past the scope's own (`""`, `--trials`) and its paths: the usual ones
        made without their configs, as the root card makes them for every step at each publish."""
        if self.configs is None:
            key = self.scope.key
            return (
                [("", [f"{key}/data/{self.version}/train-*"]), ("--trials", [f"{key}/trials.parquet"])]
                if self.version
                else []
            )
        own = self.scope.config_name
        return [(c["config_name"].removeprefix(own), _paths(c)) for c in self.configs]

    def as_json(self) -> dict[str, Any]:
        """The entry's line in the index, its values at their defaults left out: at thousands of
        scopes an entry is 100 to 200 bytes."""
        value: dict[str, Any] = {"scope": self.scope.key, "figures": [self.figures.get(key, 0) for key in FIGURES]}
        if self.configs is not None:
            value["configs"] = self.configs
        if self.blocked:
            value["blocked"] = True
        if not self.listed:
            value["listed"] = False
        for name in ("verdict", "version", "published_at", "mean_reward", "rewards"):
            if (here := getattr(self, name)) != _ENTRY_DEFAULTS[name]:
                value[name] = here
        return value

    @classmethod
    def from_json(cls, value: Any, line: str = "") -> ScopeEntry:
        """An entry the index holds (`line`: its text there, written back as it is); raises
        ValueError (or KeyError, TypeError) for one it cannot be."""
        scope = RunScope.from_key(value["scope"])
        configs = value.get("configs")
        if configs is not None and (
            not isinstance(configs, list) or not all(isinstance(c, dict) and "config_name" in c for c in configs)
        ):
            raise ValueError(f"scope {scope.key}: configs are not a list of named configs")
        figures = value["figures"]
        if not isinstance(figures, list) or not all(type(n) is int for n in figures):
            raise TypeError(f"scope {scope.key}: figures are not a list of counts")
        get = value.get
        return cls(
            scope,
            configs,
            get("blocked") is True,
            get("listed") is not False,
            str(get("verdict", UNKNOWN)),
            dict(zip(FIGURES, figures)),
            str(get("version") or ""),
            str(get("published_at") or ""),
            _finite(get("mean_reward")),
            _int(value, "rewards"),
            line,
        )


def usual_configs(scope: RunScope, version: str) -> list[dict[str, Any]]:
    """The configs a scope's card declares for its version (`default`, its rows; `trials`), as the
    root card names them: what an index entry leaves out."""
    if not version:
        return []
    return [
        {
            "config_name": scope.config_name,
            "data_files": [{"split": "train", "path": f"{scope.key}/data/{version}/train-*"}],
        },
        {
            "config_name": f"{scope.config_name}{_TRIALS}",
            "data_files": [{"split": "train", "path": f"{scope.key}/trials.parquet"}],
        },
    ]


def _finite(value: Any) -> float | None:
    """A mean reward to show: a finite number, else None (a file's NaN, a string, a bool)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
        return float(value)
    return None


# An entry's values left out of its line when at these (the index's reader puts them back).
_ENTRY_DEFAULTS: dict[str, Any] = {
    "verdict": UNKNOWN, "version": "", "published_at": "", "mean_reward": None,
    "rewards": 0,
}  # fmt: skip


def index_entries(text: str | bytes | None) -> list[ScopeEntry] | None:
    """The entries of an index file, None when there is none or it cannot be read (then it is
    built again from the scope folders); an entry that cannot be read is left out."""
    if text is None:
        return None
    try:
        data = json.loads(text)
    except ValueError:
        return None
    if not isinstance(data, dict) or data.get("format") != INDEX_FORMAT or not isinstance(data.get("scopes"), list):
        return None
    scopes = data["scopes"]
    decoded = text.decode("utf-8", "replace") if isinstance(text, bytes) else text
    lines = decoded.split("\n")[1:-2] if decoded.count("\n") == len(scopes) + 2 else []  # as `index_text` wrote it
    entries = []
    for n, value in enumerate(scopes):
        try:
            line = lines[n].removesuffix(",") if lines else ""
            entry = ScopeEntry.from_json(value, line)
            entries.append(entry if line.startswith(f'{{"scope":"{entry.scope.key}",') else replace(entry, line=""))
        except (ValueError, KeyError, TypeError, AttributeError):
            continue
    return entries


def index_text(entries: Iterable[ScopeEntry]) -> str:
    """The index file: one entry per scope, in the card's order, one line each (a diff per scope);
    an entry read from the index keeps its line, so a publish encodes its own entry only."""
    encode = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
    lines = [e.line or encode(e.as_json()) for e in sorted(entries, key=_entry_order)]
    return f'{{"format": {INDEX_FORMAT}, "scopes": [\n' + ",\n".join(lines) + "\n]}\n"


def with_entry(entries: Iterable[ScopeEntry], this: ScopeEntry) -> list[ScopeEntry]:
    """The index's entries with `this` scope's replaced (or added)."""
    return [*(e for e in entries if e.scope != this.scope), this]


def _entry_order(entry: ScopeEntry) -> tuple[str, int, str]:
    return _order(entry.scope)


def scope_configs(scope: RunScope, scope_card: str) -> list[dict[str, Any]]:
    """The scope card's configs as the root card names them (see the module's docstring); a config
    without a name, or without data files that are paths (a hand-edited card's), is left out."""
    configs = []
    declared = readable_header(scope_card).get("configs")
    for config in declared if isinstance(declared, list) else []:
        if not isinstance(config, dict) or not isinstance(config.get("config_name"), str) or not config["config_name"]:
            continue
        files = _data_files(config)
        if not files or not all(_is_path(entry.get("path") if isinstance(entry, dict) else entry) for entry in files):
            continue
        if _declares_sessions(config):
            continue
        name = config["config_name"]
        configs.append(
            {
                "config_name": _suffixed(scope.config_name, name),
                "data_files": [
                    {**entry, "path": _rooted(scope, entry["path"])}
                    if isinstance(entry, dict)
                    else _rooted(scope, entry)
                    for entry in files
                ],
            }
        )
    return configs


def _is_path(value: Any) -> bool:
    """A data file's path as a card declares it: a pattern, or a non-empty list of them."""
    values = value if isinstance(value, list) and value else [value]
    return all(isinstance(v, str) and v for v in values)


def _suffixed(base: str, name: str) -> str:
    return base if name == "default" else f"{base}{CONFIG_SEPARATOR}{name}"


def _rooted(scope: RunScope, path: Any) -> Any:
    return [f"{scope.key}/{p}" for p in path] if isinstance(path, list) else f"{scope.key}/{path}"


def _data_files(config: dict[str, Any]) -> list[Any]:
    """A config's data file entries as a list (a card may give one without a list)."""
    files = config.get("data_files") or []
    return files if isinstance(files, list) else [files]


def _paths(config: dict[str, Any]) -> list[str]:
    paths: list[Any] = []
    for entry in _data_files(config):
        value = entry.get("path") if isinstance(entry, dict) else entry
        paths += value if isinstance(value, list) else [value]
    return [str(p) for p in paths if p]


def _declares_sessions(config: dict[str, Any]) -> bool:
    """A config of session files (JSON Lines), which earlier versions declared: no reader of the
    card could load it, nor, since its builder is the first config's, any other config once it came first."""
    return any(path.endswith(".jsonl") for path in _paths(config))


def run_configs(entries: Mapping[RunScope, ScopeEntry]) -> list[dict[str, Any]]:
    """For each run published as step scopes, a config per config name its steps share, whose
    `train` split is every step's files of it: `load_dataset(root, "<run>")` loads all its steps.
    `entries` in the card's order."""
    spans: dict[str, list[str]] = {}
    run_names: dict[str, str] = {}
    for scope, entry in entries.items():
        if scope.step is None:
            continue
        if scope.run_id not in run_names:
            run_names[scope.run_id] = RunScope(scope.run_id).config_name
        run_config = run_names[scope.run_id]
        for suffix, paths in entry.config_paths():
            spans.setdefault(run_config + suffix, []).extend(paths)
    return [
        {"config_name": name, "data_files": [{"split": "train", "path": _steps_pattern(name, paths)}]}
        for name, paths in spans.items()
    ]


def _steps_pattern(name: str, paths: list[str]) -> str | list[str]:
    """A file every step holds once, unversioned (`trials.parquet`, replaced in place), as one pattern
    over the run's step folders: half the card's paths at a config per run; versioned shards stay
    named one by one (a pattern would also match a version a killed publish left beside the current)."""
    run = name.split(CONFIG_SEPARATOR, 1)[0]
    file = paths[0].rsplit("/", 1)[-1] if paths else ""
    start, end = f"{run}/step-", f"/{file}"
    if file and not has_magic(file) and all(_is_step_file(p, start, end) for p in paths):
        return f"{run}/step-*/{file}"
    return paths


def _is_step_file(path: str, start: str, end: str) -> bool:
    """`path` is `<start>N<end>`, N a step number."""
    number = path[len(start) : len(path) - len(end)]
    return path.startswith(start) and path.endswith(end) and number.isascii() and number.isdigit()


def _order(scope: RunScope) -> tuple[str, int, str]:
    step = int(scope.step.removeprefix("step-")) if scope.step else -1
    return scope.run_id, step, scope.key


def root_card(
    entries: Iterable[ScopeEntry], settings: CardSettings | None = None, existing: str | None = None, this: str = ""
) -> str:
    """The root card of a root holding `entries`' scopes (see the module's docstring). `existing`: the
    card now there, whose other header keys and tags are kept; `this`: the scope being published, whose
    config names must not clash with another scope's (another pair that clashes keeps the first)."""
    settings = settings or CardSettings()
    files = sorted(entries, key=_entry_order)
    accepted: set[RunScope] = set()
    owner: dict[str, str] = {}
    for entry in sorted(files, key=lambda e: e.scope.key != this):  # this scope claims its names first
        if entry.blocked or not entry.listed:
            continue
        names = entry.config_names
        taken = {name: owner[name] for name in names if name in owner}
        if taken and this in taken.values():
            raise ConfigNameClash(
                f"scope {this!r}: config name(s) {', '.join(sorted(taken))} already name scope"
                f" {entry.scope.key!r}'s data in the root card (config names are scope keys with '/' as '--')"
            )
        if taken:
            continue
        owner.update(dict.fromkeys(names, entry.scope.key))
        accepted.add(entry.scope)
    by_scope = {e.scope: e for e in files if e.scope in accepted}
    spans = [c for c in run_configs(by_scope) if c["config_name"] not in owner]  # a scope's name wins
    whole_runs = (
        c for scope, e in by_scope.items() if scope.step is None for c in e.named_configs
    )  # a step's are its run's
    configs = sorted([*whole_runs, *spans], key=lambda c: c["config_name"])
    header = owner_header(existing)
    rows = sum(e.figures.get("rows", 0) for e in files if e.scope in by_scope)
    ours: dict[str, Any] = {
        "license": settings.license,
        "pretty_name": _title(settings),
        "language": list(settings.language),
        "task_categories": list(settings.task_categories),
        "size_categories": [size_category(rows)],
        "configs": configs,
        "tags": _tags(header),
    }
    theirs = {key: value for key, value in header.items() if key not in OUR_KEYS}
    yaml_header = _dumped({**ours, **theirs})
    return (
        f"---\n{yaml_header}---\n\n# {_title(settings)}\n\n"
        + (f"{settings.intro.strip()}\n\n" if settings.intro.strip() else "")
        + _description(files, by_scope)
        + _provenance(settings)
        + _table(files, by_scope)
        + _progress(by_scope)
        + _configs_prose(configs, spans)
    )


# A data file path yaml.dump writes as it is, alone on its line: segments of letters, digits and `._*-`,
# at least two (the `/` keeps it from reading as a number, a date or a boolean).
_PLAIN_PATH = re.compile(r"[A-Za-z0-9][A-Za-z0-9._*-]*(?:/[A-Za-z0-9._*-]+)+")
_PATHS_MARKER = "trace-assets-paths/5f0c9d4e7a1b/"  # stands for a list of paths while the rest is dumped


def _dumped(header: dict[str, Any]) -> str:
    """`yaml.dump(header)` (libyaml's), its configs' lists of plain paths written line by line here:
    a run's config names every step's files, and yaml.dump's pure-Python representer took most of a
    publish's time at thousands of steps (a test holds the two equal)."""
    lists: list[list[str]] = []
    configs = []
    for config in header.get("configs", []):
        files = []
        for entry in _data_files(config):
            path = entry.get("path") if isinstance(entry, dict) else None
            if (
                isinstance(path, list)
                and len(path) > 1
                and all(isinstance(p, str) and _PLAIN_PATH.fullmatch(p) for p in path)
            ):
                entry = {**entry, "path": [f"{_PATHS_MARKER}{len(lists)}"]}
                lists.append(path)
            files.append(entry)
        configs.append({**config, "data_files": files})
    text = yaml.dump({**header, "configs": configs}, Dumper=_SAFE_DUMPER, sort_keys=False, allow_unicode=True)
    return re.sub(
        rf"^( *- ){re.escape(_PATHS_MARKER)}([0-9]+)\n",
        lambda match: "".join(f"{match[1]}{path}\n" for path in lists[int(match[2])]),
        text,
        count=len(lists),
        flags=re.M,
    )


def _title(settings: CardSettings) -> str:
    """`card_pretty_name` on one line, else "Harbor traces of <model>" (the scope cards' words)."""
    title, model = " ".join(settings.pretty_name.split()), " ".join(settings.model.split())
    return title or (f"Harbor traces of {model}" if model else "Harbor traces")


def _tags(header: dict[str, Any]) -> list[str]:
    """The root card's tags first, then any an owner added."""
    theirs = header.get("tags") or []
    return [*ROOT_TAGS, *(tag for tag in (theirs if isinstance(theirs, list) else [theirs]) if tag not in ROOT_TAGS)]


def _int(values: dict[str, Any] | None, key: str) -> int:
    value = (values or {}).get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _plural(n: int, word: str, words: str = "") -> str:
    return f"{n:,} {word if n == 1 else words or word + 's'}"


def _description(files: list[ScopeEntry], by_scope: Mapping[RunScope, Any]) -> str:
    files = [f for f in files if f.listed]
    runs = {f.scope.run_id for f in files}
    blocked = sum(f.blocked for f in files)
    told = f"{_plural(len(files), 'scope')} of {_plural(len(runs), 'run')}"
    states = f"{len(by_scope):,} published" + (f", {blocked:,} blocked by the secret scan" if blocked else "")
    return (
        "Agent traces of reinforcement-learning runs, exported from Harbor's trial folders by trace_assets: one "
        "row per scored trial, its last episode as an OpenAI-style `conversations` list, with the task, the "
        f"verifier's reward and result. This root holds {told} ({states}); a scope is a run, or one training "
        "step of a run, each in a folder of its own with its card, `coverage.json`, `trials.parquet` (every "
        "trial folder, exported or excluded, and why) and `secret_scan.json`.\n\n"
    )


def _provenance(settings: CardSettings) -> str:
    facts = [
        ("Training framework", settings.framework),
        ("Task source", settings.task_source),
        ("Trained model", f"`{settings.model}`" if settings.model else ""),
    ]
    lines = [f"- {what}: {value}" for what, value in facts if value]
    lines.append("- Rewards: the task verifier's, as Harbor recorded them in each trial's `result.json`")
    return "## Provenance\n\n" + "\n".join(lines) + "\n\n"


def _ratio(exported: int, scored: int) -> str:
    return f"{exported / scored:.1%}" if scored else UNKNOWN


def _reward(mean: Any) -> str:
    if not isinstance(mean, (int, float)) or isinstance(mean, bool) or not math.isfinite(mean):
        return UNKNOWN
    return f"{mean:.3f}" if abs(mean) < 1e6 else f"{mean:g}"


def _cell(text: Any) -> str:
    """Text from a file in a table cell: one line, no pipe to split it."""
    return " ".join(str(text).split()).replace("|", "\\|")[:80] or UNKNOWN


def _table(files: list[ScopeEntry], by_scope: Mapping[RunScope, Any]) -> str:
    """A row per run (its published steps' figures summed, its mean reward weighed by rewarded
    trials) and per blocked scope, then the total: the card's size follows the runs, not the steps."""
    header = (
        "| run | steps | trial folders | scored | exported | ratio | mean reward | verdicts | card |\n"
        "|---|--:|--:|--:|--:|--:|--:|---|---|\n"
    )
    runs: dict[str, list[ScopeEntry]] = {}
    lines = []
    for f in files:
        if f.blocked:
            lines.append(
                f"| `{f.scope.key}` | {UNKNOWN} | {UNKNOWN} | {UNKNOWN} | {UNKNOWN} | {UNKNOWN} | {UNKNOWN} | "
                f"blocked: {_cell(f.verdict)} | [scan report]({f.scope.key}/{SCAN_REPORT}) |"
            )
        elif f.scope in by_scope:  # else a folder without a card nor scan report, or a clashing one: no row
            runs.setdefault(f.scope.run_id, []).append(f)
    rows = [_run_row(run, entries) for run, entries in runs.items()]
    total = _run_row("**total**", [e for entries in runs.values() for e in entries], card=False)
    return (
        "## Runs\n\nEach run's figures summed over its published steps, from each step's own `coverage.json`, "
        "`versions.json` and `secret_scan.json` (ratio: exported of scored; mean reward: of exported trials with a "
        "finite, valid reward, weighed by those trials); every step's figures are in `sweep_index.json`. A blocked "
        "scope's folder holds its scan report only.\n\n" + header + "\n".join([*rows, *lines, total]) + "\n\n"
    )


def _run_row(label: str, entries: list[ScopeEntry], card: bool = True) -> str:
    totals = {key: sum(e.figures.get(key, 0) for e in entries) for key in ("trial_dirs", "scored", "exported")}
    rewarded = [e for e in entries if e.mean_reward is not None and e.rewards]
    count = sum(e.rewards for e in rewarded)
    mean = sum(e.mean_reward * e.rewards for e in rewarded if e.mean_reward is not None) / count if count else None
    steps = [e for e in entries if e.scope.step]
    verdicts = ", ".join(sorted({_cell(e.verdict) for e in entries}))
    link = f"[card]({entries[-1].scope.key}/{SCOPE_CARD})" if card else ""  # the total (no link) may have none
    name = label if not card else f"`{label}`"
    return (
        f"| {name} | {len(steps) or UNKNOWN} | {totals['trial_dirs']:,} | {totals['scored']:,} | "
        f"{totals['exported']:,} | {_ratio(totals['exported'], totals['scored'])} | {_reward(mean)} | "
        f"{verdicts if card else _plural(len(entries), 'scope')} | {link} |"
    )


def _progress(by_scope: Mapping[RunScope, ScopeEntry]) -> str:
    if not by_scope:
        return ""
    return (
        "## Progress\n\n"
        f"![mean reward and export ratio by step, a line per run]({ROOT_PLOT})\n\n"
        "Each run's mean reward (of exported trials with a valid reward) and export ratio (of scored trials) "
        "at each published step, a line per run; a run published whole is one point at step 0.\n\n"
    )


def root_plot(entries: Iterable[ScopeEntry]) -> str:
    """The card's picture (`ROOT_PLOT`): per run, each published step's mean reward and export ratio."""
    runs: dict[str, list[tuple[int, float | None, float | None]]] = {}
    for entry in sorted(entries, key=_entry_order):
        if entry.blocked or not entry.listed:
            continue
        scored, exported = entry.figures.get("scored", 0), entry.figures.get("exported", 0)
        step = _order(entry.scope)[1]
        runs.setdefault(entry.scope.run_id, []).append(
            (max(step, 0), entry.mean_reward, exported / scored if scored else None)
        )
    return sweep_progress_svg(list(runs.items()))


def _configs_prose(configs: list[dict[str, Any]], spans: list[dict[str, Any]]) -> str:
    if not configs:
        return "## Configs\n\nNo scope is published yet.\n"
    run_names = ", ".join(f"`{c['config_name']}`" for c in spans if CONFIG_SEPARATOR not in c["config_name"])
    first = configs[0]["config_name"]
    return (
        "## Configs\n\n"
        "One config per run (its name the run id), its `train` split every published step's rows, and "
        "`<run>--trials` for the steps' `trials.parquet` (its `step` column names the step)"
        + (f"; runs published as steps: {run_names}" if run_names else "")
        + ". A step alone is the dataset in its folder (`<run>/step-N/`), whose card says how to load it. "
        "Load a run with:\n\n"
        f'```python\nfrom datasets import load_dataset\n\nrows = load_dataset("<this repo or folder>", "{first}", '
        'split="train")\n```\n\n'
        "A scope's session files (whole trajectories for the Hub's trace viewer) are a dataset of their own in "
        "`<scope>/sessions/`, declared by the card there; the scope's card says how to load them.\n"
    )


def scope_keys(paths: Iterable[str], prefix: str = "") -> list[RunScope]:
    """The scopes whose folders `paths` (relative to a repo, below `prefix`) show: every valid scope
    key holding `secret_scan.json` and lying in no other such folder."""
    start = f"{prefix.strip('/')}/" if prefix.strip("/") else ""
    scopes = set()
    for path in paths:
        if not path.startswith(start) or not path.endswith("/" + SCAN_REPORT):
            continue
        key = path[len(start) : -len(SCAN_REPORT) - 1]
        try:
            scopes.add(RunScope.from_key(key))
        except InvalidScopeKey:
            continue
    keys = {scope.key for scope in scopes}
    parts = {s: s.key.split("/") for s in scopes}
    outer = [s for s in scopes if not any("/".join(parts[s][:n]) in keys for n in range(1, len(parts[s])))]
    return sorted(outer, key=_order)


def scopes_entries(scopes: Iterable[RunScope], read: ScopeReader) -> list[ScopeEntry]:
    """Each scope's entry from its folder's files through `read`: how an index is built the first
    time (a root published before the index, or one whose index was deleted to be built again)."""
    return [ScopeEntry.of(ScopeFiles.read(scope, read)) for scope in scopes]


def updated_root(
    index: str | bytes | None,
    card: str | None,
    this: ScopeFiles,
    settings: CardSettings | None,
    every_scope: Callable[[], list[ScopeEntry]],
) -> tuple[str, str, str]:
    """(index, card, plot) once `this` scope's entry is in: the index as read (`every_scope()`, the
    scope folders read once, when there is none), the card and its plot written from it. Raises
    ConfigNameClash before anything is written when this scope's config names are another's."""
    entries = index_entries(index)
    if entries is None:
        entries = [e for e in every_scope() if e.scope != this.scope]
    entries = with_entry(entries, ScopeEntry.of(this))
    return index_text(entries), root_card(entries, settings, card, this.scope.key), root_plot(entries)


def update_folder_root_card(
    root_url: str, storage_options: dict[str, Any], this: ScopeFiles, settings: CardSettings | None = None
) -> None:
    """Put `this` scope's entry in `<root_url>/sweep_index.json` and write `<root_url>/README.md` and
    its plot from it: a compare-and-swap of the index and card (see above), the plot after the card;
    the scope folders are read only when there is no index."""
    fs, root = fsspec.core.url_to_fs(root_url, **storage_options)
    root = root.rstrip("/")
    card_path, index_path, plot_path = f"{root}/{ROOT_CARD}", f"{root}/{INDEX}", f"{root}/{ROOT_PLOT}"

    def every_scope() -> list[ScopeEntry]:
        fs.invalidate_cache()  # another publish's folders, not a listing cached before it
        scopes = [scope for scope in scope_folders(fs, root) if scope != this.scope]
        return scopes_entries(scopes, _folder_reader(fs, root, scopes))

    if isinstance(fs, LocalFileSystem):
        Path(root).mkdir(parents=True, exist_ok=True)
        with hold_lock(Path(root) / ROOT_LOCK, "the root card", None):  # held for moments: waited for silently
            index = Path(index_path).read_bytes() if Path(index_path).exists() else None
            card = Path(card_path).read_text() if Path(card_path).exists() else None
            texts = zip((index_path, card_path, plot_path), updated_root(index, card, this, settings, every_scope))
            for path, text in texts:  # a crash between: the card and plot are written again next time
                with replaced_atomically(Path(path), durable=True) as temp:
                    temp.write_text(text)
        return

    # The index first, then the card from the index as it is when the card's ETag has been read: a
    # card write that loses to another's is made again from the newer index, so the last card
    # written holds every entry.
    _compare_and_swap(fs, index_path, lambda index: updated_root(index, None, this, settings, every_scope)[0].encode())
    read: list[ScopeEntry] = []

    def card_merge(card: str | None) -> bytes:
        read[:] = index_entries(_read_or_none(fs, index_path)) or []
        return root_card(read, settings, card, this.scope.key).encode()

    _compare_and_swap(fs, card_path, card_merge)
    fs.pipe_file(plot_path, root_plot(read).encode())  # of the index the card was written from


def _read_or_none(fs: Any, path: str) -> bytes | None:
    try:
        return fs.cat_file(path)
    except FileNotFoundError:
        return None


def scope_folders(fs: Any, root: str) -> list[RunScope]:
    """The scope folders under `root`: a folder holding `secret_scan.json` is one (and is not looked
    into further); any other is looked into while its path could still be a scope key. One listing a
    folder, so never a scope's data or session files; a level's folders listed `LIST_WORKERS` at a time."""

    def listing(relative: str) -> dict[str, dict[str, Any]]:
        try:
            entries = fs.ls(f"{root}/{relative}".rstrip("/"), detail=True)
        except FileNotFoundError:
            return {}
        return {entry["name"].rstrip("/").rsplit("/", 1)[-1]: entry for entry in entries}

    found, level = [], [""]
    with ThreadPoolExecutor(LIST_WORKERS) as pool:
        while level:
            below = []
            for relative, names in zip(level, pool.map(listing, level)):
                if relative and SCAN_REPORT in names:
                    found.append(RunScope.from_key(relative))  # `_could_be_scope` let it in
                    continue
                for name, entry in names.items():
                    key = f"{relative}/{name}" if relative else name
                    if entry.get("type") == "directory" and not name.startswith(".") and _could_be_scope(key):
                        below.append(key)
            level = below
    return sorted(found, key=_order)


def _could_be_scope(key: str) -> bool:
    try:
        RunScope.from_key(key)
    except InvalidScopeKey:
        return False
    return True


def _folder_reader(fs: Any, root: str, scopes: list[RunScope]) -> ScopeReader:
    """The scopes' files, fetched at once (fsspec's `cat` of a list: concurrent on object storage),
    or one by one under a root whose name holds glob characters, which `cat` would expand."""
    paths = [f"{root}/{scope.key}/{name}" for scope in scopes for name in SCOPE_FILES]
    if has_magic(root):
        files = {}
        for path in paths:
            try:
                files[path] = fs.cat_file(path)
            except FileNotFoundError:
                continue
    else:
        files = fs.cat(paths, on_error="omit") if paths else {}
    return lambda scope, name: files.get(f"{root}/{scope.key}/{name}")


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
