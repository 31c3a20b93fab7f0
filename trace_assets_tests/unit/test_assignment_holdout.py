"""The instrument of `benchmarks/assignment_holdout.py` (issue 46, item 6) holds what it claims: the
real names it plants credentials under each have a source and a class, and the records it generates
are the same for a seed, cover every framing and negative class, and hold their planted values.

No record is made with the held-out seed here: these tests check the instrument, never what it
measures, so nothing of the held-out split is printed or asserted on."""

from __future__ import annotations

import base64
import json

import pytest

from trace_assets_tests.support.assignment_names import MIN_REPOSITORIES, classify, load, problems, words
from trace_assets_tests.support.assignment_records import (
    FRAMINGS,
    NEGATIVE_CLASSES,
    TUNED_SEED,
    held_out_names,
    held_out_seed,
    records,
    tuned_names,
)

OTHER_SEED = 7  # real names with a seed that is not the held-out one: the generator's shape, no held-out value


@pytest.fixture(scope="module")
def names_file() -> dict:
    return load()


def test_names_file_is_well_formed(names_file: dict) -> None:
    assert problems(names_file) == []
    listed = {s["repo"] for s in names_file["sources"]}
    used = {w["repo"] for kind in ("credential", "setting") for e in names_file[f"{kind}_names"] for w in e["sources"]}
    assert used <= listed and len(used) >= MIN_REPOSITORIES
    assert all(e["sources"] for kind in ("credential", "setting") for e in names_file[f"{kind}_names"])
    credential = {words(e["name"]) for e in names_file["credential_names"]}
    setting = {words(e["name"]) for e in names_file["setting_names"]}
    assert not credential & setting
    assert len(credential) >= 150 and len(setting) >= 150


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("STRIPE_SECRET_KEY", "credential"),
        ("SMTP_PASSWORD", "credential"),
        ("githubToken", "credential"),
        ("api-key", "credential"),
        ("PGPASSWORD", "credential"),
        ("MAX_TOKENS", "setting"),
        ("TOKEN_TTL", "setting"),
        ("KEY_ALGORITHM", "setting"),
        ("SECRET_NAME", "setting"),
        ("existingSecret", "setting"),
        ("COMMIT_SHA", "setting"),
        ("NEXT_PRIVATE_SMTP_HOST", "setting"),
        ("AWS_ACCESS_KEY_ID", None),
        ("SMTP_AUTH", None),
        ("rootPasswordSecretKey", None),
        ("STRIPE_PUBLISHABLE_KEY", None),
    ],
)
def test_classify(name: str, kind: str | None) -> None:
    assert classify(name) == kind


@pytest.mark.parametrize("split", ["tuned", "real names"])
def test_records_are_deterministic_and_cover_everything(split: str) -> None:
    names, seed = (tuned_names(), TUNED_SEED) if split == "tuned" else (held_out_names(), OTHER_SEED)
    first = records(names, seed)
    assert first == records(names, seed)
    assert first != records(names, seed + 1)
    assert {r["group"] for r in first if r["positive"]} == set(FRAMINGS)
    assert {r["group"] for r in first if not r["positive"]} == set(NEGATIVE_CLASSES)
    for r in first:
        if r["positive"]:
            assert r["value"] and r["value"] in r["text"], r["group"]
            value = r["value"]
            if r["group"] == "Authorization: Basic":  # base64 of `user:generated`: the generated part counts
                value = base64.b64decode(value).decode().split(":", 1)[1]
            assert 12 <= len(value) <= 64, r["group"]
        if r["group"] == "JSON escaped in a tool result":
            assert json.loads(json.loads(r["text"])["output"])["config"]


def test_held_out_seed_is_one_integer() -> None:
    assert isinstance(held_out_seed(), int)
