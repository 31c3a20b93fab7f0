"""The root card of a publish root (a folder, a bucket prefix or a shared Hub repo) holding many
scopes: a dataset card of the whole sweep, which is what the Hub shows on the repo's page.

It is written from the root's index (`sweep_index.json`): an entry per scope (`ScopeEntry`) made from
the files that scope published (its card's configs, `coverage.json`, `versions.json`,
`secret_scan.json`), never from a run's memory. The index keeps, beside each run's entries, that
run's summary (`RunSummary`: its table row, its configs' header lines, its counts, its plot lines): a
publish reads the index and the card, puts its own scope's entry in from its new files, makes its own
run's summary again (and those of runs whose config names could meet its own, `_clusters`), joins
them with the others' and writes both: its cost follows its run, not the scopes already there. With
no index (a root published before it, or an index deleted so it is built again), every
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
from dataclasses import dataclass, field, fields, replace
from glob import has_magic
from pathlib import Path
from typing import Any, NamedTuple

import fsspec
import yaml
from fsspec.implementations.local import LocalFileSystem

from trace_assets.core.scope import CONFIG_SEPARATOR, InvalidScopeKey, RunScope
from trace_assets.publishing.card import CardSettings
from trace_assets.publishing.card_facts import size_category
from trace_assets.publishing.plots import (
    RATIO_TITLE,
    REWARD_TITLE,
    Extent,
    chart_extent,
    line_chart_svg,
    line_path,
    points_extent,
    stacked_svg,
)
from trace_assets.publishing.versions import last_version
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

# huggingface_hub's `repocard.REGEX_YAML_BLOCK` (2.x), `^(\s*---(?:\r\n|\r|\n))([\S\s]*?)((?:\r\n|\r|\n)---[ \t]*(\r\n|\n|$))`,
# finds a card's YAML header: its opening line, then the header up to the first line of `---`.
_HEADER_OPENING = re.compile(r"\s*---(?:\r\n|\r|\n)")


def yaml_header(text: str) -> str | None:
    """The header `REGEX_YAML_BLOCK` finds in a card (its second group), None for none: its closing
    line found by `str.find`, as the regex's lazy group took 10 ms to reach it in a root card of
    thousands of scopes (a test holds the two equal)."""
    opening = _HEADER_OPENING.match(text)
    if opening is None:
        return None
    start = dashes = opening.end()
    while (dashes := text.find("---", dashes)) >= 0:
        line_break = dashes - 2 if text.startswith("\r\n", dashes - 2) else dashes - 1
        if line_break >= start and text[dashes - 1] in "\r\n" and _closes(text, dashes + 3):
            return text[start:line_break]
        dashes += 1
    # the regex's last try: the opening line's `\r\n` read as `\r`, its `\n` the closing line's break
    if opening.group().endswith("\r\n") and text.startswith("---", start) and _closes(text, start + 3):
        return ""
    return None


def _closes(text: str, end: int) -> bool:
    """`text` past a line's `---` (at `end`) ends that line: spaces or tabs, then a line break or the end."""
    while text.startswith((" ", "\t"), end):
        end += 1
    return end == len(text) or text.startswith(("\n", "\r\n"), end)


def card_header(text: str | None) -> dict[str, Any]:
    """A card's YAML header as `huggingface_hub`'s `RepoCard(text).data.to_dict()` reads it (LF or CRLF
    line endings; keys whose value is null left out), {} when there is no card or no header. Done
    here, not by `RepoCard`, whose import took 0.9 s of every publish to a folder. A byte order mark,
    which some editors write, is dropped first: the Hub's reader would take the header for text.
    Raises ValueError (or yaml.YAMLError) for a header `RepoCard` refuses: not a mapping, or a key
    that is not a string (YAML's `on:` or `yes:` read as true, a number)."""
    header = yaml_header((text or "").removeprefix("\ufeff"))
    if header is None:
        return {}
    data = yaml.load(header, Loader=_SAFE_LOADER)
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
        """The version published (none for a blocked scope: its history names only withdrawn ones)."""
        entries = (self.versions or {}).get("versions")
        if self.blocked or not isinstance(entries, list):
            return {}
        return last_version(entries) or {}


# The `configs` key of a header as yaml.dump writes it: its line, then the lines of its value (list
# items and their indented lines).
_CONFIGS_KEY = re.compile(r"^configs:[^\n]*\n(?:(?:- | )[^\n]*(?:\n|$))*", re.M)


def owner_header(card: str | None) -> dict[str, Any]:
    """`readable_header` of the root card now there, but for its `configs` (which the card writes
    again, and which is most of its header at thousands of scopes): their lines are cut before the
    rest is read. A header whose rest is unreadable once they are cut is read whole."""
    text = yaml_header((card or "").removeprefix("\ufeff"))
    configs = _CONFIGS_KEY.search(text) if text is not None else None
    if text is None or configs is None:
        return readable_header(card)
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
INDEX_FORMAT = 3  # 3: entries grouped by run, each run's summary beside them (2: compact entries, no summaries)


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


def with_entry(entries: Iterable[ScopeEntry], this: ScopeEntry) -> list[ScopeEntry]:
    """The index's entries with `this` scope's replaced (or added)."""
    return [*(e for e in entries if e.scope != this.scope), this]


def _entry_order(entry: ScopeEntry) -> tuple[str, int, str]:
    return _order(entry.scope)


_ENCODE = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
_INDEX_START = f'{{"format": {INDEX_FORMAT}, "runs": [\n'
_INDEX_END = "\n]}\n"
_RUN_START = '\n{"run":'  # a run's line in the index: its id, its summary, then its entries a line each


class Figures(NamedTuple):
    """A table row's sums over a run's published scopes, or the total's over every run's."""

    scopes: int = 0
    steps: int = 0
    trial_dirs: int = 0
    scored: int = 0
    exported: int = 0
    rewards: int = 0  # trials with a reward, of the scopes that have a mean reward
    reward_sum: float = 0.0  # their rewards' sum (each scope's mean reward times its rewarded trials)

    @classmethod
    def of(cls, entries: list[ScopeEntry]) -> Figures:
        rewarded = [e for e in entries if e.mean_reward is not None and e.rewards]
        return cls(
            len(entries),
            sum(1 for e in entries if e.scope.step),
            sum(e.figures.get("trial_dirs", 0) for e in entries),
            sum(e.figures.get("scored", 0) for e in entries),
            sum(e.figures.get("exported", 0) for e in entries),
            sum(e.rewards for e in rewarded),
            sum(e.mean_reward * e.rewards for e in rewarded if e.mean_reward is not None),
        )

    @classmethod
    def summed(cls, figures: Iterable[Figures]) -> Figures:
        """The total of runs' figures (its reward sum the runs' sums added up)."""
        totals = list(zip(*figures))
        return cls(*map(sum, totals)) if totals else cls()


# A run's two lines on the plot (mean reward, export ratio in %), as (step, value) points.
PlotLines = tuple[list[tuple[int, float]], list[tuple[int, float]]]


@dataclass(frozen=True)
class RunSummary:
    """What the root card and its plot say of one run, made from its entries and kept beside them in
    the index, so that a publish makes again only its own run's (and those of runs whose config names
    could be its own, see `_clusters`) and joins the rest: its cost follows its run, not the root.
    `configs` (each with its header lines) and `step_runs` are a cluster's, kept on its first run."""

    scopes: int  # its entries in the index
    listed: int
    blocked: int  # listed and blocked
    published: int  # listed, not blocked, config names not another's: its row's scopes
    rows: int  # the published scopes' rows
    row: str  # its table row, "" when none is published
    blocked_rows: list[str]
    figures: Figures
    configs: list[tuple[str, str]]  # (config name, its lines in the header)
    step_runs: list[str]  # the run configs the card's prose names
    plotted: bool  # a line on the plot (a listed scope not blocked)
    extents: tuple[Extent | None, Extent | None]  # of its plot lines' points
    drawn: tuple[tuple[Extent, str] | None, tuple[Extent, str] | None]  # its lines' paths, on the axes named
    lines: PlotLines | None = field(default=None, compare=False)  # its points, when made from its entries

    @classmethod
    def of(
        cls,
        entries: list[ScopeEntry],
        published: list[ScopeEntry],
        configs: list[tuple[str, str]],
        step_runs: list[str],
    ) -> RunSummary:
        listed = [e for e in entries if e.listed]
        plotted = [e for e in listed if not e.blocked]
        lines = _plot_lines(plotted)
        return cls(
            len(entries),
            len(listed),
            sum(e.blocked for e in listed),
            len(published),
            sum(e.figures.get("rows", 0) for e in published),
            _run_row(
                f"`{published[-1].scope.run_id}`",
                Figures.of(published),
                _verdicts(published),
                f"[card]({published[-1].scope.key}/{SCOPE_CARD})",
            )
            if published
            else "",
            [_blocked_row(e) for e in entries if e.blocked],
            Figures.of(published),
            configs,
            step_runs,
            bool(plotted),
            (points_extent(lines[0]), points_extent(lines[1])),
            (None, None),
            lines,
        )

    def as_json(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in _SUMMARY_FIELDS}

    @classmethod
    def from_json(cls, value: dict[str, Any]) -> RunSummary:
        """Raises KeyError, TypeError or ValueError for a summary it cannot be."""
        extents = tuple(None if e is None else _extent(e) for e in value["extents"])
        drawn = tuple(None if d is None else (_extent(d[0]), str(d[1])) for d in value["drawn"])
        if len(extents) != 2 or len(drawn) != 2:
            raise ValueError("a run summary has two plot lines")
        return cls(
            int(value["scopes"]),
            int(value["listed"]),
            int(value["blocked"]),
            int(value["published"]),
            int(value["rows"]),
            str(value["row"]),
            [str(row) for row in value["blocked_rows"]],
            Figures(*value["figures"]),
            [(str(name), str(text)) for name, text in value["configs"]],
            [str(name) for name in value["step_runs"]],
            value["plotted"] is True,
            (extents[0], extents[1]),
            (drawn[0], drawn[1]),
        )


_SUMMARY_FIELDS = [f.name for f in fields(RunSummary) if f.name != "lines"]


def _extent(value: Any) -> Extent:
    low_x, high_x, low_y, high_y = (float(v) for v in value)
    return low_x, high_x, low_y, high_y


def _plot_lines(entries: list[ScopeEntry]) -> PlotLines:
    """Each entry's point on the plot's two lines (a run published whole at step 0)."""
    reward, ratio = [], []
    for entry in entries:
        step = max(_order(entry.scope)[1], 0)
        if entry.mean_reward is not None:
            reward.append((step, entry.mean_reward))
        scored, exported = entry.figures.get("scored", 0), entry.figures.get("exported", 0)
        if scored:
            ratio.append((step, 100 * (exported / scored)))
    return reward, ratio


@dataclass
class SweepIndex:
    """The root's index (`INDEX`) as read or made: per run, its summary and its entries' lines, each
    parsed only when a publish changes that run. The file: `{"format": 3, "runs": [...]}`, a run a
    line (`{"run": <id>, "summary": {...}, "scopes": [`), then its entries a line each (a diff per
    scope); a run read from the file keeps its text there, so a publish encodes its own run's alone."""

    summaries: dict[str, RunSummary]
    entry_lines: dict[str, str]  # a run's entries' lines, as the file holds them
    heads: dict[str, str] = field(default_factory=dict)  # a run's line, for runs whose summary is as read

    @classmethod
    def read(cls, text: str | bytes | None) -> SweepIndex | None:
        """None when there is no index or it is not one this code wrote (then it is built again from
        the scope folders); an entry is read when its run is (`entries`)."""
        if text is None:
            return None
        text = text.decode("utf-8", "replace") if isinstance(text, bytes) else text
        if not text.startswith(_INDEX_START) or not text.endswith(_INDEX_END):
            return None
        index = cls({}, {})
        for chunk in text[len(_INDEX_START) - 1 : -len(_INDEX_END)].split(_RUN_START)[1:]:
            head, _, lines = chunk.partition("\n")
            lines = lines.removesuffix(",").removesuffix("\n]}")
            try:
                value = json.loads(f'{{"run":{head}]}}')
                run, summary = str(value["run"]), RunSummary.from_json(value["summary"])
            except (ValueError, KeyError, TypeError):
                return None
            if lines.count("\n") + 1 != summary.scopes or run in index.summaries:
                return None
            index.summaries[run], index.entry_lines[run], index.heads[run] = summary, lines, head
        return index if index.summaries else None

    @classmethod
    def of(cls, entries: Iterable[ScopeEntry], this: str = "") -> SweepIndex:
        """The index of `entries` (`this`: the scope being published, see `_summaries`)."""
        ordered = sorted(entries, key=_entry_order)
        by_run: dict[str, list[ScopeEntry]] = {}
        for entry in ordered:
            by_run.setdefault(entry.scope.run_id, []).append(entry)
        index = cls({}, {})
        for cluster in _clusters(by_run):
            index._put([e for run in sorted(cluster) for e in by_run[run]], this)
        return index

    def _put(self, entries: list[ScopeEntry], this: str) -> None:
        """One cluster's entries (in the card's order) and summaries in place of any it had."""
        for run, summary in _summaries(entries, this).items():
            self.summaries[run] = summary
            self.heads.pop(run, None)
        encode, by_run = _ENCODE, dict[str, list[str]]()
        for entry in entries:
            by_run.setdefault(entry.scope.run_id, []).append(entry.line or encode(entry.as_json()))
        self.entry_lines.update((run, ",\n".join(lines)) for run, lines in by_run.items())

    def entries(self, runs: Iterable[str] | None = None) -> list[ScopeEntry] | None:
        """The entries of `runs` (of every run by default), in the card's order; None when a run's
        lines do not parse (an entry that cannot be one is left out)."""
        entries = []
        for run in sorted(self.summaries if runs is None else runs):
            lines = self.entry_lines[run]
            try:
                values = json.loads(f"[{lines}]")
            except ValueError:
                return None
            for line, value in zip(lines.split("\n"), values):
                try:
                    entry = ScopeEntry.from_json(value, line.removesuffix(","))
                except (ValueError, KeyError, TypeError, AttributeError):
                    continue
                entries.append(
                    entry if entry.line.startswith(f'{{"scope":"{entry.scope.key}",') else replace(entry, line="")
                )
        return entries

    def with_entry(self, this: ScopeEntry) -> SweepIndex | None:
        """The index with `this` scope's entry put in: its run's cluster (`_clusters`) read and summed
        up again, the other runs as they are. None when that cluster's lines do not parse. Raises
        ConfigNameClash when this scope's config names are another's."""
        run = this.scope.run_id
        [cluster] = [c for c in _clusters([*self.summaries, run]) if run in c]
        entries = self.entries([r for r in cluster if r in self.summaries])
        if entries is None:
            return None
        updated = SweepIndex(dict(self.summaries), dict(self.entry_lines), dict(self.heads))
        updated._put(sorted(with_entry(entries, this), key=_entry_order), this.scope.key)
        return updated

    def text(self) -> str:
        """The index file (see the class's docstring)."""
        runs = []
        for run in sorted(self.summaries):
            head = (
                self.heads.get(run) or f'{_ENCODE(run)},"summary":{_ENCODE(self.summaries[run].as_json())},"scopes":['
            )
            runs.append(f'{{"run":{head}\n{self.entry_lines[run]}\n]}}')
        return _INDEX_START + ",\n".join(runs) + _INDEX_END

    def card(self, settings: CardSettings | None = None, existing: str | None = None) -> str:
        """The root card (see the module's docstring); `existing`: the card now there, whose other
        header keys and tags are kept."""
        settings = settings or CardSettings()
        summaries = [self.summaries[run] for run in sorted(self.summaries)]
        configs = sorted((c for s in summaries for c in s.configs), key=lambda c: c[0])
        header = owner_header(existing)
        ours: dict[str, Any] = {
            "license": settings.license,
            "pretty_name": _title(settings),
            "language": list(settings.language),
            "task_categories": list(settings.task_categories),
            "size_categories": [size_category(sum(s.rows for s in summaries))],
            "configs": [lines for _, lines in configs],
            "tags": _tags(header),
        }
        theirs = {key: value for key, value in header.items() if key not in OUR_KEYS}
        return (
            f"---\n{_dumped({**ours, **theirs})}---\n\n# {_title(settings)}\n\n"
            + (f"{settings.intro.strip()}\n\n" if settings.intro.strip() else "")
            + _description(summaries)
            + _provenance(settings)
            + _table(summaries)
            + _progress(summaries)
            + _configs_prose([name for name, _ in configs], [name for s in summaries for name in s.step_runs])
        )

    def plot(self) -> str:
        """The card's picture (`ROOT_PLOT`): per run, each published step's mean reward and export
        ratio. A run's lines drawn on other axes (the first publish past the sweep's last step, say)
        are drawn again, from its entries, and kept in its summary."""
        runs = [run for run in sorted(self.summaries) if self.summaries[run].plotted]
        charts = []
        for chart, title in enumerate((REWARD_TITLE, RATIO_TITLE)):
            extent = chart_extent([self.summaries[run].extents[chart] for run in runs])
            series = []
            for run in runs:
                summary = self.summaries[run]
                drawn = summary.drawn[chart]
                if drawn is None or drawn[0] != extent:
                    lines = summary.lines or _plot_lines(
                        [e for e in self.entries([run]) or [] if e.listed and not e.blocked]
                    )
                    drawn = (extent, line_path(lines[chart], extent))
                    both = (drawn, summary.drawn[1]) if chart == 0 else (summary.drawn[0], drawn)
                    self.summaries[run] = replace(summary, drawn=both, lines=lines)
                    self.heads.pop(run, None)
                series.append((run, drawn[1]))
            charts.append(line_chart_svg(title, series, extent, "step"))
        return stacked_svg(charts[0], charts[1])


def _clusters(runs: Iterable[str]) -> list[list[str]]:
    """The runs in groups no config name crosses: every config name of a run's scopes and of the run
    is its config name (the run id, `/` as `--`), or that and `--` and more; two runs whose names
    could meet have config names one of which is the other's, the other's and `-`, or starts with
    the other's and `--`. Sorted by config name, such runs follow the shortest of them."""
    clusters: list[list[str]] = []
    first = None
    for name, run in sorted((RunScope(run).config_name, run) for run in set(runs)):
        if first is not None and (name in (first, f"{first}-") or name.startswith(first + CONFIG_SEPARATOR)):
            clusters[-1].append(run)
        else:
            first = name
            clusters.append([run])
    return clusters


def _summaries(files: list[ScopeEntry], this: str) -> dict[str, RunSummary]:
    """A cluster's runs' summaries from its entries (in the card's order). `this`: the scope being
    published, whose config names must not clash with another scope's (another pair that clashes
    keeps the first); raises ConfigNameClash."""
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
    whole_runs = [c for scope, e in by_scope.items() if scope.step is None for c in e.named_configs]
    configs = [(c["config_name"], _config_lines(c)) for c in [*whole_runs, *spans]]  # a step's are its run's
    step_runs = [c["config_name"] for c in spans if CONFIG_SEPARATOR not in c["config_name"]]
    runs: dict[str, list[ScopeEntry]] = {}
    for entry in files:
        runs.setdefault(entry.scope.run_id, []).append(entry)
    return {
        run: RunSummary.of(
            entries, [e for e in entries if e.scope in by_scope], *((configs, step_runs) if n == 0 else ([], []))
        )
        for n, (run, entries) in enumerate(runs.items())
    }


def index_entries(text: str | bytes | None) -> list[ScopeEntry] | None:
    """The entries of an index file, None when there is none or it cannot be read (then it is
    built again from the scope folders); an entry that cannot be read is left out."""
    index = SweepIndex.read(text)
    return index.entries() if index is not None else None


def index_text(entries: Iterable[ScopeEntry]) -> str:
    """The index file of `entries` (an entry read from an index keeps its line)."""
    return SweepIndex.of(entries).text()


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
    return SweepIndex.of(entries, this).card(settings, existing)


# A data file path yaml.dump writes as it is, alone on its line: segments of letters, digits and `._*-`,
# at least two (the `/` keeps it from reading as a number, a date or a boolean).
_PLAIN_PATH = re.compile(r"[A-Za-z0-9][A-Za-z0-9._*-]*(?:/[A-Za-z0-9._*-]+)+")
_PATHS_MARKER = "trace-assets-paths/5f0c9d4e7a1b/"  # stands for a list of paths while the rest is dumped
_CONFIG_MARKER = "trace-assets-config/5f0c9d4e7a1b/"  # stands for a config's lines while the header is dumped


def _config_lines(config: dict[str, Any]) -> str:
    """A config's lines in the header's `configs` (`- config_name: ...`), as yaml.dump (libyaml's)
    writes them, its lists of plain paths written line by line here: a run's config names every
    step's files, and yaml.dump's pure-Python representer took most of a publish's time at thousands
    of steps (a test holds the two equal). Made when a run's summary is, kept in it."""
    lists: list[list[str]] = []
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
    text = yaml.dump([{**config, "data_files": files}], Dumper=_SAFE_DUMPER, sort_keys=False, allow_unicode=True)
    return re.sub(
        rf"^( *- ){re.escape(_PATHS_MARKER)}([0-9]+)\n",
        lambda match: "".join(f"{match[1]}{path}\n" for path in lists[int(match[2])]),
        text,
        count=len(lists),
        flags=re.M,
    )


def _dumped(header: dict[str, Any]) -> str:
    """`yaml.dump(header)` (libyaml's), its `configs` given as each config's lines (`_config_lines`)."""
    configs = header["configs"]
    markers = [f"{_CONFIG_MARKER}{n}" for n in range(len(configs))]
    text = yaml.dump({**header, "configs": markers}, Dumper=_SAFE_DUMPER, sort_keys=False, allow_unicode=True)
    return re.sub(
        rf"^- {re.escape(_CONFIG_MARKER)}([0-9]+)\n",
        lambda match: configs[int(match[1])],
        text,
        count=len(configs),
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


def _description(summaries: list[RunSummary]) -> str:
    listed = sum(s.listed for s in summaries)
    runs = sum(1 for s in summaries if s.listed)
    blocked = sum(s.blocked for s in summaries)
    told = f"{_plural(listed, 'scope')} of {_plural(runs, 'run')}"
    published = sum(s.published for s in summaries)
    states = f"{published:,} published" + (f", {blocked:,} blocked by the secret scan" if blocked else "")
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


def _table(summaries: list[RunSummary]) -> str:
    """A row per run (its published steps' figures summed, its mean reward weighed by rewarded
    trials) and per blocked scope, then the total: the card's size follows the runs, not the steps."""
    header = (
        "| run | steps | trial folders | scored | exported | ratio | mean reward | verdicts | card |\n"
        "|---|--:|--:|--:|--:|--:|--:|---|---|\n"
    )
    rows = [s.row for s in summaries if s.row]
    blocked = [row for s in summaries for row in s.blocked_rows]
    figures = Figures.summed(s.figures for s in summaries)
    total = _run_row("**total**", figures, _plural(figures.scopes, "scope"), "")
    return (
        "## Runs\n\nEach run's figures summed over its published steps, from each step's own `coverage.json`, "
        "`versions.json` and `secret_scan.json` (ratio: exported of scored; mean reward: of exported trials with a "
        "finite, valid reward, weighed by those trials); every step's figures are in `sweep_index.json`. A blocked "
        "scope's folder holds its scan report and version history only.\n\n"
        + header
        + "\n".join([*rows, *blocked, total])
        + "\n\n"
    )


def _blocked_row(entry: ScopeEntry) -> str:
    key = entry.scope.key
    return (
        f"| `{key}` | {UNKNOWN} | {UNKNOWN} | {UNKNOWN} | {UNKNOWN} | {UNKNOWN} | {UNKNOWN} | "
        f"blocked: {_cell(entry.verdict)} | [scan report]({key}/{SCAN_REPORT}) |"
    )


def _verdicts(entries: list[ScopeEntry]) -> str:
    return ", ".join(sorted({_cell(e.verdict) for e in entries}))


def _run_row(name: str, figures: Figures, verdicts: str, link: str) -> str:
    mean = figures.reward_sum / figures.rewards if figures.rewards else None
    return (
        f"| {name} | {figures.steps or UNKNOWN} | {figures.trial_dirs:,} | {figures.scored:,} | "
        f"{figures.exported:,} | {_ratio(figures.exported, figures.scored)} | {_reward(mean)} | {verdicts} | {link} |"
    )


def _progress(summaries: list[RunSummary]) -> str:
    if not any(s.published for s in summaries):
        return ""
    return (
        "## Progress\n\n"
        f"![mean reward and export ratio by step, a line per run]({ROOT_PLOT})\n\n"
        "Each run's mean reward (of exported trials with a valid reward) and export ratio (of scored trials) "
        "at each published step, a line per run; a run published whole is one point at step 0.\n\n"
    )


def root_plot(entries: Iterable[ScopeEntry]) -> str:
    """The card's picture (`ROOT_PLOT`): per run, each published step's mean reward and export ratio."""
    return SweepIndex.of(entries).plot()


def _configs_prose(configs: list[str], step_runs: list[str]) -> str:
    if not configs:
        return "## Configs\n\nNo scope is published yet.\n"
    run_names = ", ".join(f"`{name}`" for name in step_runs)
    first = configs[0]
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
    scope folders read once, when there is none or its run's lines do not parse), the card and its
    plot written from it. Raises ConfigNameClash before anything is written when this scope's config
    names are another's."""
    entry = ScopeEntry.of(this)
    read = SweepIndex.read(index)
    updated = read.with_entry(entry) if read is not None else None
    if updated is None:
        others = [e for e in every_scope() if e.scope != this.scope]
        updated = SweepIndex.of(with_entry(others, entry), this.scope.key)
    plot = updated.plot()  # before the index's text, which keeps the lines it draws
    return updated.text(), updated.card(settings, card), plot


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
    read = [SweepIndex({}, {})]

    def card_merge(card: str | None) -> bytes:
        read[0] = SweepIndex.read(_read_or_none(fs, index_path)) or SweepIndex({}, {})
        return read[0].card(settings, card).encode()

    _compare_and_swap(fs, card_path, card_merge)
    fs.pipe_file(plot_path, read[0].plot().encode())  # of the index the card was written from


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
