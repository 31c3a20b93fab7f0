"""Recall per kind and per framing, and false positives, ours against kingfisher, on the same records.

    .venv/bin/python benchmarks/secret_recall.py --kingfisher /tmp/peers-venv/bin/kingfisher

Records: `trace_assets_tests/data/secrets/corpus.jsonl` (gitleaks' and trufflehog's public test
strings, see `build_secret_corpus.py`) plus hard cases generated from real-format keys in each trace
framing (`trace_assets_tests/support/secret_framings.py`). Ours counts a positive as found when its
labelled kind is reported (any verdict) and as `live`/`acted on` when that finding is live or
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


def kingfisher(binary: str, records: list[dict]) -> list[int]:
    """Per record: how many findings kingfisher reports (no validation, no dedup, one job)."""
    with tempfile.TemporaryDirectory() as folder:
        for i, r in enumerate(records):
            (Path(folder) / f"r{i}.txt").write_text("\n".join(r.get("messages", [r.get("text")])))
        out = subprocess.run(
            [
                binary,
                "scan",
                folder,
                "--format",
                "jsonl",
                "--no-validate",
                "--no-dedup",
                "-j",
                "1",
                "--no-update-check",
            ],
            capture_output=True,
            text=True,
        ).stdout
    counts = Counter()
    for line in out.splitlines():
        item = json.loads(line)
        if "finding" in item:
            counts[int(Path(item["finding"]["path"]).stem[1:])] += 1
    return [counts[i] for i in range(len(records))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--kingfisher", help="path to a kingfisher binary (pip install kingfisher-bin, in its own venv)"
    )
    args = parser.parse_args()
    records = [json.loads(line) for line in CORPUS.read_text().splitlines()] + framing_records()
    mine = ours(records)
    peer = kingfisher(args.kingfisher, records) if args.kingfisher else None

    def acted(found: dict[str, set[str]], kind: str | None = None) -> bool:
        kinds = [kind] if kind else list(found)
        return any(found.get(k, set()) & {"live", "unverified"} for k in kinds)

    groups: dict[str, list[int]] = defaultdict(list)
    for i, r in enumerate(records):
        if r["positive"]:
            key = (
                r["source"]
                if r["source"].startswith("framing/")
                else ("kind/" + r["label"] if not r["label"].startswith("other:") else "other kinds")
            )
            groups[key].append(i)
    print(f"{'group':34s} {'n':>4s} {'ours typed':>10s} {'ours acted':>10s} {'kingfisher':>10s}")
    for key in sorted(groups):
        idx = groups[key]
        typed = sum(records[i]["label"] in mine[i] for i in idx)
        act = sum(acted(mine[i], records[i]["label"]) for i in idx)
        kf = sum(peer[i] > 0 for i in idx) if peer else 0
        print(
            f"{key:34s} {len(idx):4d} {typed / len(idx):10.0%} {act / len(idx):10.0%} {(kf / len(idx)) if peer else float('nan'):10.0%}"
        )
    for name, keys in (
        ("claimed kinds", [k for k in groups if k.startswith("kind/")]),
        ("framings", [k for k in groups if k.startswith("framing/")]),
    ):
        idx = [i for k in keys for i in groups[k]]
        typed = sum(records[i]["label"] in mine[i] for i in idx)
        act = sum(acted(mine[i], records[i]["label"]) for i in idx)
        kf = sum(peer[i] > 0 for i in idx) if peer else 0
        print(
            f"ALL {name:30s} {len(idx):4d} {typed / len(idx):10.0%} {act / len(idx):10.0%} {(kf / len(idx)) if peer else float('nan'):10.0%}"
        )
    negatives = [i for i, r in enumerate(records) if not r["positive"]]
    ours_fp = sum(acted(mine[i]) for i in negatives)
    ours_any = sum(bool(mine[i]) for i in negatives)
    kf_fp = sum(peer[i] > 0 for i in negatives) if peer else 0
    print(
        f"negatives {len(negatives)}: false positives ours {ours_fp} acted on ({ours_any} incl. placeholders), kingfisher {kf_fp if peer else 'n/a'}"
    )


if __name__ == "__main__":
    main()
