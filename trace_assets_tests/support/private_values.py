"""Planted private values and their placeholder look-alikes, in the texts agent traces print them
in: shared by the privacy tests' corpus and the recall measurement (benchmarks/secret_recall.py)."""

from __future__ import annotations

import random
import string

PROMPT = "root@sandbox:/app# "
FIRST = ["alice", "bjorn", "chen", "dmitri", "esra", "farid", "grace", "hiro", "ines", "jonas"]
LAST = ["smith", "okafor", "nakamura", "ivanova", "garcia", "muller", "kowalski", "haddad"]
COMPANIES = ["acme-corp", "globex", "initech", "umbrella-labs", "hooli", "vandelay"]


def _octet(rng: random.Random) -> int:
    return rng.randint(1, 254)


def private_values(rng: random.Random) -> list[tuple[str, str]]:
    """(category, value) pairs: realistic internal names, addresses, paths and e-mails."""
    first, last, company = rng.choice(FIRST), rng.choice(LAST), rng.choice(COMPANIES)
    a, b, c = _octet(rng), _octet(rng), _octet(rng)
    region = rng.choice(["us-west-2", "eu-central-1", "ap-south-1"])
    service = rng.choice(["redis-master", "postgres-0", "vllm-router", "minio"])
    namespace = rng.choice(["prod", "rl-train", "eval", "infra"])
    host = f"ip-10-{a}-{b}-{c}.{region}.compute.internal"
    return [
        ("email", f"{first}.{last}@{company}.com"),
        ("email", f"{first[0]}{last}+ci@{company}.io"),
        ("private_ip", f"10.{a}.{b}.{c}"),
        ("private_ip", f"192.168.{b}.{c}"),
        ("private_ip", f"172.{rng.randint(16, 31)}.{b}.{a}"),
        ("internal_host", host),
        ("internal_host", f"ip-10-{c}-{b}-{a}.ec2.internal"),
        ("internal_host", f"{service}.{namespace}.svc.cluster.local"),
        ("internal_host", f"gpu-node-{rng.randint(1, 64)}.{company}.internal"),
        ("internal_url", f"http://{service}.{namespace}.svc.cluster.local:{rng.randint(1024, 65000)}/v1/models"),
        ("internal_url", f"https://10.{c}.{a}.{b}/api/health"),
        ("home_path", f"/home/{first}{last[0]}"),
        ("home_path", f"/Users/{first}.{last}"),
    ]


PLACEHOLDERS = [
    "user@example.com", "noreply@example.org", "admin@test.example", "127.0.0.1", "0.0.0.0", "192.0.2.10",
    "198.51.100.23", "203.0.113.77", "8.8.8.8", "169.254.169.254", "localhost", "host.docker.internal",
    "metadata.google.internal", "kubernetes.default.svc.cluster.local", "/home/user", "/home/ubuntu", "/root",
    "/home/runner", "threading.local()", "self.internal", "numpy 1.10.0.3", "root@sandbox:/app#", "http://localhost:8000/",
    "https://example.com/docs", "git@github.com:org/repo.git", "python3.11/site-packages",
]  # fmt: skip


def frames(category: str, value: str, rng: random.Random) -> list[str]:
    """Where a value shows up in a trace: a command's output, a config file, a traceback, a log line."""
    if category == "home_path":
        return [
            f'Traceback (most recent call last):\n  File "{value}/work/train.py", line {rng.randint(1, 400)}, in main',
            f"{PROMPT}ls {value}/.cache\nhuggingface  pip  torch",
        ]
    if category == "email":
        return [f"{PROMPT}git log -1\nAuthor: Someone <{value}>\nDate:   Mon", f"notify: '{value}'\n"]
    return [
        f'{PROMPT}curl -s {value}\n{{"status": "ok"}}',
        f"2025-01-01T00:00:00Z INFO connected to {value} in {rng.randint(1, 99)} ms",
        f'{{"endpoint": "{value}", "retries": 3}}',
    ]


def random_word(rng: random.Random) -> str:
    return "".join(rng.choice(string.ascii_lowercase) for _ in range(8))
