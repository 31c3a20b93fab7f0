"""Build the labelled secret corpus from the public test material of gitleaks and trufflehog.

    .venv/bin/python benchmarks/build_secret_corpus.py GITLEAKS_GIT_DIR TRUFFLEHOG_GIT_DIR

Reads git directories (bare mirrors are fine) and writes only the derived records to
`trace_assets_tests/data/secrets/corpus.jsonl`: one JSON object a line, `source`, `label` (our
kind, or `other:<their rule>`), `positive` and `text`. gitleaks: the literal strings of each rule's
`tps` (positive) and `fps` (negative) lists; trufflehog: each detector test's `validPattern` and
`invalidPattern`, behind its `keyword`, as its own tests embed them.
"""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "trace_assets_tests" / "data" / "secrets" / "corpus.jsonl"

# Their rule (gitleaks file or trufflehog detector) -> our kind, for the kinds we claim.
LABELS = {
    "anthropic": "anthropic_api_key",
    "aws": "aws_access_key_id",
    "awssessionkeys": "aws_access_key_id",
    "azure_openai": "azure_openai_api_key",
    "azure_storage": "azure_storage_key",
    "cloudflareapitoken": "cloudflare_api_token",
    "cohere": "cohere_api_key",
    "databricks": "databricks_token",
    "databrickstoken": "databricks_token",
    "deepseek": "deepseek_api_key",
    "digitalocean": "digitalocean_token",
    "digitaloceanv2": "digitalocean_token",
    "discord": "discord_webhook",
    "discordwebhook": "discord_webhook",
    "e2b": "e2b_api_key",
    "gcp": "google_api_key",
    "github": "github_token",
    "gitlab": "gitlab_token",
    "gitlabv2": "gitlab_token",
    "grafana": "grafana_token",
    "groq": "groq_api_key",
    "hashicorp": "vault_token",
    "heroku": "heroku_api_key",
    "huggingface": "hf_token",
    "jwt": "jwt",
    "langsmith": "langsmith_api_key",
    "mailgun": "mailgun_api_key",
    "npm": "npm_token",
    "npmtoken": "npm_token",
    "npmtokenv2": "npm_token",
    "openai": "openai_api_key",
    "openrouter": "openrouter_api_key",
    "perplexity": "perplexity_api_key",
    "pinecone": "pinecone_api_key",
    "privatekey": "private_key",
    "pypi": "pypi_token",
    "replicate": "replicate_api_token",
    "sendgrid": "sendgrid_api_key",
    "sentry": "sentry_token",
    "sentrytoken": "sentry_token",
    "slack": "slack_token",
    "slackwebhook": "slack_webhook",
    "stripe": "stripe_key",
    "twilio": "twilio_api_key",
    "vercel": "vercel_token",
    "xai": "xai_api_key",
}
_GO_STRING = re.compile(r'^\s*("(?:[^"\\]|\\.)*"|`[^`]*`)\s*,?\s*(?://.*)?$')
_BLOCK = re.compile(r"\b(tps|fps)\s*(?::=|=)\s*(?:\[\]string\{|append\(\w+,)(.*?)^\s*[})]", re.S | re.M)


def _git_files(git_dir: str, prefix: str) -> list[str]:
    out = subprocess.run(
        ["git", "--git-dir", git_dir, "ls-tree", "-r", "--name-only", "HEAD", prefix],
        capture_output=True,
        text=True,
        check=True,
    )
    return out.stdout.split()


def _show(git_dir: str, path: str) -> str:
    return subprocess.run(
        ["git", "--git-dir", git_dir, "show", f"HEAD:{path}"], capture_output=True, text=True, check=True
    ).stdout


def _go_literal(token: str) -> str:
    return token[1:-1] if token.startswith("`") else ast.literal_eval(token)


def gitleaks(git_dir: str) -> list[dict]:
    records = []
    for path in _git_files(git_dir, "cmd/generate/config/rules/"):
        name = Path(path).stem
        if name.endswith("_test") or not path.endswith(".go"):
            continue
        for which, body in _BLOCK.findall(_show(git_dir, path)):
            for line in body.splitlines():
                literal = _GO_STRING.match(line)
                if literal:
                    text = _go_literal(literal.group(1))
                    if len(text) >= 8:
                        records.append(
                            {
                                "source": f"gitleaks/{name}",
                                "label": LABELS.get(name, f"other:{name}"),
                                "positive": which == "tps",
                                "text": text,
                            }
                        )
    return records


_TH_VAR = re.compile(r'^\s*(validPattern|invalidPattern|keyword)\s*=\s*("(?:[^"\\]|\\.)*")\s*$', re.M)


def trufflehog(git_dir: str) -> list[dict]:
    records = []
    for path in _git_files(git_dir, "pkg/detectors/"):
        if not path.endswith("_test.go") or "integration" in path:
            continue
        found = dict((name, ast.literal_eval(value)) for name, value in _TH_VAR.findall(_show(git_dir, path)))
        name = path.split("/")[2]
        keyword = found.get("keyword", name)
        for key, positive in (("validPattern", True), ("invalidPattern", False)):
            if found.get(key):
                records.append(
                    {
                        "source": f"trufflehog/{name}",
                        "label": LABELS.get(name, f"other:{name}"),
                        "positive": positive,
                        "text": f"{keyword} token = '{found[key]}'",
                    }
                )
    return records


def main() -> None:
    records = gitleaks(sys.argv[1]) + trufflehog(sys.argv[2])
    unique = {(r["label"], r["positive"], r["text"]): r for r in records}
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(
        "".join(
            json.dumps(r, sort_keys=True) + "\n"
            for r in sorted(unique.values(), key=lambda r: (r["source"], r["text"]))
        )
    )
    print(f"{len(unique)} records, {sum(r['positive'] for r in unique.values())} positive -> {OUT}")


if __name__ == "__main__":
    main()
