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

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from trace_assets_tests.support.assignment_names import NAMES_FILE, classify, load, problems, words  # noqa: E402

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

ENV_LINE = re.compile(r"^[ \t]*#?[ \t]*(?:export[ \t]+)?([A-Za-z_][A-Za-z0-9_]*)[ \t]*=", re.M)
SCREAMING_KEY = re.compile(r"^[ \t]*-?[ \t]*\"?([A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+|[A-Z]{3,})\"?[ \t]*[:=]", re.M)
REFERENCE = re.compile(r"\$\{\{?[ \t]*(?:secrets\.|env\.|vars\.)?([A-Za-z_][A-Za-z0-9_]*)")
CAMEL_KEY = re.compile(r"^[ \t]*([a-z][a-z0-9]*(?:[A-Z][a-z0-9]*)+|[a-z]{3,})[ \t]*:", re.M)
KEBAB_KEY = re.compile(r"^[ \t]*([a-z][a-z0-9]*(?:-[a-z0-9]+)+)[ \t]*:", re.M)


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mirrors", type=Path, help="a folder of bare mirrors, <owner>+<name>/repo: re-derive")
    args = parser.parse_args()
    if args.mirrors:
        NAMES_FILE.write_text(dumps(derive(args.mirrors)))
    data = load()
    wrong = problems(data)
    for problem in wrong:
        print(problem)
    repos = {w["repo"] for kind in ("credential", "setting") for e in data[f"{kind}_names"] for w in e["sources"]}
    print(
        f"{len(data['credential_names'])} credential names, {len(data['setting_names'])} setting names "
        f"from {len(repos)} repositories -> {NAMES_FILE}"
    )
    sys.exit(1 if wrong else 0)


if __name__ == "__main__":
    main()
