"""The variable names `assignment_holdout.py`'s held-out split plants credentials under: real names,
read from the configuration files of fifteen popular projects, never their values.

    .venv/bin/python benchmarks/build_assignment_holdout.py                # validate the names file
    .venv/bin/python benchmarks/build_assignment_holdout.py --mirrors DIR  # re-derive it, then validate

How the file was made: each repository in `SOURCES` was mirrored (the `fetch` tool's bare git
directories, `DIR/<owner>+<name>/repo`, the snapshot of the commit the file records) and only the
files listed there were read at that commit: `.env.example`-style files, docker-compose files, Helm
`values.yaml` and GitHub Actions workflows, the places a project names the credentials and settings
its users fill in. From each, only the name of an assignment is kept (`NAME=` in an env file, a
compose file's `environment:` entries and `${NAME}` references, a chart's camelCase keys, a
workflow's `env:` keys, `secrets.NAME` and kebab-case `with:` inputs); the value after it is never
read into the file, since a project's sample values (`changeme`, a default password) are no test of
a generated credential and some could be real.

Each name is split into words (`_`, `-`, `.`, camelCase) and sorted by them alone (`classify`), a
rule fixed before any record was scored and not changed after looking at the scanner's results:
a **credential name** holds a credential word (token, key, secret, password, passwd, pwd, pass,
auth, credential, apikey, private; `PGPASSWORD` and `rootpassword` count) and does not end in a word
that makes it a setting about one (`TOKEN_TTL`, `SECRET_NAME`, `AUTH_URL`, `MAX_TOKENS`,
`existingSecret`); a **setting name** is any other name, those included. Names where the words do
not tell (`SMTP_AUTH`, a boolean or a method; `adminPasswordKey`, the key of a Kubernetes secret that
holds the password; `ACCESS_KEY_ID`, an identifier of a credential) go in neither list. Names are
deduplicated by their words (`GITHUB_TOKEN` and `github-token` are one name; the first spelling is
kept, every source listed), since the benchmark re-cases each name for its framing anyway.

Validation (always run, without the network): every name has a source among `sources`, its spelling
is a variable name, the words of the two lists are disjoint, no name is listed twice, each name is
sorted as `classify` sorts it, and at least twelve repositories contribute.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "trace_assets_tests" / "data" / "secrets" / "assignment_names.json"
MIN_REPOSITORIES = 12

# repository -> the files read (at the mirrored snapshot's HEAD, whose commit the file records)
SOURCES: dict[str, list[str]] = {
    "getsentry/self-hosted": [".env", "docker-compose.yml", ".github/workflows/release.yml"],
    "langfuse/langfuse": [
        ".env.dev.example",
        ".env.prod.example",
        ".env.dev-azure.example",
        "docker-compose.yml",
        ".github/workflows/deploy.yml",
        ".github/workflows/release.yml",
    ],
    "outline/outline": [".env.sample", "docker-compose.yml", ".github/workflows/docker.yml"],
    "appwrite/appwrite": [".env", "docker-compose.yml", ".github/workflows/publish.yml"],
    "bitnami/charts": [
        f"bitnami/{chart}/values.yaml"
        for chart in ("postgresql", "mysql", "redis", "mongodb", "rabbitmq", "keycloak", "minio", "grafana", "airflow")
    ],
    "grafana/helm-charts": [
        "charts/enterprise-logs/values.yaml",
        "charts/loki-stack/values.yaml",
        "charts/promtail/values.yaml",
        "charts/pdc-agent/values.yaml",
        "charts/snyk-exporter/values.yaml",
        ".github/workflows/release.yaml",
    ],
    "documenso/documenso": [".env.example", "docker/production/compose.yml", ".github/workflows/publish.yml"],
    "makeplane/plane": [
        ".env.example",
        "apps/api/.env.example",
        "apps/web/.env.example",
        "deployments/cli/community/docker-compose.yml",
        ".github/workflows/build-branch.yml",
    ],
    "getredash/redash": ["compose.yaml", ".github/workflows/ci.yml", ".github/workflows/preview-image.yml"],
    "umami-software/umami": ["podman/env.sample", "docker-compose.yml", ".github/workflows/cd.yml"],
    "formbricks/formbricks": [
        ".env.example",
        "docker/docker-compose.yml",
        "charts/formbricks/values.yaml",
        ".github/workflows/release-docker-github.yml",
    ],
    "hoppscotch/hoppscotch": [".env.example", "docker-compose.yml", ".github/workflows/release-push-docker.yml"],
    "dubinc/dub": ["apps/web/.env.example", "apps/web/docker-compose.yml", ".github/workflows/e2e.yaml"],
    "jitsi/docker-jitsi-meet": ["env.example", "docker-compose.yml", ".github/workflows/release-stable.yml"],
    "mailcow/mailcow-dockerized": ["docker-compose.yml", ".github/workflows/image_builds.yml"],
}

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

ENV_LINE = re.compile(r"^[ \t]*#?[ \t]*(?:export[ \t]+)?([A-Za-z_][A-Za-z0-9_]*)[ \t]*=", re.M)
SCREAMING_KEY = re.compile(r"^[ \t]*-?[ \t]*\"?([A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+|[A-Z]{3,})\"?[ \t]*[:=]", re.M)
REFERENCE = re.compile(r"\$\{\{?[ \t]*(?:secrets\.|env\.|vars\.)?([A-Za-z_][A-Za-z0-9_]*)")
CAMEL_KEY = re.compile(r"^[ \t]*([a-z][a-z0-9]*(?:[A-Z][a-z0-9]*)+|[a-z]{3,})[ \t]*:", re.M)
KEBAB_KEY = re.compile(r"^[ \t]*([a-z][a-z0-9]*(?:-[a-z0-9]+)+)[ \t]*:", re.M)


def words(name: str) -> tuple[str, ...]:
    """`STRIPE_SECRET_KEY`, `stripeSecretKey`, `stripe-secret-key` -> ("stripe", "secret", "key")."""
    parts = []
    for chunk in re.split(r"[_.\-]+", name):
        parts += re.findall(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+", chunk)
    return tuple(p.lower() for p in parts)


def _credential_word(word: str) -> bool:
    return word in CREDENTIAL_WORDS or (len(word) > 6 and word.endswith(CREDENTIAL_SUFFIXES))


def classify(name: str) -> str | None:
    """`credential`, `setting`, or None where the words do not tell (see the module's docstring).
    A credential name's last word (after qualifiers such as `_SANDBOX`, `_V1`) is the credential:
    a credential word anywhere else makes a setting about it (`AUTH_GITHUB_CHECKS`, `TOKEN_TTL`)."""
    if name in OVERRIDES:
        return OVERRIDES[name]
    parts = words(name)
    if not parts or not VARIABLE_NAME.match(name) or SAMPLE_WORDS.intersection(parts):
        return None
    if not any(_credential_word(p) for p in parts):
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
    if not _credential_word(last) or last in {"auth", "private"}:
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


def names_in(path: str, text: str) -> list[str]:
    """The assignment names in one file, in order, by the file's kind (see the module's docstring)."""
    if path.endswith((".yml", ".yaml")):
        found = SCREAMING_KEY.findall(text) + REFERENCE.findall(text)
        if path.endswith("values.yaml"):
            found += CAMEL_KEY.findall(text)
        if "/workflows/" in path:
            found += KEBAB_KEY.findall(text)
        return found
    return ENV_LINE.findall(text)


def _git(git_dir: Path, *args: str) -> str:
    return subprocess.run(["git", "--git-dir", str(git_dir), *args], capture_output=True, text=True, check=True).stdout


def derive(mirrors: Path) -> dict:
    """Read `SOURCES` from the mirrors under `mirrors`; names only, each with every place it was found."""
    lists: dict[str, dict[tuple[str, ...], dict]] = {"credential": {}, "setting": {}}
    sources = []
    for repo, paths in SOURCES.items():
        git_dir = mirrors / repo.replace("/", "+") / "repo"
        commit = _git(git_dir, "rev-parse", "HEAD").strip()
        counts: dict[str, int] = defaultdict(int)
        for path in paths:
            for name in names_in(path, _git(git_dir, "show", f"{commit}:{path}")):
                kind = classify(name)
                if kind is None:
                    continue
                entry = lists[kind].setdefault(words(name), {"name": name, "sources": []})
                where = {"repo": repo, "path": path}
                if where not in entry["sources"]:
                    entry["sources"].append(where)
                    counts[kind] += len(entry["sources"]) == 1
        sources.append(
            {
                "repo": repo,
                "commit": commit,
                "paths": paths,
                "credential_names": counts["credential"],
                "setting_names": counts["setting"],
            }
        )
    return {
        "about": (
            "Variable names (never values) read from public configuration files; made and checked by "
            "benchmarks/build_assignment_holdout.py, read by benchmarks/assignment_holdout.py's held-out split. "
            "sources: each repository, the commit read and its files, and how many names it gave first."
        ),
        "sources": sources,
        "credential_names": sorted(lists["credential"].values(), key=lambda e: e["name"].lower()),
        "setting_names": sorted(lists["setting"].values(), key=lambda e: e["name"].lower()),
    }


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


def dumps(data: dict) -> str:
    """JSON with one source or name a line: short enough to review, and a diff shows each name changed."""
    parts = []
    for key, value in data.items():
        if isinstance(value, list):
            items = ",\n".join(f"  {json.dumps(item)}" for item in value)
            parts.append(f" {json.dumps(key)}: [\n{items}\n ]")
        else:
            parts.append(f" {json.dumps(key)}: {json.dumps(value)}")
    return "{\n" + ",\n".join(parts) + "\n}\n"


def load() -> dict:
    return json.loads(OUT.read_text())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mirrors", type=Path, help="a folder of bare mirrors, <owner>+<name>/repo: re-derive")
    args = parser.parse_args()
    if args.mirrors:
        OUT.write_text(dumps(derive(args.mirrors)))
    data = load()
    wrong = problems(data)
    for problem in wrong:
        print(problem)
    repos = {w["repo"] for kind in ("credential", "setting") for e in data[f"{kind}_names"] for w in e["sources"]}
    print(
        f"{len(data['credential_names'])} credential names, {len(data['setting_names'])} setting names "
        f"from {len(repos)} repositories -> {OUT}"
    )
    sys.exit(1 if wrong else 0)


if __name__ == "__main__":
    main()
