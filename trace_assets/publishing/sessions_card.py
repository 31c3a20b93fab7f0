"""The session files as a dataset of their own: `sessions/README.md` declares them, the scope's card
says where they are and how to load them.

They cannot be a config of the scope's card: `datasets` reads every config of one card with the
builder it infers from the first config's files (huggingface/datasets#7101), so JSON Lines declared
beside the Parquet configs could never load. In `sessions/`, their own card declares them alone, as
`default`, with paths inside the folder (`<version>/*/*.jsonl`), so `load_dataset(<scope
folder>/sessions)` reads them, and the folder is whole wherever it is copied. Like the rows' card,
that card names one version's folder and is put after it, so it never names files not all there.
"""

from __future__ import annotations

import yaml

from trace_assets.harbor.sessions import BUCKET_HEX_CHARS, MAX_STEM_CHARS, SESSIONS_DIR
from trace_assets.publishing.card_facts import size_text
from trace_assets.publishing.hub import PUBLISH_ROOT_PREFIX, parse_publish_root
from trace_assets.steps.sessions import SessionCounts

SESSIONS_CARD = f"{SESSIONS_DIR}/README.md"  # in the scope's folder; a card, not one of the versioned files


def sessions_files(counts: SessionCounts) -> str:
    """The files of this version, relative to `sessions/`: what the sessions card declares."""
    return f"{counts.version}/*/*.jsonl"


def sessions_card(counts: SessionCounts, title: str, license: str) -> str:
    """`sessions/README.md`: the session files as the `default` config of a dataset of their own."""
    header = yaml.safe_dump(
        {
            "license": license,
            "pretty_name": f"{title} (sessions)",
            "configs": [{"config_name": "default", "data_files": [{"split": "train", "path": sessions_files(counts)}]}],
            "tags": ["harbor", "agent-traces", "reinforcement-learning"],
        },
        sort_keys=False,
        allow_unicode=True,
    )
    return (
        f"---\n{header}---\n\n# {title} (sessions)\n\n"
        f"{_what_they_are(counts, '')} The rows, their coverage and the secret scan are in the card one folder up "
        f'(`../README.md`). Load them with `datasets.load_dataset("<this folder>", split="train")`.\n\n'
        f"{_reading(counts)}\n"
    )


def sessions_prose(counts: SessionCounts, location: str = "") -> str:
    """The scope card's section: what the session files are, where, and the exact calls that load them."""
    return (
        f"{_what_they_are(counts, f'{SESSIONS_DIR}/')} They are a dataset of their own in `{SESSIONS_DIR}/`, whose card "
        f"(`{SESSIONS_CARD}`) declares them as its `default` config, not a config of this card: `datasets` reads "
        f"all the configs of one card with one builder, and these are JSON Lines beside Parquet. Load them with\n\n"
        f"```python\nfrom datasets import load_dataset\n\n{_load_call(counts, location)}\n```\n\n"
        f"{_reading(counts)} {_one_file(counts, location)}{skipped_prose(counts)}"
    )


def _what_they_are(counts: SessionCounts, folder: str) -> str:
    """`folder` prefixes the paths: `sessions/` in the scope's card, nothing in their own."""
    one = counts.subagent_sessions == 1
    subagents = (
        f" ({counts.subagent_sessions:,} of them {'a subagent session' if one else 'subagent sessions'})"
        if counts.subagent_sessions
        else ""
    )
    return (
        f"Every exported trial's whole trajectory (every episode, its tool calls, the terminal output the "
        f"agent read and its reasoning, continuations in order) is also a session file for the Hub's trace "
        f"viewer, in the Session Trace Simple Format: **{counts.sessions:,}** {'file' if counts.sessions == 1 else 'files'}"
        f"{subagents}, {size_text(counts.bytes)}, in `{folder}{counts.version}/<bucket>/<trial_name>.jsonl`, where "
        f"`<bucket>` is the first {BUCKET_HEX_CHARS} hex characters of the trial name's sha256."
    )


def _reading(counts: SessionCounts) -> str:
    return (
        "`datasets` reads each file as one agent trace, one row per session file (`file_path` names it, "
        "`trace` holds it as written, `messages` the conversation), which needs the `teich` package "
        "(`pip install teich`). A subagent's session (a context summarization) sits beside its trial's as "
        "`<trial_name>.<subagent>.jsonl`; the main session's header lists them under `subagent_sessions` and its "
        f"messages link them where they ran. A trial name with characters outside `A-Za-z0-9._-`, or over "
        f"{MAX_STEM_CHARS} characters, is made safe and gets `-` and 8 hex characters of its sha256; every "
        "header's `trial_name` is its rows'. The secret scan covers these files too."
    )


def _load_call(counts: SessionCounts, location: str) -> str:
    """A local folder loads through the sessions card; a URL (the Hub, object storage) names this
    version's files, which `datasets` reads with its JSON builder."""
    if "://" not in location:
        return f'sessions = load_dataset("{location or "<this folder>"}/{SESSIONS_DIR}", split="train")'
    call = (
        f'sessions = load_dataset("json", data_files="{location.rstrip("/")}/{SESSIONS_DIR}/{sessions_files(counts)}"'
    )
    if location.startswith(PUBLISH_ROOT_PREFIX):
        return f'{call}, split="train")'
    return f'{call}, split="train", storage_options={{...}})  # the store\'s endpoint and credentials, as for fsspec'


def _one_file(counts: SessionCounts, location: str) -> str:
    path = f"{SESSIONS_DIR}/{counts.version}/<bucket>/<trial_name>.jsonl"
    if not location.startswith(PUBLISH_ROOT_PREFIX):
        return f"One trial's session is the file `{path}`."
    root = parse_publish_root(location)
    in_repo = "/".join(part for part in (root.path_in_repo, path) if part)
    return (
        f'Fetch one trial\'s session with `huggingface_hub.hf_hub_download("{root.repo_id}", "{in_repo}", '
        f'repo_type="dataset", revision="{root.revision}")`.'
    )


def skipped_prose(counts: SessionCounts) -> str:
    """Sessions an exported trial has not, by reason; `trials.parquet`'s detail names each trial."""
    if not counts.skipped:
        return ""
    reasons = ", ".join(f"`{reason}` {n:,}" for reason, n in counts.skipped.items())
    return (
        f" Sessions not written though their trial's rows were ({reasons}): `invalid_subagent_name` is a "
        f"subagent file whose name gives no file of its own, `session_path_taken` a trial whose result.json "
        f"names a trial another folder already holds (a copied folder; the first keeps the session), "
        f"`unconvertible_trajectory` a trajectory the converter could not read; `trials.parquet`'s `detail` "
        f"names each trial."
    )
