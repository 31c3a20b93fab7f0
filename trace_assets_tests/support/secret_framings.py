"""Real-format secrets (checksummed tokens, keys made with `cryptography`) and the framings agent
traces print them in: shared by the framing tests and the recall measurement."""

from __future__ import annotations

import base64
import json
import random
import string
import urllib.parse
import zlib
from collections.abc import Callable
from typing import Any

import polars as pl
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from trace_assets.secret_scan.scanner import SecretScanner

ALNUM = string.ascii_letters + string.digits
BASE62 = string.digits + string.ascii_uppercase + string.ascii_lowercase
PROMPT = "root@sandbox:/app# "
WIDTH = 160


def tallies_per_trial(rows: list[dict[str, Any]]) -> dict[str, dict[str, dict[str, int]]]:
    """Per trial, per kind: its matches and their count per verdict, from one scan of `rows` (a row a
    trial) — what a scan of that row alone says in its report's `kinds`, as the finder reads each
    row apart. One scan for hundreds of cases: a scan a case was most of these tests' time."""
    scanner = SecretScanner("r")
    scanner.scan(pl.DataFrame(rows))
    report = scanner.report()
    assert report["findings_omitted"] == 0
    tallies: dict[str, dict[str, dict[str, int]]] = {}
    for finding in report["findings"]:
        counts = tallies.setdefault(finding["trial_name"], {}).setdefault(finding["kind"], {"matches": 0})
        counts["matches"] += finding["occurrences"]
        counts[finding["verdict"]] = counts.get(finding["verdict"], 0) + finding["occurrences"]
    return tallies


def rand(rng: random.Random, alphabet: str, n: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


def crc_token(rng: random.Random, prefix: str) -> str:
    body = rand(rng, ALNUM, 30)
    value, digits = zlib.crc32(body.encode()), ""
    while value:
        value, digit = divmod(value, 62)
        digits = BASE62[digit] + digits
    return prefix + body + digits.rjust(6, "0")


def rsa_pem(bits: int = 2048) -> str:
    key = rsa.generate_private_key(public_exponent=65537, key_size=bits)
    fmt = serialization.PrivateFormat.PKCS8
    return key.private_bytes(serialization.Encoding.PEM, fmt, serialization.NoEncryption()).decode().strip()


def ec_pem() -> str:
    key = ec.generate_private_key(ec.SECP256R1())
    fmt = serialization.PrivateFormat.TraditionalOpenSSL
    return key.private_bytes(serialization.Encoding.PEM, fmt, serialization.NoEncryption()).decode().strip()


def tokens(rng: random.Random) -> dict[str, tuple[str, str]]:
    """name -> (kind, secret) for one live secret of each token kind, in its exact format."""
    jwt_head = base64.urlsafe_b64encode(b'{"alg":"HS256","typ":"JWT"}').rstrip(b"=").decode()
    claims = base64.urlsafe_b64encode(json.dumps({"sub": rand(rng, ALNUM, 10), "iat": 1714000000}).encode())
    return {
        "github": ("github_token", crc_token(rng, "ghp_")),
        "npm": ("npm_token", crc_token(rng, "npm_")),
        "openai": ("openai_api_key", f"sk-proj-{rand(rng, ALNUM, 60)}T3BlbkFJ{rand(rng, ALNUM, 60)}"),
        "anthropic": ("anthropic_api_key", f"sk-ant-api03-{rand(rng, ALNUM + '-_', 93)}AA"),
        "hf": ("hf_token", "hf_" + rand(rng, string.ascii_letters, 34)),
        "aws_id": ("aws_access_key_id", "AKIA" + rand(rng, string.ascii_uppercase + "234567", 16)),
        "jwt": ("jwt", f"{jwt_head}.{claims.rstrip(b'=').decode()}.{rand(rng, ALNUM + '-_', 43)}"),
        "slack": (
            "slack_token",
            f"xoxb-{rand(rng, string.digits, 12)}-{rand(rng, string.digits, 13)}-{rand(rng, ALNUM, 24)}",
        ),
        "stripe": ("stripe_key", "sk_live_" + rand(rng, ALNUM, 99)),
        "groq": ("groq_api_key", "gsk_" + rand(rng, ALNUM, 52)),
        "openrouter": ("openrouter_api_key", "sk-or-v1-" + rand(rng, "0123456789abcdef", 64)),
        "gitlab": ("gitlab_token", "glpat-" + rand(rng, ALNUM + "_-", 20)),
        "sendgrid": ("sendgrid_api_key", f"SG.{rand(rng, ALNUM, 22)}.{rand(rng, ALNUM, 43)}"),
        "google": ("google_api_key", "AIza" + rand(rng, ALNUM + "-_", 35)),
    }


def _rewrap(text: str) -> str:
    """A terminal of WIDTH columns: every line hard-wrapped, as terminus-2's screen captures are."""
    out = []
    for line in text.split("\n"):
        out += [line[i : i + WIDTH] for i in range(0, max(len(line), 1), WIDTH)]
    return "\n".join(out)


def _cat_n(text: str) -> str:
    return "\n".join(f"{i:6d}\t{line}" for i, line in enumerate(text.split("\n"), 1))


def _json(text: str) -> str:
    return json.dumps({"analysis": "Output:\n" + text, "commands": []})


# Framings of one secret: name -> (text holding it, or two messages for `pem_split`).
FRAMINGS: dict[str, Callable[[str], str]] = {
    "raw": lambda s: f"{PROMPT}cat .env\nTOKEN={s}\n{PROMPT}",
    "rewrap": lambda s: _rewrap(f"{PROMPT}echo {'x' * (WIDTH - len(PROMPT) - 20)} {s} done\n{PROMPT}"),
    "json_after_newline": lambda s: _json(s),
    "json_twice": lambda s: json.dumps({"keystrokes": _json(s)}),
    "cat_n": lambda s: f"{PROMPT}cat -n creds\n" + _cat_n(f"# creds\ntoken: {s}\n"),
    "cat_a": lambda s: f"{PROMPT}cat -A creds\n" + "".join(f"{line}$\n" for line in f"# creds\nkey: {s}".split("\n")),
    "json_slashes": lambda s: _json(s).replace("/", "\\/"),
    "yaml_indented": lambda s: (
        "apiVersion: v1\nstringData:\n  key: |\n" + "".join(f"    {line}\n" for line in s.split("\n"))
    ),
    "one_line": lambda s: f"{PROMPT}echo $KEY\n" + s.replace("\n", " ") + f"\n{PROMPT}",
    "base64": lambda s: f"data:\n  token: {base64.b64encode(s.encode()).decode()}\n",
    "url": lambda s: "GET /callback?token=" + urllib.parse.quote(s, safe="") + "&x=1",
}
PEM_ONLY = {"cat_a", "yaml_indented", "one_line", "json_slashes"}


def pem_split(pem: str) -> list[str]:
    """A PEM block cut between two consecutive messages, as a long `cat` spans two turns."""
    lines = pem.split("\n")
    half = len(lines) // 2
    return [f"{PROMPT}cat key.pem\n" + "\n".join(lines[:half]), "\n".join(lines[half:]) + f"\n{PROMPT}"]


def _wrap_at(text: str, width: int) -> str:
    return "\n".join(line[i : i + width] for line in text.split("\n") for i in range(0, max(len(line), 1), width))


def _grep_color(text: str) -> str:
    """`grep --color=always` around the match, with the erase-line escapes GNU grep adds."""
    return f"\x1b[01;31m\x1b[K{text}\x1b[m\x1b[K"


# The shapes of issue 23: name -> (kind, secret) -> the messages of one trajectory holding it.
HARD_SHAPES: dict[str, Callable[[str], list[str]]] = {
    "pem_run_on_env": lambda s: [
        f'{PROMPT}cat .env\nAPP_ENV=prod\nKEY="{s.replace(chr(10), "")}"\n{PROMPT}',
    ],
    "pem_two_observations": lambda s: [
        f"{PROMPT}cat /etc/ssl/private/server.key\n" + s[: len(s) // 2],
        '{"analysis": "The output was cut; waiting for the rest.", "commands": []}',
        "New Terminal Output:\n" + s[len(s) // 2 :] + f"\n{PROMPT}",
    ],
    "kubeconfig_key_data": lambda s: [
        f"{PROMPT}kubectl config view --raw\nusers:\n- name: admin\n  user:\n"
        f"    client-key-data: {base64.b64encode((s + chr(10)).encode()).decode()}\n{PROMPT}",
    ],
    "kubeconfig_wrapped_80": lambda s: [
        _wrap_at(
            f"{PROMPT}kubectl config view --raw\nusers:\n- name: admin\n  user:\n"
            f"    client-key-data: {base64.b64encode((s + chr(10)).encode()).decode()}\n{PROMPT}",
            80,
        )
    ],
    "json_value": lambda s: [json.dumps({"output": json.dumps({"auth": {"token": s}}, indent=2)})],
    "yaml_value": lambda s: [f"{PROMPT}cat config.yaml\nservice:\n  credentials:\n    api_token: '{s}'\n{PROMPT}"],
    "ansi_grep_color": lambda s: [
        f"{PROMPT}env | grep --color=always TOKEN\n{_grep_color('GITHUB_TOKEN')}={_grep_color(s)}\n{PROMPT}"
    ],
    "ansi_in_json": lambda s: [json.dumps({"output": f"{_grep_color('API_KEY')}={_grep_color(s)}\n{PROMPT}"})],
    **{
        f"wrapped_{width}": (
            lambda s, width=width: [
                _wrap_at(f"{PROMPT}export OPENAI_API_KEY={s}\n{PROMPT}echo ok\nok\n{PROMPT}", width)
            ]
        )
        for width in (57, 80, 100, 120, 132)
    },
}
# Which secrets each shape is about: PEM shapes take a key, the others a token.
PEM_SHAPES = {"pem_run_on_env", "pem_two_observations", "kubeconfig_key_data", "kubeconfig_wrapped_80"}


def leaked_pieces(secret: str, texts: list[str], size: int = 12) -> list[str]:
    """The `size`-character pieces of `secret` (or of its base64 or JSON-escaped forms) left in
    `texts`, line breaks and colour escapes there and in the secret ignored."""
    flat = "".join(t.replace("\\n", "").replace("\n", "").replace("\x1b", "") for t in texts)
    forms = [secret.replace("\n", ""), base64.b64encode((secret + "\n").encode()).decode()]
    return [f[i : i + size] for f in forms for i in range(0, len(f) - size + 1) if f[i : i + size] in flat]
