"""Secrets in the framings agent traces print them in are found with their verdict, and `redact`
leaves no byte sequence of any planted secret longer than 8 characters, in any framing."""

from __future__ import annotations

import base64
import json
import random

import polars as pl
import pytest

from trace_assets.secret_scan.redaction import redact
from trace_assets.secret_scan.scanner import SecretScanner
from trace_assets_tests.support.secret_framings import FRAMINGS, ec_pem, pem_split, rsa_pem, tallies_per_trial, tokens

RNG = random.Random(14)
SECRETS = {**tokens(RNG), "pem_rsa": ("private_key", rsa_pem()), "pem_ec": ("private_key", ec_pem())}


def _row(messages: list[str], trial_name: str = "t__1") -> dict:
    return {
        "conversations": [{"role": ("user", "assistant")[i % 2], "content": m} for i, m in enumerate(messages)],
        "trial_name": trial_name,
        "task": "t",
        "trace_source": "main",
        "instruction": "Do the task.",
        "verifier_output": None,
    }


def _cases() -> list[tuple[str, str, str, list[str]]]:
    cases = []
    for name, (kind, secret) in SECRETS.items():
        for framing, frame in FRAMINGS.items():
            cases.append((f"{name}-{framing}", kind, secret, ["You are an agent.", frame(secret)]))
        if kind == "private_key":
            cases.append((f"{name}-pem_split", kind, secret, pem_split(secret)))
    return cases


CASES = _cases()


def _windows(secret: str, size: int = 9) -> set[str]:
    return {secret[i : i + size] for i in range(len(secret) - size + 1)}


@pytest.fixture(scope="module")
def tallies() -> dict[str, dict[str, dict[str, int]]]:
    """Every case's row scanned in one scan, each its own trial."""
    return tallies_per_trial([_row(messages, case) for case, _, _, messages in CASES])


@pytest.mark.parametrize(("case", "kind", "secret", "messages"), CASES, ids=[c[0] for c in CASES])
def test_found_live_and_redacted_whole(tallies, case, kind, secret, messages):
    assert tallies.get(case, {}).get(kind, {}).get("live", 0) >= 1, tallies.get(case)
    frame = pl.DataFrame([_row(messages)])
    redacted, counts = redact(frame)
    assert counts.get(kind, 0) >= 1
    texts = [m["content"] for m in redacted["conversations"][0]]
    encoded = base64.b64encode(secret.encode()).decode()
    leftover = [
        w
        for w in _windows(secret) | _windows(encoded) | _windows(json.dumps(secret)[1:-1])
        if any(w in t for t in texts)
    ]
    assert not leftover, leftover[:3]


def test_report_names_the_framing():
    kind, secret = SECRETS["github"]
    scanner = SecretScanner("r")
    scanner.scan(pl.DataFrame([_row(["sys", FRAMINGS["rewrap"](secret)]), _row(["sys", FRAMINGS["base64"](secret)])]))
    framings = {f["framing"] for f in scanner.report()["findings"] if f["kind"] == kind}
    assert framings == {"rewrap", "base64"}


def test_a_coloured_token_three_json_layers_deep_is_found_live():
    """`env | grep --color` in a tool's JSON output, inside a step's JSON, inside a row's JSON: the
    colour sits right before the token, so only the view unescaped three times reads it."""
    kind, secret = SECRETS["github"]
    text = f"\x1b[01;31m\x1b[KGITHUB_TOKEN\x1b[m\x1b[K=\x1b[01;31m\x1b[K{secret}\x1b[m\x1b[K\n"
    for _ in range(3):
        text = json.dumps({"output": text})
    scanner = SecretScanner("r")
    scanner.scan(pl.DataFrame([_row(["sys", text])]))
    assert scanner.report()["kinds"][kind]["live"] == 1
