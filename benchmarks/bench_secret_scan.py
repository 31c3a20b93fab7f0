"""Throughput of the secret scanner (all kinds) on a synthetic run, against kingfisher, betterleaks
and detect-secrets.

    .venv/bin/python benchmarks/bench_secret_scan.py --mb 300 \
        --kingfisher /tmp/peers-venv/bin/kingfisher --betterleaks /tmp/peers-venv/bin/betterleaks

kingfisher and betterleaks (benchmarks/secret_peers.py) scan the same texts written one file per
row, in the same run.

The same rows are scanned in child processes: with POLARS_MAX_THREADS=1 (the one-core figure; the
variable only takes effect before polars is imported), secrets only and with the privacy scrub too
(both scanners, `on_private redact`), then both with polars' default thread pool. Rows look like Harbor last-episode rows: a conversation of terminal output, code,
tracebacks and JSON replies, an instruction and a verifier log, with a sprinkle of planted secrets.
detect-secrets, when importable, scans a slice of the same texts written to files.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import random
import string
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.secret_peers import PEER_COMMANDS, peer_command  # noqa: E402

ALNUM = string.ascii_letters + string.digits


def _rand(rng: random.Random, alphabet: str, n: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


def _planted_secret(rng: random.Random) -> str:
    """A credential-shaped line with a random body, or the sample run's PEM placeholder."""
    kind = rng.randrange(7)
    if kind == 0:
        return f"GITHUB_TOKEN=ghp_{_rand(rng, ALNUM, 36)}"
    if kind == 1:
        return f"aws_access_key_id = AKIA{_rand(rng, string.ascii_uppercase + '234567', 16)}"
    if kind == 2:
        return f"aws_secret_access_key = {_rand(rng, ALNUM + '/+', 40)}"
    if kind == 3:
        return f"OPENAI_API_KEY=sk-proj-{_rand(rng, ALNUM, 48)}"
    if kind == 4:
        return f"HF_TOKEN=hf_{_rand(rng, string.ascii_letters, 34)}"
    if kind == 5:
        claims = base64.urlsafe_b64encode(json.dumps({"sub": _rand(rng, ALNUM, 8)}).encode()).rstrip(b"=").decode()
        return f"Authorization: Bearer eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.{claims}.{_rand(rng, ALNUM, 43)}"
    return "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC...\n...\n-----END PRIVATE KEY-----"


def _message_lines(rng: random.Random) -> list[str]:
    """Listings, pytest output, code, tracebacks, base64 blobs or an agent's JSON reply."""
    n = rng.randint(5, 120)
    kind = rng.randrange(6)
    if kind == 0:
        return [
            f"-rw-r--r-- 1 root {rng.randint(10, 99999)} src/task-{rng.randint(0, 999)}/disk-usage.py" for _ in range(n)
        ]
    if kind == 1:
        rule, dashes = "=" * 30, "-" * 30
        tests = [f"tests/test_{rng.randint(0, 99)}.py::test_{i} {rng.choice(['PASSED', 'FAILED'])}" for i in range(n)]
        return [
            f"{rule} test session starts {rule}",
            *tests,
            f"{dashes} Captured stdout {dashes}",
            f"{rule} {n} passed {rule}",
        ]
    if kind == 2:
        signature = "(self, value: int) -> dict[str, int]:  # résumé ✓ 数据"
        return [f"    def handle_{rng.randint(0, 999)}{signature}" for _ in range(n)]
    if kind == 3:
        frames = [
            f'  File "/usr/lib/python3.11/site-packages/pkg_{rng.randint(0, 99)}/core.py", line {rng.randint(1, 900)}\n'
            f"    out = self.ask-{rng.randint(0, 99)}(sha={rng.getrandbits(160):040x}, id={rng.getrandbits(128):032x})"
            for _ in range(n // 2)
        ]
        return ["Traceback (most recent call last):", *frames]
    if kind == 4:
        blob = base64.b64encode(json.dumps({"data": [rng.random() for _ in range(n * 8)]}).encode()).decode()
        return [
            "$ kubectl get configmap app -o yaml",
            *(f"  payload: {blob[i : i + 76]}" for i in range(0, len(blob), 76)),
        ]
    words = ["Looking", "at", "the", "failing", "test,", "then", "fix", "it."]
    analysis = " ".join(rng.choice(words) for _ in range(n * 4))
    return [json.dumps({"analysis": analysis, "commands": [{"keystrokes": "pytest -q\n"}]}, indent=2)]


def _planted_private(rng: random.Random) -> str:
    """An internal address, host, e-mail or home path, as logs and tracebacks print them."""
    return rng.choice(
        [
            f"connected to 10.{rng.randint(0, 255)}.{rng.randint(0, 255)}.{rng.randint(1, 254)}:6379",
            "GET http://vllm-router.rl-train.svc.cluster.local:8000/v1/models 200",
            f"Author: Dev {rng.randint(0, 99)} <dev{rng.randint(0, 99)}@acme-corp.com>",
            f'  File "/home/dev{rng.randint(0, 99)}/work/train.py", line {rng.randint(1, 400)}',
        ]
    )


def _message(rng: random.Random) -> str:
    """One message between terminal prompts; about one in fifty holds a planted secret, one in
    twenty a private value."""
    lines = _message_lines(rng)
    if rng.random() < 0.02:
        lines.insert(rng.randrange(len(lines) + 1), _planted_secret(rng))
    if rng.random() < 0.05:
        lines.insert(rng.randrange(len(lines) + 1), _planted_private(rng))
    return "\n".join(["root@sandbox:/app# ", *lines, "root@sandbox:/app# "])


def synthetic_rows(megabytes: float, seed: int = 0) -> list[dict]:
    """Harbor-like rows totalling about `megabytes` of text, drawing messages from a pool as histories repeat."""
    rng = random.Random(seed)
    pool = [_message(rng) for _ in range(4000)]
    rows, size = [], 0
    while size < megabytes * 1e6:
        contents = [rng.choice(pool) for _ in range(rng.randint(4, 40))]
        instruction = "Write pytest tests for the module in /app/src. Make every test pass.\n" + rng.choice(pool)
        verifier = rng.choice(pool)
        rows.append(
            {
                "conversations": [{"role": ("user", "assistant")[i % 2], "content": c} for i, c in enumerate(contents)],
                "trial_name": f"task-{len(rows) % 500}__{_rand(rng, ALNUM, 7)}",
                "task": f"task-{len(rows) % 500}",
                "trace_source": "main",
                "instruction": instruction,
                "verifier_output": verifier,
                "agent": "terminus-2",
                "model": "Qwen3-Coder-30B-A3B",
                "episode": f"episode-{rng.randint(0, 30)}",
            }
        )
        size += sum(len(c.encode()) for c in contents) + len(instruction.encode()) + len(verifier.encode())
    return rows


def measure_scanner(megabytes: float, batch_rows: int, repeats: int, privacy: bool) -> dict:
    """Run in a child process, after POLARS_MAX_THREADS is set: scan and redact the synthetic rows,
    with the privacy scrub too when `privacy` (operator literals set, every category replaced).

    Each is timed `repeats` times and the fastest run kept, as other load on the machine only slows runs down.
    """
    import polars as pl

    from trace_assets.secret_scan.privacy import PrivacyOptions, PrivateCategory
    from trace_assets.secret_scan.redaction import DEFAULT_REDACTED, Redaction
    from trace_assets.secret_scan.scanner import ScanOptions, SecretScanner

    options = ScanOptions(privacy=PrivacyOptions(("acme-rl-traces", "gpu-box-17"))) if privacy else ScanOptions()
    private = frozenset(PrivateCategory) if privacy else frozenset()

    rows = synthetic_rows(megabytes)
    batches = [pl.DataFrame(rows[i : i + batch_rows]) for i in range(0, len(rows), batch_rows)]
    del rows
    scan_seconds, redact_seconds = [], []
    for _ in range(repeats):
        scanner = SecretScanner("bench", options)
        started = time.perf_counter()
        for batch in batches:
            scanner.scan(batch)
        report = scanner.report()
        scan_seconds.append(time.perf_counter() - started)
        started = time.perf_counter()
        redaction = Redaction(options, DEFAULT_REDACTED, private)
        redacted = sum(sum(redaction(batch)[1].values()) for batch in batches) + sum(redaction.private_counts.values())
        redact_seconds.append(time.perf_counter() - started)
    return {
        "threads": pl.thread_pool_size(),
        "privacy": privacy,
        "rows": report["rows_scanned"],
        "megabytes": report["bytes_scanned"] / 1e6,
        "scan_seconds": min(scan_seconds),
        "redact_seconds": min(redact_seconds),
        "verdict": report["verdict"],
        "matches": {kind: v["matches"] for kind, v in report["kinds"].items() if v["matches"]},
        "redacted": redacted,
    }


def measure_detect_secrets(megabytes: float) -> dict | None:
    """detect-secrets' default plugins over the first texts of the same rows, one file per row."""
    try:
        from detect_secrets import SecretsCollection
        from detect_secrets.settings import default_settings
    except ImportError:
        return None
    texts, size = [], 0
    for row in synthetic_rows(megabytes):
        text = "\n".join([*(m["content"] for m in row["conversations"]), row["instruction"], row["verifier_output"]])
        texts.append(text)
        size += len(text.encode())
        if size >= megabytes * 1e6:
            break
    with tempfile.TemporaryDirectory() as folder:
        paths = []
        for i, text in enumerate(texts):
            path = Path(folder) / f"row_{i}.txt"
            path.write_text(text)
            paths.append(str(path))
        collection = SecretsCollection()
        with default_settings():
            started = time.perf_counter()
            for path in paths:
                collection.scan_file(path)
            seconds = time.perf_counter() - started
    return {"megabytes": size / 1e6, "seconds": seconds, "findings": sum(len(s) for _, s in collection.data.items())}


def measure_peer(name: str, binary: str, megabytes: float) -> dict:
    """A peer scanner over the same rows' texts, one file per row: best of two runs."""
    with tempfile.TemporaryDirectory() as folder:
        size = 0
        for i, row in enumerate(synthetic_rows(megabytes)):
            text = "\n".join(
                [*(m["content"] for m in row["conversations"]), row["instruction"], row["verifier_output"]]
            )
            size += len(text.encode())
            (Path(folder) / f"row_{i}.txt").write_text(text)
        command = peer_command(name, binary, folder)
        seconds, findings = [], 0
        for _ in range(2):
            started = time.perf_counter()
            out = subprocess.run(command, capture_output=True, text=True).stdout
            seconds.append(time.perf_counter() - started)
            findings = sum(line.startswith("{") for line in out.splitlines())
    return {"megabytes": size / 1e6, "seconds": min(seconds), "findings": findings}


def _child(threads: int | None, args: argparse.Namespace, privacy: bool) -> dict:
    env = dict(os.environ)
    env.pop("POLARS_MAX_THREADS", None)
    if threads:
        env["POLARS_MAX_THREADS"] = str(threads)
    command = [sys.executable, __file__, "--child", "--mb", str(args.mb), "--batch-rows", str(args.batch_rows)]
    command += ["--repeats", str(args.repeats)] + (["--privacy"] if privacy else [])
    return json.loads(subprocess.run(command, env=env, check=True, capture_output=True, text=True).stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mb", type=float, default=300, help="megabytes of row text to generate and scan")
    parser.add_argument("--batch-rows", type=int, default=2000, help="rows per scanned batch (the pipeline uses 2000)")
    parser.add_argument("--detect-secrets-mb", type=float, default=10, help="megabytes for detect-secrets (0: skip)")
    parser.add_argument("--kingfisher", help="kingfisher binary, scanned on the same rows (--peer-mb of them)")
    parser.add_argument("--betterleaks", help="betterleaks binary, scanned on the same rows (--peer-mb of them)")
    parser.add_argument("--peer-mb", type=float, default=100, help="megabytes for each peer")
    parser.add_argument("--repeats", type=int, default=3, help="timed runs per thread setting; the fastest is kept")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--privacy", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(measure_scanner(args.mb, args.batch_rows, args.repeats, args.privacy)))
        return

    results = [_child(1, args, privacy=True), _child(1, args, privacy=False), _child(None, args, privacy=True)]
    for result in results:
        scanners = "secrets + privacy" if result["privacy"] else "secrets only"
        print(
            f"{scanners}, {result['threads']} thread(s): {result['megabytes']:.0f} MB in {result['rows']:,} rows, "
            f"scan {result['scan_seconds']:.2f}s = {result['megabytes'] / result['scan_seconds']:.0f} MB/s, "
            f"redact {result['redact_seconds']:.2f}s = {result['megabytes'] / result['redact_seconds']:.0f} MB/s"
        )
    print(f"  verdict {results[0]['verdict']}, matches {results[0]['matches']}, redacted {results[0]['redacted']}")
    print(
        f"one core, both scanners against secrets only: {results[1]['scan_seconds'] / results[0]['scan_seconds']:.2f}x the rate"
    )
    one_core_rate = results[0]["megabytes"] / results[0]["scan_seconds"]
    for name in PEER_COMMANDS:
        binary = getattr(args, name)
        if binary:
            peer = measure_peer(name, binary, min(args.peer_mb, args.mb))
            rate = peer["megabytes"] / peer["seconds"]
            print(
                f"{name}, 1 job: {peer['megabytes']:.0f} MB in {peer['seconds']:.2f}s = {rate:.1f} MB/s "
                f"({peer['findings']} findings); one-core ratio: secret_scan is {one_core_rate / rate:.1f}x {name}"
            )
    if args.detect_secrets_mb <= 0:
        return
    baseline = measure_detect_secrets(args.detect_secrets_mb)
    if baseline is None:
        print("detect-secrets is not installed; no comparison (pip install detect-secrets)")
        return
    baseline_rate = baseline["megabytes"] / baseline["seconds"]
    print(
        f"detect-secrets, 1 thread: {baseline['megabytes']:.1f} MB in {baseline['seconds']:.2f}s = {baseline_rate:.2f} MB/s "
        f"({baseline['findings']} findings)"
    )
    print(f"one-core ratio: secret_scan is {one_core_rate / baseline_rate:.0f}x detect-secrets")


if __name__ == "__main__":
    main()
