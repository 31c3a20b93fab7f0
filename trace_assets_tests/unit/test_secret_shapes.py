"""Issue 23's leaking shapes: each found and redacted whole, in rows and in session-shaped rows
(a session file's texts, tool calls and agent turns between the observations); and near misses
(a token's prefix, not its exact shape, no credential word) reported but not acted on."""

from __future__ import annotations

import random

import polars as pl
import pytest

from trace_assets.secret_scan.redaction import redact
from trace_assets.secret_scan.scanner import ScanOptions, SecretScanner
from trace_assets_tests.support.secret_framings import (
    HARD_SHAPES,
    PEM_SHAPES,
    ec_pem,
    leaked_pieces,
    rsa_pem,
    tallies_per_trial,
    tokens,
)

RNG = random.Random(23)
TOKENS = tokens(RNG)
PEMS = {"rsa": rsa_pem(), "ec": ec_pem()}


def _cases() -> list[tuple[str, str, str, list[str]]]:
    cases = []
    for shape, frame in HARD_SHAPES.items():
        if shape in PEM_SHAPES:
            cases += [(f"{shape}-{name}", "private_key", pem, frame(pem)) for name, pem in PEMS.items()]
        else:
            for name in ("github", "openai", "anthropic", "stripe", "jwt"):
                kind, secret = TOKENS[name]
                cases.append((f"{shape}-{name}", kind, secret, frame(secret)))
    return cases


CASES = _cases()


def _row(messages: list[str], session: bool, trial_name: str = "t__1") -> dict:
    """A row, or a session as the scan reads one: every string of its lines a message, tool calls
    and agent turns between the observations."""
    if session:
        between = ['{"command": "cat key"}', "call_1", "I will read the rest."]
        messages = [m for message in messages for m in (message, *between)]
    conversation = [{"role": ("user", "assistant")[i % 2], "content": m} for i, m in enumerate(messages)]
    return {"conversations": [{"role": "system", "content": "sys"}, *conversation], "trial_name": trial_name}


def _frame(messages: list[str], session: bool) -> pl.DataFrame:
    return pl.DataFrame([_row(messages, session)])


@pytest.fixture(scope="module")
def tallies() -> dict[str, dict[str, dict[str, int]]]:
    """Every case's row and session scanned in one scan, each its own trial."""
    rows = [_row(c[3], session, f"{c[0]}-{session}") for c in CASES for session in (False, True)]
    return tallies_per_trial(rows)


@pytest.mark.parametrize("session", [False, True], ids=["row", "session"])
@pytest.mark.parametrize(("case", "kind", "secret", "messages"), CASES, ids=[c[0] for c in CASES])
def test_found_live_and_redacted_whole(tallies, case, kind, secret, messages, session):
    assert tallies.get(f"{case}-{session}", {}).get(kind, {}).get("live", 0) >= 1
    frame = _frame(messages, session)
    redacted, counts = redact(frame)
    assert counts.get(kind, 0) >= 1
    texts = [m["content"] for m in redacted["conversations"][0]]
    assert not leaked_pieces(secret, texts)


def _verdicts(text: str, options: ScanOptions | None = None) -> set[tuple[str, str]]:
    scanner = SecretScanner("r", options)
    scanner.scan(_frame([text], session=False))
    return {(f["kind"], f["verdict"]) for f in scanner.report()["findings"]}


@pytest.mark.parametrize(
    ("bare", "kind", "kept_as"),
    [
        ("hf_requiredCharacteristicTypesForDisplayMetadata", "hf_token", "placeholder"),  # words
        ("xoxb-12345-abcd234", "slack_token", "near_miss"),  # counting, then a few letters
        ("ghp_Bn7QzK2vLx9Wd4TfR8yHs3MpA6cJe1UgN5oi", "github_token", None),  # generated, not its CRC32
        ("sk-proj-jLy4LrGWuQbUf6vUULm4A2Aohhhvtf-FPepL0z9zE40-eC14", "openai_api_key", None),  # no marker
    ],
)
def test_a_near_miss_is_redacted_when_its_body_looks_generated_or_kept_by_setting(bare, kind, kept_as):
    """A vendor's prefix whose body fails the exact format, with no credential word before it: a
    generated-looking body is `unverified` (redacted by default), unless `near_misses="keep"` keeps
    it as a near miss; a body that does not look generated is kept either way (`kept_as`); a credential
    word before a generated body acts whatever the setting."""
    text, kept = f"- (id){bare};\n", ScanOptions(near_misses="keep")
    if kept_as is None:
        assert _verdicts(text) == {(kind, "unverified")} and redact(_frame([text], session=False))[1] != {}
        assert _verdicts(text, kept) == {(kind, "near_miss")}
        assert _verdicts(f"export MY_TOKEN={bare}\n", kept) == {(kind, "unverified")}
    else:
        assert _verdicts(text) == _verdicts(text, kept) == {(kind, kept_as)}
    assert redact(_frame([text], session=False), kept)[1] == {}


def test_a_line_ending_in_a_token_does_not_swallow_the_next_line():
    _, secret = TOKENS["github"]
    frame = _frame([f"GITHUB_TOKEN={secret}\nnext line\nroot@sandbox:/app# "], session=False)
    redacted, _ = redact(frame)
    assert (
        redacted["conversations"][0][1]["content"]
        == "GITHUB_TOKEN=[REDACTED:github_token]\nnext line\nroot@sandbox:/app# "
    )
