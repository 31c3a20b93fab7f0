"""What the dataset card says about the session files: a config the Hub reads, and how to open them."""

from __future__ import annotations

from typing import Any

from trace_assets.harbor.sessions import BUCKET_HEX_CHARS, MAX_STEM_CHARS, SESSIONS_DIR
from trace_assets.steps.sessions import SessionCounts

SESSIONS_CONFIG = "sessions"


def sessions_config(counts: SessionCounts) -> dict[str, Any]:
    """A second config beside the rows' `default`, so the Hub finds the session files as well; it
    names this version's folder, as the rows' config names their shards'."""
    return {
        "config_name": SESSIONS_CONFIG,
        "data_files": [{"split": "train", "path": f"{SESSIONS_DIR}/{counts.version}/*/*.jsonl"}],
    }


def sessions_prose(counts: SessionCounts) -> str:
    subagents = f" ({counts.subagent_sessions:,} of them subagent sessions)" if counts.subagent_sessions else ""
    return (
        f"Every exported trial's whole trajectory (every episode, its tool calls, the terminal output the "
        f"agent read and its reasoning, continuations in order) is also a session file for the Hub's trace "
        f"viewer, in the Session Trace Simple Format: **{counts.sessions:,}** files{subagents}, "
        f"{counts.bytes:,} bytes. Open them from the dataset page's Data Studio (subset "
        f"`{SESSIONS_CONFIG}`), or fetch one trial's file with "
        f"`huggingface_hub.hf_hub_download(repo_id, '{SESSIONS_DIR}/{counts.version}/<bucket>/<trial_name>.jsonl', "
        f"repo_type='dataset')`, where `<bucket>` is the first {BUCKET_HEX_CHARS} hex characters of the "
        f"trial name's sha256. A subagent's session (a context summarization) sits beside its trial's as "
        f"`<trial_name>.<subagent>.jsonl`; the main session's header lists them under `subagent_sessions` "
        f"and its messages link them where they ran. A trial name with characters outside `A-Za-z0-9._-`, "
        f"or over {MAX_STEM_CHARS} characters, is made safe and gets `-` and 8 hex characters of its sha256; "
        f"every header's `trial_name` is its rows'. The secret scan covers these files too.{skipped_prose(counts)}"
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
