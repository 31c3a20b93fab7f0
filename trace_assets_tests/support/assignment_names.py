"""The held-out names file (`data/secrets/assignment_names.json`): how a name is sorted into
credential and setting names, and what makes the file well-formed. benchmarks/build_assignment_holdout.py
derives and checks it (its docstring gives the rule); the record generator and the unit tests read it."""

from __future__ import annotations

import json
import re
from pathlib import Path

NAMES_FILE = Path(__file__).resolve().parent.parent / "data" / "secrets" / "assignment_names.json"
MIN_REPOSITORIES = 12


# The words that make a name hold a credential; a word ending in the long ones counts (`PGPASSWORD`).
CREDENTIAL_WORDS = frozenset(
    "token key secret password passwd pwd pass passphrase auth credential credentials apikey private".split()
)
CREDENTIAL_SUFFIXES = ("password", "passwd", "token", "secret", "apikey", "credentials")
# Words after the credential that say which one (`API_KEY_READ_ONLY`, `STRIPE_SECRET_KEY_SANDBOX`).
QUALIFIERS = frozenset("v sandbox test old member read only prod dev b64 base64".split())
# A last word that makes a name with a credential word a setting about the credential, not the credential.
SETTING_TAILS = frozenset(
    "ttl expiry expires expiration lifetime duration timeout seconds minutes hours days interval rotation "
    "length len size count limit max min name names ref path file files filename dir type algorithm alg "
    "enabled enable disabled url uri urls endpoint host port header method methods provider mode format prefix "
    "suffix policy version backend store strategy scheme source field issuer audience scope scopes realm domain "
    "user username email mount kind label labels annotations required optional allowed list options config "
    "configuration annotation selector secrets tokens keys refresh cache".split()
)
# A first word that makes it one too: `existingSecret`, `maxTokens`.
SETTING_HEADS = frozenset("existing max min num default".split())
# A word anywhere that makes it a switch: `forcePassword`, `MYSQL_ALLOW_EMPTY_PASSWORD`, `persist-credentials`.
SWITCH_WORDS = frozenset(
    "allow disable disabled enable enabled force update use skip empty persist automount insecure secure "
    "require required generate auto create show hide".split()
)
# The word before a last `key` that says it is no credential: a public one (`STRIPE_PUBLISHABLE_KEY`), the
# key of a Kubernetes object (`topologyKey`, `adminPasswordKey`: the entry of a secret holding it), a sort key.
KEY_NOT_CREDENTIAL = frozenset(
    "public publishable site annotation topology label sort partition cache primary foreign routing lookup "
    "password token".split()
)
# A camelCase key whose last word is `Secret` names a Kubernetes secret object unless the word before says
# which credential it is (`clientSecret`, `webhookSecret`).
SECRET_OF = frozenset("client webhook jwt app shared signing api session cookie hmac verification".split())
# Names the words misread, decided by reading what the file does with them: `id-token` is a workflow's
# permission (`id-token: write`), not an OIDC token; Bedrock's key is a bearer token its vendor ends;
# `insecureTokenValue` is a chart's token given inline (a credential, though its first word says a switch).
OVERRIDES: dict[str, str | None] = {
    "id-token": None,
    "AWS_BEARER_TOKEN_BEDROCK": "credential",
    "insecureTokenValue": None,
}
# A sample's word in the name (`DUMMY_HUB_API_KEY`): a scanner may rightly keep what it holds.
SAMPLE_WORDS = frozenset("dummy fake example sample placeholder".split())
VARIABLE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]*[A-Za-z0-9]\Z")


def words(name: str) -> tuple[str, ...]:
    """`STRIPE_SECRET_KEY`, `stripeSecretKey`, `stripe-secret-key` -> ("stripe", "secret", "key")."""
    parts = []
    for chunk in re.split(r"[_.\-]+", name):
        parts += re.findall(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+", chunk)
    return tuple(p.lower() for p in parts)


def credential_word(word: str) -> bool:
    return word in CREDENTIAL_WORDS or (len(word) > 6 and word.endswith(CREDENTIAL_SUFFIXES))


def classify(name: str) -> str | None:
    """`credential`, `setting`, or None where the words do not tell (see benchmarks/build_assignment_holdout.py's docstring).
    A credential name's last word (after qualifiers such as `_SANDBOX`, `_V1`) is the credential:
    a credential word anywhere else makes a setting about it (`AUTH_GITHUB_CHECKS`, `TOKEN_TTL`)."""
    if name in OVERRIDES:
        return OVERRIDES[name]
    parts = words(name)
    if not parts or not VARIABLE_NAME.match(name) or SAMPLE_WORDS.intersection(parts):
        return None
    if not any(credential_word(p) for p in parts):
        return "setting"
    if len(parts) == 1 and parts[0] == "key":
        return None  # a chart's `key:` is most often the entry of a secret (`secretKeyRef: {name, key}`)
    core = list(parts)
    while len(core) > 1 and (core[-1] in QUALIFIERS or re.fullmatch(r"v?\d+", core[-1])):
        core.pop()
    last, before = core[-1], (core[-2] if len(core) > 1 else "")
    if last in {"id", "ids"}:
        return None  # `AWS_ACCESS_KEY_ID`, `AUTH_GITHUB_CLIENT_ID`: names a credential, holds none, yet scanners act on some
    if SWITCH_WORDS.intersection(parts) or parts[0] in SETTING_HEADS or last in SETTING_TAILS:
        return "setting"
    if last in {"json", "contents"} and before in {"credentials", "credential", "key", "token", "secret"}:
        return "credential"
    if not credential_word(last) or last in {"auth", "private"}:
        return None if last in {"auth", "private"} else "setting"
    if "application" in parts and last.startswith("credential"):
        return None  # GOOGLE_APPLICATION_CREDENTIALS: most often a file's path
    camel = "_" not in name and "-" not in name and "." not in name and len(core) > 1
    if last == "key" and (before in KEY_NOT_CREDENTIAL or {"public", "publishable"} & set(parts)):
        return None
    if camel and last == "key" and before == "secret" and len(core) > 2:
        return None  # `rootPasswordSecretKey`: the entry of a Kubernetes secret that holds it
    if camel and last == "secret" and before not in SECRET_OF:
        return None  # `initScriptsSecret`, `userSecret`: a Kubernetes secret object's name
    return "credential"


def problems(data: dict) -> list[str]:
    """What is wrong with the names file (empty when it is well-formed)."""
    found = []
    known = {(s["repo"], p) for s in data["sources"] for p in s["paths"]}
    seen: dict[tuple[str, ...], str] = {}
    repos = set()
    for kind in ("credential", "setting"):
        for entry in data[f"{kind}_names"]:
            name = entry["name"]
            if not VARIABLE_NAME.match(name):
                found.append(f"{name!r}: not a variable name")
            if not entry.get("sources"):
                found.append(f"{name}: no source")
            for where in entry.get("sources", []):
                if (where["repo"], where["path"]) not in known:
                    found.append(f"{name}: source {where} not among sources")
                repos.add(where["repo"])
            if classify(name) != kind:
                found.append(f"{name}: listed as {kind}, classify says {classify(name)}")
            key = words(name)
            if key in seen:
                found.append(f"{name}: the same words as {seen[key]}")
            seen[key] = name
    if len(repos) < MIN_REPOSITORIES:
        found.append(f"only {len(repos)} repositories contribute, fewer than {MIN_REPOSITORIES}")
    return found


def load() -> dict:
    return json.loads(NAMES_FILE.read_text())
