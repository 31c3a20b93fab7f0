"""The Hugging Face dataset card: a YAML header the Hub and `datasets` read, then the run in prose."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import resources
from string import Template
from typing import Any, Literal

import pyarrow as pa
import yaml

from trace_assets.core.accounting import REASON_DESCRIPTIONS, Coverage, Reason
from trace_assets.harbor.options import ExportOptions
from trace_assets.publishing.blocked_version import PreviousVersion
from trace_assets.publishing.card_facts import CardFacts, Distribution, count, size_category, size_text
from trace_assets.publishing.sessions_card import sessions_prose
from trace_assets.publishing.shards import ShardSet
from trace_assets.publishing.versions import BLOCK, is_block
from trace_assets.secret_scan.verdicts import RunVerdict
from trace_assets.steps.sessions import SessionCounts

TRIALS_CONFIG = "trials"
TRIALS_FILE = "trials.parquet"
REWARD_PLOT, TURNS_PLOT = "plots/rewards.svg", "plots/turns.svg"
TEMPLATES_DIR = "templates"  # package data beside this module (pyproject.toml's package-data)
CARD_TEMPLATE = "card.md"  # the scope card's prose around the figures; see `fill_template`


@dataclass(frozen=True)
class CardSettings:
    """What the card says that the data cannot: set in the resource (or `TRACE_ASSETS_CARD_*`)."""

    license: str = "unknown"  # a Hub license id; the pipeline cannot know the traces' terms
    pretty_name: str = ""  # default: "<run> step <N> traces of <model>" (see `card_title`)
    language: tuple[str, ...] = ("en",)
    task_categories: tuple[str, ...] = ("text-generation",)
    framework: str = ""  # the training framework, e.g. "SkyRL"
    task_source: str = ""  # where the tasks came from, e.g. a benchmark's name and URL
    model: str = ""  # the trained model's id, e.g. "Qwen/Qwen3-30B-A3B"
    intro: str = ""  # free prose placed first under the title


@dataclass(frozen=True)
class CardContext:
    """Everything beyond the run's files the card is written from."""

    settings: CardSettings = field(default_factory=CardSettings)
    facts: CardFacts = field(default_factory=CardFacts)
    earlier_versions: list[dict[str, Any]] = field(default_factory=list)  # the published history (`versions`)
    published_at: str | None = None  # this version's date; None leaves it unrecorded (deterministic bytes)
    repo_id: str = ""  # for the usage snippet; a placeholder when unknown
    plots: bool = False  # the reward and turn plots were written beside the card
    location: str = ""  # where the scope is published (`PublishTarget.location`), for the sessions' paths
    # The trials the card shows no row of: a finding of the scan's (`SecretScanner.flagged_trials`),
    # whatever the policies replaced; None when the scan's record of them could not be read.
    flagged_trials: frozenset[str] | None = frozenset()


def _feature(arrow_type: pa.DataType) -> dict[str, Any]:
    """Arrow type -> the `dataset_info.features` entry `datasets` writes for it."""
    if pa.types.is_list(arrow_type) or pa.types.is_large_list(arrow_type):
        item = arrow_type.value_type
        if pa.types.is_struct(item):
            return {"list": [{"name": f.name, **_feature(f.type)} for f in item]}
        return {"list": _feature(item)}
    if pa.types.is_struct(arrow_type):
        return {"struct": [{"name": f.name, **_feature(f.type)} for f in arrow_type]}
    if pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type):
        return {"dtype": "string"}
    if pa.types.is_floating(arrow_type):
        return {"dtype": f"float{arrow_type.bit_width}"}
    if pa.types.is_integer(arrow_type):
        return {"dtype": f"int{arrow_type.bit_width}"}
    if pa.types.is_boolean(arrow_type):
        return {"dtype": "bool"}
    raise TypeError(f"no dataset feature for Arrow type {arrow_type}")


# An extra config (a subagent kind under `--subagents separate`): its data folder, rows and shards.
Subsets = Mapping[str, tuple[str, pa.Schema, ShardSet]]


def _info(schema: pa.Schema, shards: ShardSet) -> dict[str, Any]:
    return {
        "features": [{"name": f.name, **_feature(f.type)} for f in schema],
        "splits": [{"name": "train", "num_bytes": shards.num_bytes, "num_examples": shards.num_examples}],
        "download_size": shards.download_size,
        "dataset_size": shards.num_bytes,
    }


def card_header(
    schema: pa.Schema,
    shards: ShardSet,
    subsets: Subsets | None = None,
    settings: CardSettings | None = None,
    pretty_name: str = "",
) -> dict[str, Any]:
    """Every config is Parquet: `datasets` reads a card's configs with one builder, so the session
    files (JSON Lines) are declared by a card of their own (see `publishing.sessions_card`)."""
    settings = settings or CardSettings()
    configs = [{"config_name": "default", "data_files": [{"split": "train", "path": shards.data_files}]}]
    info: dict[str, Any] | list[dict[str, Any]] = _info(schema, shards)
    if subsets:
        configs += [
            {"config_name": name, "data_files": [{"split": "train", "path": sub_shards.data_files}]}
            for name, (_, _, sub_shards) in subsets.items()
        ]
        info = [{"config_name": "default", **_info(schema, shards)}] + [
            {"config_name": name, **_info(sub_schema, sub_shards)}
            for name, (_, sub_schema, sub_shards) in subsets.items()
        ]
    configs.append({"config_name": TRIALS_CONFIG, "data_files": [{"split": "train", "path": TRIALS_FILE}]})
    return {
        "license": settings.license,
        "pretty_name": pretty_name or _one_line(settings.pretty_name),
        "language": list(settings.language),
        "task_categories": list(settings.task_categories),
        "size_categories": [size_category(shards.num_examples)],
        "configs": configs,
        "dataset_info": info,
        "tags": ["harbor", "agent-traces", "reinforcement-learning"],
    }


def intro_prose(options: ExportOptions, schema: pa.Schema) -> str:
    """What a row is and the Harbor command that writes the same columns, from the options and schema."""
    default_flags = ExportOptions().harbor_flags()
    flags = options.harbor_flags()
    command = " ".join(flags[:1] + [flag for flag in flags[1:] if flag not in default_flags])
    rows = (
        "One row per exported trial: its last episode"
        if options.episodes == "last"
        else "One row per episode of each exported trial (`episode` numbers them across continuations)"
    )
    subagents = {
        "none": "",
        "merged": ", plus one row per subagent conversation (`trace_source` names its kind)",
        "separate": " (subagent conversations are in a config per kind)",
    }[options.subagents]
    columns = ", ".join(f.name for f in schema if f.name != "conversations")
    return (
        f"{rows} as an OpenAI-style `conversations` list{subagents}, "
        f"with the same columns `harbor traces export {command}` writes ({columns})."
    )


def options_prose(options: ExportOptions, shards: ShardSet, subsets: Subsets) -> str:
    """The export options in force, when they are not the defaults, and the extra configs."""
    flags = ", ".join(f"`{flag}`" for flag in options.harbor_flags())
    paragraphs = [f"Exported with these options (Harbor's flag names): {flags}."]
    if options.success_filter != "all":
        paragraphs.append(
            f"Only trials whose reward is {'above' if options.success_filter == 'success' else 'not above'} 0 "
            "were exported (an exception counts as a failure, as in Harbor); the rest are `filtered_out` below."
        )
    if options.sharegpt:
        paragraphs.append("`conversations_sharegpt` holds the same messages in ShareGPT form (`human`/`gpt`).")
    if subsets:
        table = [
            "| config | rows | files |",
            "|---|---:|---|",
            f"| `default` (main agent) | {shards.num_examples:,} | `data/` |",
        ]
        table += [f"| `{name}` | {sub.num_examples:,} | `{folder}/` |" for name, (folder, _, sub) in subsets.items()]
        paragraphs.append("\n".join(table))
    return "\n\n".join(paragraphs)


COLUMN_MEANINGS = {
    "conversations": "the episode's messages in order, each `{role, content}` (system, user, assistant)",
    "conversations_sharegpt": "the same messages in ShareGPT form (`from`: `human`/`gpt`, `value`)",
    "agent": "the agent that ran the trial (result.json `agent_info.name`)",
    "model": "the served model the agent called",
    "model_provider": "the model's provider, as the agent named it",
    "date": "when the trial started (result.json `started_at`)",
    "task": "the task's name",
    "episode": "the episode the row holds (`episode-N`), counted across continuations",
    "run_id": "the Harbor job the trial ran in",
    "trial_name": "the trial folder's name, unique in the run",
    "result": "the trial's reward as text, or, when the trial ended in an exception and has no reward, "
    "the exception's class name",
    "instruction": "the task's instruction as the agent received it",
    "verifier_output": "the verifier's stdout then stderr",
    "trace_source": "`main` for the agent's own conversation, else the subagent kind (e.g. a context summarization)",
}


def type_name(arrow_type: pa.DataType) -> str:
    feature = _feature(arrow_type)
    if "list" in feature and isinstance(feature["list"], list):
        return "list of {" + ", ".join(f"{item['name']}: {item.get('dtype', '...')}" for item in feature["list"]) + "}"
    return str(feature.get("dtype", arrow_type))


def fields_prose(schema: pa.Schema) -> str:
    lines = ["| column | type | meaning |", "|---|---|---|"]
    lines += [f"| `{f.name}` | {type_name(f.type)} | {COLUMN_MEANINGS.get(f.name, '')} |" for f in schema]
    lines += [
        "",
        f"The `{TRIALS_CONFIG}` config (`{TRIALS_FILE}`) has one row per trial folder, exported or not: "
        "`status` (`exported`/`excluded`), `reason` (a code from the coverage table below) and `detail`.",
    ]
    return "\n".join(lines)


def usage_name(location: str) -> str:
    """What `load_dataset` is given for a published location: a Hub repo id, or the folder."""
    prefix = "hf://datasets/"
    return location[len(prefix) :].split("@")[0] if location.startswith(prefix) else location


def usage_prose(repo_id: str, subsets: Subsets) -> str:
    repo = repo_id or "<org>/<name>"
    extra = "".join(f'\n{name.replace("-", "_")} = load_dataset("{repo}", "{name}", split="train")' for name in subsets)
    return (
        "```python\n"
        "from datasets import load_dataset\n\n"
        f'rows = load_dataset("{repo}", split="train")\n'
        f'trials = load_dataset("{repo}", "{TRIALS_CONFIG}", split="train")  # every folder, with its reason'
        f"{extra}\n"
        'print(rows[0]["conversations"][-1]["content"])\n'
        "```"
    )


CODE_CHARS = 100  # of a value from the trial folders shown in the card
NAMES_SHOWN = 20
_UNPRINTABLE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def code_span(text: str) -> str:
    """A value from the trial folders as one inline code span that cannot break the card's Markdown:
    control characters and line breaks escaped (`\\x0a`), cut at CODE_CHARS, fenced by more backticks
    than it holds in a row (HTML, `|`, `---` and `{{` are literal text in a code span)."""
    text = text if len(text) <= CODE_CHARS else text[:CODE_CHARS] + "…"
    text = _UNPRINTABLE.sub(_escaped, text)
    fence = "`" * (max((len(run) for run in re.findall("`+", text)), default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def code_block(text: str, info: str = "") -> str:
    """Text as a fenced code block that cannot break the card: fenced by more backticks than it
    holds in a row (at least three), so no line of it can close the fence."""
    fence = "`" * max(3, max((len(run) for run in re.findall("`+", text)), default=0) + 1)
    return f"{fence}{info}\n{text}\n{fence}"


EXAMPLE_CHARS = 200  # of each text of the example row
EXAMPLE_HEAD, EXAMPLE_TAIL = 4, 2  # the messages shown of a longer conversation: its first and its last


# Why a scope with rows shows none: every trial holds a finding, or the record of them is unread.
Withheld = Literal["every_trial_flagged", "flags_unknown"]
_WITHHELD = {
    "every_trial_flagged": "the secret scan found a credential-shaped string or a private value in every trial",
    "flags_unknown": "the secret scan's record of which trials hold a credential-shaped string or a private "
    "value could not be read",
}


@dataclass(frozen=True)
class Example:
    """The row the card shows, as `rows[index]` gives it: the first from a trial where the scan found
    nothing (`flagged_trials`); `row` None with `withheld` when no row is shown though there are rows."""

    row: Mapping[str, Any] | None
    index: int = 0
    withheld: Withheld | None = None


def example_prose(example: Example | None) -> str:
    """The example row, as `rows[i]` gives it, shortened: each text cut at EXAMPLE_CHARS, a long
    conversation's middle messages left out. JSON with every character that could break a line
    escaped (`\u2028`), in a fence no text can close. Nothing for a scope with no row; why, when no
    row is shown though there are rows (the card is the dataset's front page: it shows no finding,
    kept or replaced)."""
    if example is None:
        return ""
    if example.row is None:
        if example.withheld is None:
            return ""
        return (
            f"No example row is shown: {_WITHHELD[example.withheld]}, and this card, the dataset's front page, "
            "shows no row from such a trial, whatever was replaced (the findings are counted in `secret_scan.json`)."
        )
    row = example.row
    messages = len(row.get("conversations") or [])
    cut = (
        f"; of its {messages:,} messages, the first {EXAMPLE_HEAD} and the last {EXAMPLE_TAIL} are shown"
        if messages > EXAMPLE_HEAD + EXAMPLE_TAIL
        else ""
    )
    lines = ["{"]
    for index, (key, value) in enumerate(row.items()):
        comma = "," if index < len(row) - 1 else ""
        if isinstance(value, list) and value:
            items = _shortened(value)
            lines.append(f"  {_json(key)}: [")
            lines += [f"    {_json(item)}{',' if i < len(items) - 1 else ''}" for i, item in enumerate(items)]
            lines.append(f"  ]{comma}")
        else:
            lines.append(f"  {_json(key)}: {_json(_cut(value))}{comma}")
    lines.append("}")
    which = (
        "The first row, as `rows[0]` gives it"
        if example.index == 0
        else f"Row {example.index:,}, as `rows[{example.index}]` gives it (the first from a trial where the secret "
        "scan found no credential-shaped string or private value; this card shows no row from the others)"
    )
    return f"{which}, each text cut at {EXAMPLE_CHARS} characters{cut}:\n\n" + code_block("\n".join(lines), "json")


def _shortened(items: list[Any]) -> list[Any]:
    kept = items if len(items) <= EXAMPLE_HEAD + EXAMPLE_TAIL else items[:EXAMPLE_HEAD] + items[-EXAMPLE_TAIL:]
    return [_cut(item) for item in kept]


def _cut(value: Any) -> Any:
    if isinstance(value, str):
        return value if len(value) <= EXAMPLE_CHARS else value[:EXAMPLE_CHARS] + "…"
    if isinstance(value, dict):
        return {key: _cut(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_cut(item) for item in value]
    return value


def _json(value: Any) -> str:
    """One line of JSON: `json` escapes the control characters, this the rest `_UNPRINTABLE` holds."""
    text = json.dumps(value, ensure_ascii=False, default=str)
    return _UNPRINTABLE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def _escaped(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def _named(counts: Mapping[str, int]) -> str:
    """Values with their counts, the first NAMES_SHOWN of them; the rest summed."""
    if not counts:
        return "not recorded"
    shown = list(counts.items())[:NAMES_SHOWN]
    named = ", ".join(f"{code_span(name)} ({count:,})" for name, count in shown)
    if len(counts) > NAMES_SHOWN:
        rest = sum(counts.values()) - sum(count for _, count in shown)
        named += f" and {len(counts) - NAMES_SHOWN:,} more ({rest:,})"
    return named


def _steps(steps: list[int]) -> str:
    if not steps:
        return "not named in the trial folders' paths"
    if len(steps) == 1:
        return str(steps[0])
    return f"{steps[0]} to {steps[-1]} ({count(len(steps), 'step')})"


def provenance_prose(coverage: Coverage, context: CardContext, source_prefix: str, step: str | None = None) -> str:
    """Who made the traces and from what: run and step, framework and trained model, task source,
    agent, served model and provider, source objects. The settings' lines appear when they are set.
    A step scope (`step`, its step folder) names its run and step; a run, the steps in its trial paths."""
    facts, settings = context.facts, context.settings
    training = [f"**{what}**: {value}" for what, value in _training(settings) if value]
    lines = [f"- **Run**: `{_run(coverage, step)}`; **training step**: {_steps(_scope_steps(context, step))}"]
    lines += ["- " + "; ".join(training)] if training else []
    lines += [f"- **Task source**: {_one_line(settings.task_source)}"] if settings.task_source.strip() else []
    lines += [
        f"- **Agent**: {_named(facts.agents)}; **served model**: {_named(facts.models)}; "
        f"**provider**: {_named(facts.providers)} (exported trials per value)",
        f"- **Source**: {count(facts.objects, 'object')} ({size_text(facts.bytes)}) in the full `{source_prefix}/` prefix, "
        "listed in one pass at publish time",
    ]
    return "\n".join(lines)


def _training(settings: CardSettings) -> list[tuple[str, str]]:
    model = f"`{_one_line(settings.model)}`" if settings.model.strip() else ""
    return [("Framework", _one_line(settings.framework)), ("Trained model", model)]


def _one_line(text: str) -> str:
    """An operator's setting on one line of the card (a list item or the title)."""
    return " ".join(text.split())


def _run(coverage: Coverage, step: str | None) -> str:
    return coverage.run_id.removesuffix(f"/{step}") if step else coverage.run_id


def _scope_steps(context: CardContext, step: str | None) -> list[int]:
    return [int(step.removeprefix("step-"))] if step else context.facts.steps


def _dist(d: Distribution, what: str) -> str:
    mean = f"{d.mean:.3f}" if abs(d.mean) < 1e6 else f"{d.mean:g}"  # not 300 digits for a 1e308 reward
    return (
        f"{what}: mean {mean}, median {d.median:g}, min {d.minimum:g}, max {d.maximum:g}; "
        f"{d.positive:,} of {d.count:,} ({_percent(d.positive, d.count)}) above 0"
    )


def _not_finite(kinds: Mapping[str, int]) -> str:
    return f"{sum(kinds.values()):,} with a reward that is not a finite number ({_named(kinds)})"


def rewards_prose(coverage: Coverage, context: CardContext) -> str:
    """The reward and turn distributions of the rows, and the rewards of the scored trials left out."""
    facts = context.facts
    rewards, excluded, turns = facts.reward_stats, facts.excluded_reward_stats, facts.turn_stats
    lines = []
    if rewards.count:
        lines.append("- " + _dist(rewards, f"Reward over the {count(rewards.count, 'exported trial')} with one"))
    if facts.rewards_not_finite:
        lines.append(
            f"- Exported trials left out of these figures: {_not_finite(facts.rewards_not_finite)}; "
            "their `result` holds the value as Harbor writes it"
        )
    if facts.invalid_rewards:
        lines.append(
            f"- Exported trials left out of these figures: {facts.invalid_rewards:,} whose reward Harbor marks "
            "invalid (`reward_valid: false` in `result.json`); their `result` holds the reward as Harbor writes it"
        )
    if facts.exceptions:
        lines.append(f"- Exported trials with no reward, by exception (their `result`): {_named(facts.exceptions)}")
    excluded_total = sum(coverage.excluded.values()) - coverage.unscored
    if excluded_total:
        share = _percent(excluded_total, coverage.scored)
        lines.append(
            f"- Scored but excluded: {count(excluded_total, 'trial')} ({share} of the scored); "
            + (
                _dist(excluded, f"reward over the {excluded.count:,} with one")
                if excluded.count
                else "none had a finite reward"
                if facts.excluded_rewards_not_finite
                else "none had a reward"
            )
            + (f"; {_not_finite(facts.excluded_rewards_not_finite)}" if facts.excluded_rewards_not_finite else "")
        )
    if turns.count:
        lines.append(
            f"- Assistant turns per row: mean {turns.mean:.1f}, median {turns.median:g}, "
            f"min {turns.minimum:g}, max {turns.maximum:g}"
        )
    if context.plots:
        lines += ["", f"![reward histogram]({REWARD_PLOT}) ![assistant turns per row]({TURNS_PLOT})"]
    return "\n".join(lines) if lines else "No scored trial was exported."


def history_prose(versions: list[dict[str, Any]]) -> str:
    lines = ["| version | published | trial folders | scored | exported | rows | why the figures changed |"]
    lines.append("|---|---|---:|---:|---:|---:|---|")
    for v in reversed(versions):
        if is_block(v):
            lines.append(_block_row(v))
            continue
        figures = " | ".join(
            f"{v[k]:,}" if isinstance(v.get(k), int) else "?" for k in ("trial_dirs", "scored", "exported", "rows")
        )
        version = f"`{v['version']}`" if v.get("version") else "(earlier)"
        lines.append(f"| {version} | {v.get('published_at') or 'not recorded'} | {figures} | {v.get('why', '')} |")
    return "\n".join(lines)


def _block_row(entry: dict[str, Any]) -> str:
    """A run the secret scan blocked: the kinds that blocked it, and what became of the version
    before (kept or withdrawn) and why, as the run's failure line said it."""
    block = entry[BLOCK]
    listed = block.get("kinds")
    kinds = ", ".join(str(kind) for kind in listed) if isinstance(listed, list) and listed else "findings"
    previous = block.get("previous_version")
    said = f"blocked by the secret scan ({kinds}); " + (
        "nothing was published then" if previous == PreviousVersion.NONE else f"the version before was {previous}"
    )
    why = str(block.get("why") or "")  # names a trial: text from the trial folders
    cells = ["blocked", str(entry.get("blocked_at") or "not recorded"), "-", "-", "-", "-"]
    cells.append(f"{said}: {code_span(why)}" if why else said)
    return "| " + " | ".join(" ".join(cell.split()).replace("|", "\\|") for cell in cells) + " |"  # one row


def _percent(part: int, whole: int) -> str:
    return f"{100 * part / whole:.2f}%" if whole else "n/a"


def coverage_prose(coverage: Coverage, step: str | None = None) -> str:
    """The run (or its step folder `step`) described the way a person would: folders, scored,
    exported, and one sentence per reason the rest were not."""
    folder = f"The step folder `trace_jobs/{step}/`" if step else "The run's `trace_jobs/`"
    subagent_rows = coverage.subagent_rows
    lines = [
        f"{folder} held **{coverage.trial_dirs:,}** {_noun(coverage.trial_dirs, 'trial folder')}. "
        f"**{coverage.scored:,}** {_was(coverage.scored)} scored (had a `result.json`)"
        + (f" and {coverage.unscored:,} {_was(coverage.unscored)} not" if coverage.unscored else "")
        + f". **{coverage.exported:,}** {_noun(coverage.exported, 'trial')} {_was(coverage.exported)} exported, "
        f"{_percent(coverage.exported, coverage.scored)} of the scored ones, as {count(coverage.rows, 'row')}"
        + (
            f" ({subagent_rows:,} of them {'a subagent conversation' if subagent_rows == 1 else 'subagent conversations'})"
            if subagent_rows
            else ""
        )
        + "."
    ]
    excluded = {k: v for k, v in coverage.excluded.items() if v}
    if excluded:
        lines += ["", "Trial folders with no row, by reason (`reason` in `trials.parquet`):", ""]
        lines += [f"- {exclusion_sentence(Reason(reason), n)}" for reason, n in sorted(excluded.items(), key=_most)]
    lines.append("")
    lines.append("Every folder's status and reason is in `trials.parquet`; the counts are in `coverage.json`.")
    return "\n".join(lines)


def _most(item: tuple[str, int]) -> tuple[int, str]:
    return -item[1], item[0]


def _noun(n: int, noun: str) -> str:
    return count(n, noun).split(" ", 1)[1]


def _was(n: int) -> str:
    return "was" if n == 1 else "were"


# A reason's description completes "trial folders that ..."; for one folder its verbs agree.
_SINGULAR_VERBS = {"were": "was", "are": "is", "have": "has", "hold": "holds"}


def exclusion_sentence(reason: Reason, n: int) -> str:
    """`` `no_trajectory`: **3** trial folders were scored but have no agent/trajectory.json. ``: the
    count and the code's one description of the reason (`REASON_DESCRIPTIONS`), its verbs made
    singular for one folder (outside its parenthesis, which speaks of the trial)."""
    description = REASON_DESCRIPTIONS[reason]
    if n == 1:
        words, paren, rest = description.partition("(")
        description = re.sub(r"\b(were|are|have|hold)\b", lambda m: _SINGULAR_VERBS[m.group()], words) + paren + rest
    return f"`{reason}`: **{n:,}** {_noun(n, 'trial folder')} {description}."


def kinds_scanned(report: dict[str, Any]) -> str:
    """How much the scan searched for: `55 kinds (1,234 patterns)`."""
    kinds = report.get("kinds") or {}
    return f"{count(len(kinds), 'kind')} ({count(sum(v.get('patterns', 1) for v in kinds.values()), 'pattern')})"


def found_kinds(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The kinds the scan found a match of, with their counts."""
    return {kind: counts for kind, counts in (report.get("kinds") or {}).items() if counts.get("matches")}


def scan_prose(report: dict[str, Any]) -> str:
    """The scan per kind: every kind scanned, the ones with findings in a table, and what was done."""
    verdict = report.get("verdict", "unknown")
    kinds = found_kinds(report)
    scanned = kinds_scanned(report)
    if not kinds:
        lines = [
            f"The secret scan found no credential-shaped strings in the rows (verdict: `clean`); it looked for {scanned}."
        ]
    else:
        as_read = report.get("verdict_as_read")
        lines = [
            f"Secret scan verdict: **`{verdict}`**"
            + (f" (`{as_read}` as read)" if as_read else "")
            + f". Credential-shaped strings found in the rows as read, of the {scanned} scanned for:",
            "",
            "| kind | matches | rows | trials | tasks | live | unverified | placeholder |",
            "|---|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for kind, c in sorted(kinds.items()):
            lines.append(
                f"| `{kind}` | {c['matches']:,} | {c['rows']:,} | {c['trials']:,} | {c.get('tasks', 0):,} "
                f"| {c.get('live', 0):,} | {c.get('unverified', 0):,} | {c.get('placeholder', 0):,} |"
            )
    if report.get("unverified"):
        lines.append("")
        lines.append(
            f"{count(report['unverified'], 'match', 'matches')} {'has' if report['unverified'] == 1 else 'have'} "
            "a credential's rough shape but not its exact format "
            "(`unverified`): by default publishing replaces them; placeholders are kept."
        )
    pem = report.get("pem") or {}
    if pem.get("blocks"):
        lines.append("")
        lines.append(
            f"{count(pem.get('markers', 0), 'PEM private-key marker')} in {count(pem.get('rows', 0), 'row')} from "
            f"{count(pem.get('tasks', 0), 'task')}; of {count(pem['blocks'], 'block')}, {pem.get('parseable', 0):,} "
            f"parsed as a key, {pem.get('placeholder', 0):,} held a `...` placeholder, the longest decoded to "
            f"{count(pem.get('max_decoded_bytes', 0), 'byte')}." + _pem_detail(report)
        )
    redacted = report.get("redacted") or {}
    if any(redacted.values()):
        total = sum(redacted.values())
        per_kind = ", ".join(f"`{kind}` {count:,}" for kind, count in sorted(redacted.items()) if count)
        lines.append("")
        lines.append(
            f"{count(total, 'match', 'matches')} {_was(total)} replaced by `[REDACTED:<kind>]` in the published rows "
            f"({per_kind})."
        )
    lines.append("")
    lines.append(f"Decision: {_decision(report)}")
    quiet = sorted(k for k in report.get("kinds") or {} if k not in kinds)
    if kinds and quiet:
        lines.append("")
        lines.append("Kinds scanned for with no finding: " + ", ".join(f"`{k}`" for k in quiet) + ".")
    lines.append("")
    lines.append("Details, with fingerprints instead of the strings themselves, are in `secret_scan.json`.")
    return "\n".join(lines)


def _pem_detail(report: dict[str, Any]) -> str:
    """The tasks the PEM markers came from, and the longest block against the size a real key needs."""
    blocks = report.get("pem_blocks") or []
    if not blocks:
        return ""
    task_of = {f.get("trial_name"): f.get("task") for f in report.get("findings", []) if f.get("task")}
    tasks = sorted({task_of.get(b["trial_name"]) or b["trial_name"].rsplit("__", 1)[0] for b in blocks})
    longest = max(blocks, key=lambda b: b.get("decoded_bytes", 0))
    needed = longest.get("min_bytes")
    comparison = (
        f" A real {longest.get('kind', 'key')} key decodes to at least {count(needed, 'byte')}, "
        + (
            "so the longest block is too short to be one."
            if longest.get("decoded_bytes", 0) < needed
            else "as this one does."
        )
        if needed
        else ""
    )
    return " Tasks: " + ", ".join(code_span(t) for t in tasks) + "." + comparison


def _decision(report: dict[str, Any]) -> str:
    """What was done about the findings: a blocked run never gets this card."""
    redacted = sum((report.get("redacted") or {}).values())
    if redacted:
        return f"published with the {count(redacted, 'acted-on match', 'acted-on matches')} redacted."
    verdict = report.get("verdict")
    if verdict in (RunVerdict.CLEAN, RunVerdict.PLACEHOLDERS_ONLY, None):
        return "published as read; nothing to act on."
    if verdict == RunVerdict.NEAR_MISSES:
        return (
            "published as read; the near misses (a vendor's prefix on a body that fails its exact format) are "
            "kept, as every policy keeps them; check them before sharing."
        )
    return (
        "published as read, unredacted: the policy in force (`on_secret`/`on_unverified`) kept these "
        "matches; check them before sharing."
    )


_PLAIN_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/:+-]{0,99}")  # a served model's name fit for the title


def considerations_prose(
    coverage: Coverage, context: CardContext, report: dict[str, Any], options: ExportOptions
) -> str:
    """What a reader should weigh before using the rows: which trials are missing and how their
    rewards differ, what redaction replaced, what a reward is, and the secret scan's verdict."""
    return "\n".join(
        [
            f"- **Not every trial is here**: {_missing(coverage, context.facts, options)}",
            f"- **Redaction**: {_redaction(report)}",
            "- **Rewards are the verifier's**: each trial's reward is what its task's verifier wrote, as Harbor "
            "recorded it (`result`): whether the task's checks passed in the trial's environment, only as sound "
            "as those checks, not a judgement of the agent's work.",
            f"- **Secret scan**: {_scan_verdict(report)}",
        ]
    )


def _missing(coverage: Coverage, facts: CardFacts, options: ExportOptions) -> str:
    missing = coverage.trial_dirs - coverage.exported
    if not missing:
        return "the one trial folder gave a row." if coverage.trial_dirs == 1 else "every trial folder gave a row."
    text = (
        f"{missing:,} of the {count(coverage.trial_dirs, 'trial folder')} gave no row, for the reasons under "
        "Coverage, so the rows are not a uniform sample of the run"
    )
    if options.success_filter != "all":
        above = "above" if options.success_filter == "success" else "not above"
        text += f" (`--filter {options.success_filter}` exported only the trials whose reward is {above} 0)"
    excluded, exported = facts.excluded_reward_stats, facts.reward_stats
    if excluded.count and exported.count:
        text += (
            f"; the scored trials left out had a mean reward of {_mean(excluded)} (the {excluded.count:,} with "
            f"one), against {_mean(exported)} for the exported ones"
        )
    return text + "."


def _mean(d: Distribution) -> str:
    return f"{d.mean:.3f}" if abs(d.mean) < 1e6 else f"{d.mean:g}"


def _redaction(report: dict[str, Any]) -> str:
    """The secrets and private values replaced, and the private values kept (only counts, never values)."""
    parts = []
    secrets = {kind: n for kind, n in (report.get("redacted") or {}).items() if n}
    if secrets:
        parts.append(
            f"{count(sum(secrets.values()), 'credential-shaped string')} replaced by `[REDACTED:<kind>]` "
            f"({', '.join(f'`{kind}` {n:,}' for kind, n in sorted(secrets.items()))})"
        )
    privacy = report.get("privacy") or {}
    private = {category: n for category, n in (privacy.get("redacted") or {}).items() if n}
    if private:
        parts.append(
            f"{count(sum(private.values()), 'private value')} replaced by numbered tokens such as `[EMAIL-1]` "
            f"({', '.join(f'`{category}` {n:,}' for category, n in sorted(private.items()))})"
        )
    kept = {
        category: found - private.get(category, 0)
        for category, c in (privacy.get("categories") or {}).items()
        if (found := c.get("matches", 0) - c.get("placeholders", 0)) > private.get(category, 0)
    }
    if kept:
        parts.append(
            f"{count(sum(kept.values()), 'private value')} found and kept as read, as the policy in force "
            f"(`on_private`) says ({', '.join(f'`{category}` {n:,}' for category, n in sorted(kept.items()))})"
        )
    if not parts:
        return "nothing was replaced; the texts are as the agents and their environments wrote them."
    return "; ".join(parts) + ". Counts per kind are in `secret_scan.json`."


def _scan_verdict(report: dict[str, Any]) -> str:
    as_read = report.get("verdict_as_read")
    return (
        f"the verdict is `{report.get('verdict', 'unknown')}`"
        + (f" (`{as_read}` as read)" if as_read else "")
        + f"; {_decision(report)}"
    )


def card_title(coverage: Coverage, context: CardContext, step: str | None = None) -> str:
    """`card_pretty_name`, else "<run> step <N> traces of <model>": the step when the scope has one
    (or its trial paths name one), the trained model when set, else the one served model when its
    name is plain (a name from result.json is data, not fit for a heading as it is)."""
    settings = context.settings
    if settings.pretty_name.strip():
        return _one_line(settings.pretty_name)
    steps = _scope_steps(context, step)
    served = list(context.facts.models)
    model = _one_line(settings.model) or (served[0] if len(served) == 1 and _PLAIN_NAME.fullmatch(served[0]) else "")
    return (
        _run(coverage, step)
        + (f" step {steps[0]}" if len(steps) == 1 else "")
        + " traces"
        + (f" of {model}" if model else "")
    )


def dataset_card(
    coverage: Coverage,
    scan_report: dict[str, Any],
    shards: ShardSet,
    schema: pa.Schema,
    *,
    options: ExportOptions | None = None,
    subsets: Subsets | None = None,
    sessions: SessionCounts | None = None,
    context: CardContext | None = None,
    source_prefix: str = "",
    versions: list[dict[str, Any]] | None = None,
    step: str | None = None,
    example: Example | None = None,
) -> str:
    """The card's text; `step` is a step scope's step folder (`step-N`), None for a run; `example`
    the published row it shows (None when there is no row)."""
    options = options or ExportOptions()
    context = context or CardContext()
    title = card_title(coverage, context, step)
    header = yaml.safe_dump(
        card_header(schema, shards, subsets, context.settings, title), sort_keys=False, allow_unicode=True
    )
    return fill_template(
        CARD_TEMPLATE,
        header=header,
        title=title,
        intro=context.settings.intro.strip(),
        summary=intro_prose(options, schema),
        provenance=provenance_prose(coverage, context, source_prefix, step),
        fields=fields_prose(schema),
        usage=usage_prose(context.repo_id, subsets or {}),
        example=example_prose(example),
        rewards=rewards_prose(coverage, context),
        options=options_prose(options, shards, subsets or {}) if options != ExportOptions() else "",
        sessions=sessions_prose(sessions, context.location) if sessions is not None else "",
        coverage=coverage_prose(coverage, step),
        scan=scan_prose(scan_report),
        considerations=considerations_prose(coverage, context, scan_report, options),
        history=history_prose(versions) if versions else "",
    )


def fill_template(name: str, **values: str) -> str:
    """A card template filled from `values`: its paragraphs (separated by a blank line) are
    `string.Template`s; one that fills to nothing is left out, and so is a `## ` heading whose
    section is left with no paragraph. The values are inserted as they are, never re-read as a
    template, so a `$` or a heading-like line in the data stays text."""
    paragraphs = (
        (resources.files("trace_assets.publishing") / TEMPLATES_DIR / name).read_text(encoding="utf-8").split("\n\n")
    )
    sections: list[list[str]] = [[]]
    for paragraph in paragraphs:
        if paragraph.startswith("## "):
            sections.append([paragraph])
        elif filled := Template(paragraph.strip("\n")).substitute(values).strip("\n"):
            sections[-1].append(filled)
    kept = [p for section in sections if not _heading_only(section) for p in section]
    return "\n\n".join(kept) + "\n"


def _heading_only(section: list[str]) -> bool:
    return len(section) == 1 and section[0].startswith("## ")
