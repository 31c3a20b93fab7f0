"""Each vendor kind: a generated key in its exact format is found `live` (its shape check passes), and
a near miss (one character short, a wrong prefix, no keyword) is not found as that kind at all."""

from __future__ import annotations

import base64
import random
import string
from collections.abc import Callable
from pathlib import Path

import polars as pl
import pytest

from trace_assets.secret_scan.kinds import BUILTIN_KINDS, ascii_classes, has_capturing_group
from trace_assets.secret_scan.scanner import SecretScanner
from trace_assets_tests.support.secret_framings import tallies_per_trial

ALNUM = string.ascii_letters + string.digits
HEX = "0123456789abcdef"
KINDS = {kind.name: kind for kind in BUILTIN_KINDS}
CORPUS = Path(__file__).resolve().parents[1] / "data" / "secrets" / "corpus.jsonl"


def _r(rng: random.Random, alphabet: str, n: int) -> str:
    """Random characters holding at least one upper, lower and digit where the alphabet has them."""
    while True:
        text = "".join(rng.choice(alphabet) for _ in range(n))
        wanted = [c for c in (string.ascii_uppercase, string.ascii_lowercase, string.digits) if set(c) & set(alphabet)]
        if all(set(text) & set(charset) for charset in wanted):
            return text


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _slack_webhook(g: random.Random) -> tuple[str, str, str]:
    upper = string.ascii_uppercase + string.digits
    key = f"hooks.slack.com/services/T{_r(g, upper, 8)}/B{_r(g, upper, 10)}/{_r(g, ALNUM, 24)}"
    return f"curl -X POST https://{key}", key, f"curl -X POST https://hooks.slack.com/services/T{_r(g, upper, 8)}/x"


def _discord_webhook(g: random.Random) -> tuple[str, str, str]:
    key = f"discord.com/api/webhooks/{_r(g, string.digits, 18)}/{_r(g, ALNUM + '-_', 68)}"
    return (
        f"url=https://{key}",
        key,
        f"url=https://discord.com/api/webhooks/{_r(g, string.digits, 16)}/{_r(g, ALNUM, 68)}",
    )


BECH32 = "qpzry9x8gf2tvdw0s3jn54khce6mua7l"


def _bech32_polymod(values: list[int]) -> int:
    checksum = 1
    for value in values:
        top, checksum = checksum >> 25, (checksum & 0x1FFFFFF) << 5 ^ value
        for i, generator in enumerate((0x3B6A57B2, 0x26508E6D, 0x1EA119FA, 0x3D4233DD, 0x2A1462B3)):
            checksum ^= generator if (top >> i) & 1 else 0
    return checksum


def _age_key(g: random.Random) -> str:
    """An age identity as `age-keygen` writes it: Bech32 of 32 random bytes (52 characters) and its checksum."""
    hrp, data = "age-secret-key-", [g.randrange(32) for _ in range(52)]
    expanded = [ord(c) >> 5 for c in hrp] + [0] + [ord(c) & 31 for c in hrp]
    polymod = _bech32_polymod(expanded + data + [0] * 6) ^ 1
    checksum = [(polymod >> 5 * (5 - i)) & 31 for i in range(6)]
    return (hrp + "1" + "".join(BECH32[v] for v in data + checksum)).upper()


def _discord_bot_token(g: random.Random) -> str:
    user_id = _b64(str(g.randrange(10**17, 10**19)).encode()).rstrip("=")
    return f"{user_id}.{_r(g, ALNUM, 6)}.{_r(g, ALNUM + '_-', 38)}"


# kind -> (text holding a live key, its secret, a near-miss text), from a seeded generator.
Case = Callable[[random.Random], tuple[str, str, str]]
CASES: dict[str, Case] = {
    "xai_api_key": lambda g: (f"XAI_API_KEY={(k := 'xai-' + _r(g, ALNUM, 80))}", k, f"x={'xai-' + _r(g, ALNUM, 79)}"),
    "deepseek_api_key": lambda g: (
        f"DEEPSEEK_API_KEY={(k := 'sk-' + _r(g, HEX, 32))}",
        k,
        f"OTHER_PROVIDER_KEY={'sk-' + _r(g, HEX, 32)}",
    ),
    "perplexity_api_key": lambda g: (f"k={(k := 'pplx-' + _r(g, ALNUM, 48))}", k, f"k=pplx-{_r(g, ALNUM, 47)}"),
    "cohere_api_key": lambda g: (f"COHERE_API_KEY={(k := _r(g, ALNUM, 40))}", k, f"COHERE_API_KEY={_r(g, ALNUM, 39)}"),
    "replicate_api_token": lambda g: (f"k={(k := 'r8_' + _r(g, ALNUM, 37))}", k, f"k=r8_{_r(g, ALNUM, 36)}"),
    "langsmith_api_key": lambda g: (
        f"LANGSMITH_API_KEY={(k := f'lsv2_pt_{_r(g, HEX, 32)}_{_r(g, HEX, 10)}')}",
        k,
        f"LANGSMITH_API_KEY=lsv2_pt_{_r(g, HEX, 32)}_{_r(g, HEX, 9)}",
    ),
    "pinecone_api_key": lambda g: (
        f"k={(k := f'pcsk_{_r(g, ALNUM, 6)}_{_r(g, ALNUM, 60)}')}",
        k,
        f"k=pcsk_{_r(g, ALNUM, 3)}_{_r(g, ALNUM, 60)}",
    ),
    "azure_openai_api_key": lambda g: (
        f"AZURE_OPENAI_API_KEY={(k := _r(g, HEX, 32))}",
        k,
        f"AZURE_OPENAI_API_KEY={_r(g, HEX, 31)}",
    ),
    "wandb_api_key": lambda g: (f"WANDB_API_KEY={(k := _r(g, HEX, 40))}", k, f"WANDB_API_KEY={_r(g, HEX, 39)}"),
    "pypi_token": lambda g: (
        f"password = {(k := 'pypi-AgEIcHlwaS5vcmc' + _r(g, ALNUM + '-_', 70))}",
        k,
        f"password = pypi-AgEIcHlwaS5vcmd{_r(g, ALNUM, 70)}",
    ),
    "slack_webhook": lambda g: _slack_webhook(g),
    "discord_webhook": lambda g: _discord_webhook(g),
    "twilio_api_key": lambda g: (
        f"TWILIO_API_KEY={(k := 'SK' + _r(g, HEX, 32))}",
        k,
        f"TWILIO_API_KEY=SK{_r(g, HEX, 31)}",
    ),
    "mailgun_api_key": lambda g: (
        f"api: {(k := 'key-' + _r(g, string.digits + string.ascii_lowercase, 32))}",
        k,
        f"api: key-{_r(g, string.digits + string.ascii_lowercase, 31)}",
    ),
    "azure_storage_key": lambda g: (
        f"DefaultEndpointsProtocol=https;AccountName=a;AccountKey={(k := _b64(g.randbytes(64)))};EndpointSuffix=x",
        k,
        f"DefaultEndpointsProtocol=https;AccountName=a;AccountKey={_b64(g.randbytes(48))};EndpointSuffix=x",
    ),
    "age_secret_key": lambda g: (
        f"# public key: age1{_r(g, BECH32, 58)}\n{(k := _age_key(g))}",
        k,
        f"AGE-SECRET-KEY-1{_r(g, BECH32.upper(), 57)}",
    ),
    "azure_connection_string": lambda g: (
        f"Endpoint=sb://ns.servicebus.windows.net/;SharedAccessKeyName=Root;SharedAccessKey={(k := _b64(g.randbytes(32)))}",
        k,
        f"Endpoint=sb://ns.servicebus.windows.net/;SharedAccessKeyName=Root;SharedAccessKey={_b64(g.randbytes(24))}",
    ),
    "discord_bot_token": lambda g: (
        f"DISCORD_BOT_TOKEN={(k := _discord_bot_token(g))}",
        k,
        f"SOME_TOKEN={_discord_bot_token(g)}",
    ),
    "azure_client_secret": lambda g: (
        f'"clientSecret": "{(k := _r(g, ALNUM, 3) + "8Q~" + _r(g, ALNUM + "_~.-", 34))}"',
        k,
        f'"clientSecret": "{_r(g, ALNUM, 3)}xQ~{_r(g, ALNUM, 34)}"',
    ),
    "vault_token": lambda g: (
        f"VAULT_TOKEN={(k := 'hvs.' + _r(g, ALNUM, 24))}",
        k,
        f"VAULT_TOKEN=hvs.{_r(g, ALNUM, 20)}",
    ),
    "databricks_token": lambda g: (f"t={(k := 'dapi' + _r(g, HEX, 32))}", k, f"t=dapi{_r(g, HEX, 31)}"),
    "digitalocean_token": lambda g: (f"t={(k := 'dop_v1_' + _r(g, HEX, 64))}", k, f"t=dop_v1_{_r(g, HEX, 63)}"),
    "heroku_api_key": lambda g: (f"t={(k := 'HRKU-' + _r(g, ALNUM + '_-', 60))}", k, f"t=HRKU-{_r(g, ALNUM, 50)}"),
    "sentry_token": lambda g: (f"t={(k := 'sntryu_' + _r(g, HEX, 64))}", k, f"t=sntryu_{_r(g, HEX, 40)}"),
    "grafana_token": lambda g: (
        f"t={(k := f'glsa_{_r(g, ALNUM, 32)}_{_r(g, HEX, 8)}')}",
        k,
        f"t=glsa_{_r(g, ALNUM, 32)}_{_r(g, HEX, 7)}",
    ),
    "cloudflare_api_token": lambda g: (
        f"CLOUDFLARE_API_TOKEN={(k := _r(g, ALNUM + '_-', 40))}",
        k,
        f"CLOUDFLARE_API_TOKEN={_r(g, ALNUM, 39)}",
    ),
    "vercel_token": lambda g: (f"VERCEL_TOKEN={(k := _r(g, ALNUM, 24))}", k, f"VERCEL_TOKEN={_r(g, ALNUM, 23)}"),
    "modal_token_secret": lambda g: (
        f"MODAL_TOKEN_SECRET={(k := 'as-' + _r(g, ALNUM, 22))}",
        k,
        f"MODAL_TOKEN_SECRET=as-{_r(g, ALNUM, 21)}",
    ),
    "daytona_api_key": lambda g: (f"t={(k := 'dtn_' + _r(g, ALNUM, 40))}", k, f"t=dtn_{_r(g, ALNUM, 20)}"),
    "e2b_api_key": lambda g: (f"t={(k := 'e2b_' + _r(g, HEX, 40))}", k, f"t=e2b_{_r(g, HEX, 39)}"),
    "basic_auth": lambda g: (
        f"Authorization: Basic {(k := _b64(f'alice:{_r(g, ALNUM, 16)}'.encode()))}",
        k,
        f"X-Basic: {_b64(f'alice:{_r(g, ALNUM, 16)}'.encode())}",
    ),
    "docker_auth": lambda g: (
        f'{{"auths": {{"ghcr.io": {{"auth": "{(k := _b64(f"bob:{_r(g, ALNUM, 20)}".encode()))}"}}}}}}',
        k,
        '{"auths": {"ghcr.io": {"auth": "c2hvcnQ="}}}',
    ),
}


def _messages(text: str) -> list[dict[str, str]]:
    messages = ["You are an agent.", f"root@sandbox:/app# cat .env\n{text}\nroot@sandbox:/app# "]
    return [{"role": "user", "content": m} for m in messages]


def _report(text: str) -> dict:
    scanner = SecretScanner("r")
    scanner.scan(pl.DataFrame([{"conversations": _messages(text), "trial_name": "t__1"}]))
    return scanner.report()


SEEDS = (1, 2, 3)


@pytest.fixture(scope="module")
def generated() -> dict[str, dict[str, dict[str, int]]]:
    """Every case's key and near miss, for each seed, in one scan: each its own trial."""
    rows = []
    for name in CASES:
        for seed in SEEDS:
            text, _, near_miss = CASES[name](random.Random(f"{name}-{seed}"))
            rows.append({"conversations": _messages(text), "trial_name": f"{name}-{seed}"})
            rows.append({"conversations": _messages(near_miss), "trial_name": f"{name}-{seed}-near_miss"})
    return tallies_per_trial(rows)


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("seed", SEEDS)
def test_generated_key_is_live_and_near_miss_is_not_found(generated, name, seed):
    _, secret, _ = CASES[name](random.Random(f"{name}-{seed}"))
    kind = KINDS[name]
    assert kind.shape is not None and kind.shape(secret)
    found = generated.get(f"{name}-{seed}", {}).get(name, {})
    assert (found.get("matches", 0), found.get("live", 0)) == (1, 1), found
    assert generated.get(f"{name}-{seed}-near_miss", {}).get(name, {}).get("matches", 0) == 0


def test_every_vendor_kind_has_a_case_here_or_in_the_planted_corpus():
    planted_elsewhere = {
        "jwt",
        "aws_access_key_id",
        "aws_secret_access_key",
        "openai_api_key",
        "anthropic_api_key",
        "hf_token",
        "github_token",
        "slack_token",
        "google_api_key",
        "private_key",
        "pgp_private_key",
        "openrouter_api_key",
        "groq_api_key",
        "npm_token",
        "gitlab_token",
        "stripe_key",
        "sendgrid_api_key",
    }
    generic = {"bearer_token", "url_password", "generic_password", "generic_secret", "generic_api_key"}
    assert set(KINDS) - generic - planted_elsewhere - {"vendor_token"} == set(CASES) - {"vendor_token"}


_LOWER_ALNUM = string.ascii_lowercase + string.digits
# Formats of vendors we do not claim, as the imported rules (vendor_rules.py) name them.
VENDOR_CASES: dict[str, Callable[[random.Random], str]] = {
    "todoist, keyword then value (kingfisher)": lambda g: f"todoist token: {_r(g, _LOWER_ALNUM, 40)}",
    "doppler, prefixed (kingfisher)": lambda g: f"DOPPLER_TOKEN=dp.pt.{_r(g, ALNUM, 43)}",
    "shopify, prefixed (gitleaks)": lambda g: f"shop = shpat_{_r(g, HEX, 32)}",
    "adafruit, semi-generic (gitleaks)": lambda g: f'ADAFRUIT_IO_KEY="{_r(g, _LOWER_ALNUM, 32)}"',
}


@pytest.mark.parametrize("case", sorted(VENDOR_CASES))
def test_a_vendor_format_we_do_not_claim_is_found_unverified_never_live(case):
    found = _report(VENDOR_CASES[case](random.Random(case)))["kinds"]["vendor_token"]
    assert (found["matches"], found["unverified"], found["live"]) == (1, 1, 0), found


def test_a_vendor_value_below_its_rule_s_entropy_is_no_match():
    assert _report(f"todoist token: {'ab12' * 10}")["kinds"]["vendor_token"]["matches"] == 0


def test_a_kind_of_our_own_wins_where_a_vendor_rule_matches_the_same_text():
    assert KINDS["github_token"].rank > KINDS["vendor_token"].rank > KINDS["generic_api_key"].rank


_SHA = "3f9c2b7e1d4a6058c9e2f1b3a7d4c6e8f0a1b2c3"
_UUID4 = "7c9e6679-7425-40de-944b-e07fc1f90ae7"
_MD5 = "9e107d9d372bb6826bd81d3542a419d6"


@pytest.mark.parametrize(
    "text",
    [
        f"wandb commit: {_SHA}",
        f"WANDB_GIT_COMMIT={_SHA}",
        f"Heroku release: {_UUID4}",
        f"Heroku release: {_UUID4.upper()}",
        f"heroku_release_id={_UUID4}",
        f"pinecone index: {_UUID4}",
        f"azure_openai deployment: {_MD5}",
        f"twilio message: {_MD5}",
        f"twilio_message_sid={_MD5}",
        "token: s.Q7XK2M9PZR4TLW8NB3YC6HDV",  # a legacy Vault body of upper case and digits only
    ],
)
def test_ordinary_trace_text_beside_a_vendor_name_is_not_live(text):
    """Commit shas, release and index ids, message hashes: bare hex or UUIDs are only credentials
    beside the exact credential variable."""
    assert all(counts["live"] == 0 for counts in _report(text)["kinds"].values()), text


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        (f"WANDB_API_KEY={_SHA}", "wandb_api_key"),
        (f'"HEROKU_API_KEY": "{_UUID4.upper()}"', "heroku_api_key"),
        (f"PINECONE_API_KEY={_UUID4}", "pinecone_api_key"),
        (f"api-key: {_MD5}", "azure_openai_api_key"),
        (f"TWILIO_AUTH_TOKEN={_MD5}", "twilio_api_key"),
        ("VAULT_TOKEN=s.Q7xK2m9PZr4TLw8NB3yC6HDv", "vault_token"),
        ("CF_API_KEY=1e4b7c0d2a9f3e6b8c5d0a7f2e4b6c9d1a3f5", "cloudflare_api_token"),  # a global key: 37 hex
    ],
)
def test_the_exact_credential_variable_keeps_a_bare_value_live(text, kind):
    assert _report(text)["kinds"][kind]["live"] == 1, text


_AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzQ8xK2m9PZ"


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        (f"aws_secret_access_key{' ' * 20}= {_AWS_SECRET}", "aws_secret_access_key"),
        (f'DB_PASSWORD{" " * 24}= "S3cr3t-Pa55w0rd-9x7Q"', "generic_password"),
        (f'  secret_key{" " * 40}= "{_AWS_SECRET}"', "generic_secret"),  # terraform fmt
    ],
)
def test_a_value_in_an_aligned_column_is_found(text, kind):
    """Printed tables and formatted configs pad keys to a column: up to 128 spaces before a value."""
    assert _report(text)["kinds"][kind]["matches"] == 1, text


@pytest.mark.parametrize(
    ("text", "kind", "verdict"),
    [
        ("curl --user kevin:'pRf7vG2h1L8nQkW9' -iX PATCH https://api.test", "generic_password", "unverified"),
        (
            'curl -s -H "Authorization: Token 22cb987851bc5659229114c62e60c79abd0d2c08" https://api.test',
            "generic_api_key",
            "unverified",
        ),
        ('curl -X POST --header "Api-Token: Sk94HG7fq6KB3x" https://api.test', "generic_api_key", "unverified"),
        ('curl -sL --user "$GITHUB_USERNAME:$GITHUB_PASSWORD" "$GITHUB_URL"', "generic_password", "placeholder"),
        ("curl -u username:token https://api.test", "generic_password", "placeholder"),
    ],
)
def test_curl_s_user_and_header_options_are_credentials_in_context(text, kind, verdict):
    found = _report(text)["kinds"][kind]
    assert (found["matches"], found[verdict]) == (1, 1), found


@pytest.mark.parametrize(
    ("token", "verdict"),
    [
        ("xoxb-34532454-e039d02840a0b9379c", "unverified"),  # a legacy bot token: gitleaks' looser shape
        ("xoxs-523423-234243-234233-e039d02840a0b9379c", "unverified"),
        ("xoxb-48213-prettyword", "placeholder"),  # a word under the prefix: no shape, no credential word
        # words under the prefix: a test string, whatever its length (25: an incoming mail token's)
        ("glimt-my7tokens2are-correctAB38", "placeholder"),
        ("glimt-my7tokens2are-correctAB", "placeholder"),
    ],
)
def test_a_token_failing_its_exact_shape_but_having_its_rough_one_is_acted_on_without_a_credential_word(token, verdict):
    kind = "slack_token" if token.startswith("xox") else "gitlab_token"
    found = _report(f"see {token} in the log")["kinds"][kind]
    assert (found["matches"], found[verdict]) == (1, 1), found


def test_every_vendor_rule_compiles_matches_nothing_empty_and_has_a_literal():
    """`SecretKind` checks its rules at import, but not the generated vendor rules (hundreds of
    compiles at every start): they are checked here once."""
    rules = KINDS["vendor_token"].rules
    assert len(rules) > 500 and all(rule.literals and min(map(len, rule.literals)) >= 3 for rule in rules)
    empty = pl.select(pl.lit("").str.contains(rule.search_regex).alias(str(i)) for i, rule in enumerate(rules)).row(0)
    assert not any(empty)


def test_ascii_classes_rewrites_the_classes_outside_and_inside_brackets_only():
    assert ascii_classes(r"(?:EAAA|sq0atp-)[\w-]{22,60}") == "(?:EAAA|sq0atp-)[0-9A-Za-z_-]{22,60}"
    assert (
        ascii_classes(r"\bkey\s*=\s*(\d+)\b") == r"(?-u:\b)key[\t\n\x0B\f\r\x20]*=[\t\n\x0B\f\r\x20]*([0-9]+)(?-u:\b)"
    )
    # escaped backslashes, a `]` first in a class, nested classes and the other escapes are kept
    assert ascii_classes(r"\\w[]\d][^]\w][[:word:]\s]\S\W\B") == (
        r"\\w[]0-9][^]0-9A-Za-z_][[:word:]\t\n\x0B\f\r\x20]\S\W\B"
    )


def test_ascii_whitespace_holds_the_space_in_verbose_mode():
    regex = ascii_classes(r"(?x) key \s = \s* ([a-z]+)")
    assert pl.select(pl.lit("key = abc").str.extract(regex, 1)).item() == "abc"


def test_ascii_classes_leave_every_rule_s_matches_on_the_recall_corpus_unchanged():
    """The rules as written (Unicode classes) and as run (ASCII, cheap to compile) find the same."""
    texts = pl.read_ndjson(CORPUS).select("text")
    rules = [rule for kind in BUILTIN_KINDS for rule in kind.rules]
    assert sum(rule.search_regex != rule.regex for rule in rules) > 300

    def matches(regexes: list[str]) -> pl.DataFrame:
        return texts.select(pl.col("text").str.extract_all(regex).alias(str(i)) for i, regex in enumerate(regexes))

    written, run = matches([rule.regex for rule in rules]), matches([rule.search_regex for rule in rules])
    assert sum(written.select(pl.all().list.len().sum()).row(0)) > 500
    assert written.equals(run)


def test_capturing_groups_are_read_off_the_regex_as_polars_reads_them():
    regexes = [rule.regex for kind in BUILTIN_KINDS for rule in kind.rules]
    regexes += ["(a)", "(?:a)", r"\(a", "[(]", "[]()]", "[^]]", "(?P<x>a)", "[[:alpha:](]", r"[\]](a)", "[a-z&&[^(]]"]
    for regex in regexes:
        polars_says = bool(pl.select(pl.lit("").str.extract_groups(regex)).to_series().struct.fields)
        assert has_capturing_group(regex) == polars_says, regex


_SAS_SIG = "Zk3mQ9vT2xLp8RwY4nB6cJ1hF5gD7sA0eUq1w2E3r4T%3D"  # URL-encoded base64 of 32 bytes: an HMAC-SHA256


@pytest.mark.parametrize(
    "text, kind, verdict",
    [
        # an age key whose checksum fails (made up, or cut and mended) has its charset and length: acted on
        ("AGE-SECRET-KEY-1" + ("QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L" * 2)[:58], "age_secret_key", "unverified"),
        (
            f"BlobEndpoint=https://a.blob.core.windows.net/;SharedAccessSignature=sv=2022-11-02&ss=b&sig={_SAS_SIG}",
            "azure_connection_string",
            "live",
        ),
        # Azurite's account key is in Microsoft's docs: a public sample
        (
            "AccountKey=Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==",
            "azure_storage_key",
            "placeholder",
        ),
        (
            'client.run("MTIzNDU2Nzg5MDEyMzQ1Njc4OQ.GhIjKl.MnOpQrStUvWxYzAbCdEfGhIjKlMnOpQrStUv")',
            "discord_bot_token",
            "live",
        ),
    ],
)
def test_kinds_traces_print(text, kind, verdict):
    found = _report(text)["kinds"][kind]
    assert found["matches"] == found[verdict] == 1, found
