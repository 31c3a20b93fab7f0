"""Credentials by assignment (issue 46): a credential word in a name, then a generated value, in every
framing traces print; never a name, reference, count, enum word or placeholder; a value never crosses
a line break; only credential-shaped values are replaced beyond the place they were found."""

from __future__ import annotations

import base64

import polars as pl
import pytest

from trace_assets.secret_scan.assignments import credential_name, generated, id_name
from trace_assets.secret_scan.redaction import redact
from trace_assets.secret_scan.scanner import Judge, ScanOptions, compiled_finder, judged_matches

VALUE = "u8jzPde0IgxLd6GncfBAepfJBd0Kh8oO"  # made up here: base62, 32 characters


def _found(*texts: str, options: ScanOptions | None = None) -> list[tuple[str, str, str]]:
    """(kind, verdict, secret) of every finding in `texts`, each a trial of its own."""
    options = options or ScanOptions()
    rows = pl.DataFrame(
        [{"conversations": [{"role": "user", "content": t}], "trial_name": str(i)} for i, t in enumerate(texts)]
    )
    _, matches, judgements, _, _ = judged_matches(compiled_finder(options), Judge((), options.near_misses), rows, 0)
    return [(m.kind.name, str(j.verdict), m.secret) for m, j in zip(matches, judgements)]


@pytest.mark.parametrize(
    "name", ["MYCOMPANY_API_TOKEN", "genericToken", "api-token", "auth.token", "X-Api-Key", "PGPASSWORD", "db_pwd"]
)
def test_a_credential_word_as_a_part_of_a_name(name):
    assert credential_name(name)


@pytest.mark.parametrize(
    "name", ["keyboard", "MONKEY", "tokenizer", "TOKEN_TTL", "SECRET_NAME", "KEY_ALGORITHM", "existingSecret"]
)
def test_a_name_without_a_credential_or_about_one(name):
    assert not credential_name(name)


def test_hex_and_uuids_after_an_ids_name_are_ids():
    assert id_name("TOKEN_SHA") and id_name("AUTH_REQUEST_ID") and not id_name("SENTRY_TOKEN")


@pytest.mark.parametrize(
    "value",
    [
        VALUE,
        base64.b64encode(bytes(range(7, 39))).decode(),
        "3f9a8c7d6e5b4a39281706f5e4d3c2b1a0f9e8d7c6b5a4938271605f4e3d2c1b",
        "a124d069-7887-4f3d-a498-78447cafb83e",
        "Tr0ub4dor&3x!Qz",
        base64.b64encode(b"deploy:" + VALUE.encode()).decode(),
    ],
)
def test_generated_values(value):
    assert generated(value)


@pytest.mark.parametrize(
    "value",
    [
        "prod/db/credentials",
        "aws-secretsmanager",
        "my-release-postgresql",
        "https://auth.example.com/oauth/access_token",
        "${GITHUB_TOKEN}",
        "$(cat /run/secrets/token)",
        "{{ secrets.API_TOKEN }}",
        "process.env.API_TOKEN",
        "****************",
        "################",
        "your-api-key-here",
        "87654321-4321-4321-4321-CBA987654321",
        base64.b64encode(b"user:pass").decode(),
        "CorrectHorseBatteryStaple",
        "3f9a8c7d6e5b4a39",  # hex shorter than 32: a commit's or an id's
        "409600000000",
        "2024-01-15T10:00:00Z",
    ],
)
def test_never_a_value(value):
    assert not generated(value)


@pytest.mark.parametrize(
    "text",
    [
        f"GENERIC_TOKEN={VALUE}",
        f'export MYCOMPANY_API_TOKEN="{VALUE}"',
        f"api_token='{VALUE}'",
        f"token = {VALUE}",
        f"app:\n  settings:\n    signingKey: {VALUE}\n",
        f'{{"a": {{"b": {{"generic_token": "{VALUE}"}}}}}}',
        f'{{"output": "{{\\"internal_service_key\\": \\"{VALUE}\\"}}"}}',
        f'[service]\npassword = "{VALUE}"',
        f'os.environ["SENTRY_TOKEN"] = "{VALUE}"',
        f'client = Client(api_key="{VALUE}")',
        f"PGPASSWORD={VALUE} psql -h db -U app",
        f"$ deploy --api-token {VALUE} --region eu",
        f"$ deploy --password={VALUE}",
        f"$ docker login -u ci -p {VALUE} registry.local",
        f"$ mysql -uroot -p{VALUE} app",
        f"machine api.local login ci password {VALUE}",
        f"X-Api-Key: {VALUE}",
        f"Authorization: Token {VALUE}",
        f"Authorization: Bearer {VALUE}",
        f"GET /v1/items?limit=5&access_token={VALUE}&page=2",
        f"https://storage.local/blob?sv=2022&sig={VALUE}",
        f"Server=db;Database=app;User Id=sa;Password={VALUE};",
    ],
)
def test_every_framing_is_found_and_removed(text):
    rows = pl.DataFrame({"conversations": [[{"role": "user", "content": text}]]})
    redacted, counts = redact(rows)
    assert counts, text
    assert VALUE not in redacted["conversations"][0][0]["content"], text


@pytest.mark.parametrize(
    "text",
    [
        "API_KEY=\nPYTHONUNBUFFERED=1",
        "API_KEY=\nLANG=C.UTF-8\nHOME=/root",
        "SECRET_NAME=prod/db/credentials",
        "SECRET_BACKEND=aws-secretsmanager",
        "access_token_url='https://auth.example.com/oauth/access_token'",
        "max_tokens=4096\nTOKEN_TTL=3600",
        "AUTH_TYPE=oauth2\nKEY_ALGORITHM=RS256",
        "API_TOKEN=${API_TOKEN}\nDB_PASSWORD=$(cat /run/secrets/db)",
        "TOKEN_SHA=3f9a8c7d6e5b4a39281706f5e4d3c2b1a0f9e8d7c6b5a4938271605f4e3d2c1b",
        "Authorization: Basic dXNlcjpwYXNz",
        "monkey = 'aB3dE5fG7hJ9kL1mN2pQ'",
        '{"key": "a3f9c8e7d6b5a4f3e2d1c0b9a8f7e6d5"}',
    ],
)
def test_negatives_are_not_acted_on(text):
    assert not [f for f in _found(text) if f[1] in ("live", "unverified")], text


def test_a_benign_line_found_once_is_never_replaced_elsewhere():
    """A short person-written password is replaced where it was found; the same text in another
    trial's env dump stays. A generated value is replaced wherever it occurs."""
    texts = ["DB_PASSWORD=C.UTF-8x9q", "LANG=C.UTF-8x9q\nHOME=/root", f"API_TOKEN={VALUE}", f"echo {VALUE}"]
    rows = pl.DataFrame({"conversations": [[{"role": "user", "content": t}] for t in texts]})
    redacted, _ = redact(rows)
    out = [message[0]["content"] for message in redacted["conversations"]]
    assert out[0] == "DB_PASSWORD=[REDACTED:generic_password]"
    assert out[1] == texts[1]
    assert out[2] == "API_TOKEN=[REDACTED:generic_api_key]" and out[3] == "echo [REDACTED:generic_api_key]"


NEAR_MISS = "ghp_aBcD1234eFgH5678iJkL9012mNoP3456qRsT"  # a GitHub token's shape whose checksum fails


def test_a_near_miss_with_a_generated_body_is_redacted_unless_kept():
    assert _found(NEAR_MISS) == [("github_token", "unverified", NEAR_MISS)]
    assert _found(NEAR_MISS, options=ScanOptions(near_misses="keep")) == [("github_token", "near_miss", NEAR_MISS)]


def test_words_under_a_vendors_prefix_are_a_placeholder():
    assert _found("glptt-hellOworld380_testin") == [("gitlab_token", "placeholder", "glptt-hellOworld380_testin")]
