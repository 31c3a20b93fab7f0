"""Build the labelled secret corpus from the public test material of gitleaks, trufflehog and detect-secrets.

    .venv/bin/python benchmarks/build_secret_corpus.py GITLEAKS_GIT_DIR TRUFFLEHOG_GIT_DIR DETECT_SECRETS_GIT_DIR

Reads git directories (bare mirrors are fine) and writes only the derived records to
`trace_assets_tests/data/secrets/corpus.jsonl`: one JSON object a line, `source`, `label` (our
kind, or `other:<their rule>`), `positive` and `text`. gitleaks: the literal strings of each rule's
`tps` (positive) and `fps` (negative) lists, labelled by the rule (`RuleID`) they test, since one
file holds several rules (aws.go also tests Bedrock keys, slack.go webhooks); trufflehog: each
detector test's `validPattern` and `invalidPattern`, behind its `keyword`, as its own tests embed
them; detect-secrets: each plugin test's parametrized literal lines, positive when its
`should_flag` is true (or, for a one-argument list, unless the test's name says it must not flag).
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
    "discordwebhook": "discord_webhook",
    "e2b": "e2b_api_key",
    "gcp": "google_api_key",
    "github": "github_token",
    "gitlab": "gitlab_token",
    "gitlabv2": "gitlab_token",
    "grafana": "grafana_token",
    "groq": "groq_api_key",
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
# gitleaks rules in files that test several: each RuleID's own label (absent: `other:<RuleID>`).
RULE_LABELS = {
    **dict.fromkeys(["anthropic-api-key", "anthropic-admin-api-key"], "anthropic_api_key"),
    "aws-access-token": "aws_access_key_id",
    "azure-ad-client-secret": "azure_client_secret",
    "cloudflare-api-key": "cloudflare_api_token",
    **dict.fromkeys(
        ["digitalocean-pat", "digitalocean-access-token", "digitalocean-refresh-token"], "digitalocean_token"
    ),
    "gcp-api-key": "google_api_key",
    **dict.fromkeys(
        ["github-pat", "github-fine-grained-pat", "github-oauth", "github-app-token", "github-refresh-token"],
        "github_token",
    ),
    **dict.fromkeys(
        [
            "gitlab-pat",
            "gitlab-pat-routable",
            "gitlab-deploy-token",
            "gitlab-runner-authentication-token",
            "gitlab-runner-authentication-token-routable",
            "gitlab-cicd-job-token",
            "gitlab-feed-token",
            "gitlab-ptt",
            "gitlab-scim-token",
            "gitlab-incoming-mail-token",
            "gitlab-oauth-app-secret",
        ],
        "gitlab_token",
    ),
    **dict.fromkeys(["grafana-api-key", "grafana-cloud-api-token", "grafana-service-account-token"], "grafana_token"),
    **dict.fromkeys(["vault-service-token", "vault-batch-token"], "vault_token"),
    **dict.fromkeys(["heroku-api-key", "heroku-api-key-v2"], "heroku_api_key"),
    **dict.fromkeys(["huggingface-access-token", "huggingface-organization-api-token"], "hf_token"),
    **dict.fromkeys(["jwt", "jwt-base64"], "jwt"),
    **dict.fromkeys(["mailgun-private-api-token", "mailgun-signing-key"], "mailgun_api_key"),
    "private-key": "private_key",
    **dict.fromkeys(["sentry-org-token", "sentry-user-token"], "sentry_token"),
    **dict.fromkeys(
        [
            "slack-bot-token",
            "slack-user-token",
            "slack-app-token",
            "slack-config-access-token",
            "slack-config-refresh-token",
            "slack-legacy-bot-token",
            "slack-legacy-workspace-token",
            "slack-legacy-token",
        ],
        "slack_token",
    ),
    "slack-webhook-url": "slack_webhook",
}
# detect-secrets plugin tests -> our kind (AWS is split by what the line holds: an id or a secret).
DETECT_SECRETS_LABELS = {
    "azure_storage_key": "azure_storage_key",
    "basic_auth": "url_password",
    "github_token": "github_token",
    "gitlab_token": "gitlab_token",
    "jwt": "jwt",
    "npm": "npm_token",
    "openai": "openai_api_key",
    "private_key": "private_key",
    "pypi_token": "pypi_token",
    "sendgrid": "sendgrid_api_key",
    "slack": "slack_token",
    "stripe_key": "stripe_key",
    "twilio": "twilio_api_key",
}
_AWS_ID = re.compile(r"(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}")
_GO_STRING = re.compile(r'^\s*("(?:[^"\\]|\\.)*"|`[^`]*`)\s*,?\s*(?://.*)?$')
# A `[]string{` literal, or an `append(tps,` whose strings start on the next line (an `append` with
# a call on its own line holds no literal, and must not run on into the next block).
_BLOCK = re.compile(r"\b(tps|fps)\s*(?::=|=)\s*(?:\[\]string\{|append\(\w+,[ \t]*$)(.*?)^\s*[})]", re.S | re.M)
_RULE_ID = re.compile(r'RuleID:\s*"([^"]+)"')


def git_files(git_dir: str, prefix: str) -> list[str]:
    """The paths under `prefix` in a bare clone's HEAD."""
    out = subprocess.run(
        ["git", "--git-dir", git_dir, "ls-tree", "-r", "--name-only", "HEAD", prefix],
        capture_output=True,
        text=True,
        check=True,
    )
    return out.stdout.split()


def git_show(git_dir: str, path: str) -> str:
    """A file's text at a bare clone's HEAD."""
    return subprocess.run(
        ["git", "--git-dir", git_dir, "show", f"HEAD:{path}"], capture_output=True, text=True, check=True
    ).stdout


def _go_literal(token: str) -> str:
    return token[1:-1] if token.startswith("`") else ast.literal_eval(token)


def gitleaks(git_dir: str) -> list[dict]:
    records = []
    for path in git_files(git_dir, "cmd/generate/config/rules/"):
        name = Path(path).stem
        if name.endswith("_test") or not path.endswith(".go"):
            continue
        functions = re.split(r"^func ", git_show(git_dir, path), flags=re.M)[1:]
        rule_ids = [found.group(1) if (found := _RULE_ID.search(f)) else name for f in functions]
        for function, rule_id in zip(functions, rule_ids):
            if len(set(rule_ids)) > 1:
                label = RULE_LABELS.get(rule_id, f"other:{rule_id}")
            else:
                label = RULE_LABELS.get(rule_id) or LABELS.get(name, f"other:{name}")
            for which, body in _BLOCK.findall(function):
                for line in body.splitlines():
                    literal = _GO_STRING.match(line)
                    if literal:
                        text = _go_literal(literal.group(1))
                        if len(text) >= 8:
                            records.append(
                                {"source": f"gitleaks/{name}", "label": label, "positive": which == "tps", "text": text}
                            )
    return records


_TH_VAR = re.compile(r'^\s*(validPattern|invalidPattern|keyword)\s*=\s*("(?:[^"\\]|\\.)*")\s*$', re.M)


def trufflehog(git_dir: str) -> list[dict]:
    records = []
    for path in git_files(git_dir, "pkg/detectors/"):
        if not path.endswith("_test.go") or "integration" in path:
            continue
        found = dict((name, ast.literal_eval(value)) for name, value in _TH_VAR.findall(git_show(git_dir, path)))
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


class _Literal(ast.NodeVisitor):
    """The value of a test's string expression: literals, module constants, `+`, slices and
    `.format(...)`; anything else (a fixture, a call) is None and the case is left out."""

    def __init__(self, constants: dict[str, str]) -> None:
        self.constants = constants

    def value(self, node: ast.expr) -> str | None:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return node.value
        if isinstance(node, ast.Name):
            return self.constants.get(node.id)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            left, right = self.value(node.left), self.value(node.right)
            return left + right if left is not None and right is not None else None
        if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Slice):
            text = self.value(node.value)
            bounds = [b.value if isinstance(b, ast.Constant) else None for b in (node.slice.lower, node.slice.upper)]
            return text[bounds[0] : bounds[1]] if text is not None else None
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "format":
            template = self.value(node.func.value)
            args = [self.value(arg) for arg in node.args]
            if template is None or None in args:
                return None
            try:
                return template.format(*args)
            except (KeyError, IndexError, ValueError):  # named fields: filled by the test, not here
                return None
        return None


# A test's name says its lines are not secrets when one of these is a whole part of it
# (`test_verify_no_secret`), not a substring (`test_notebook`).
_NOT_FLAGGED = re.compile(r"(?:^|_)(?:not|no|false|ignore|invalid|negative|fail|skip|allowlist)(?:_|$)", re.I)


def detect_secrets(git_dir: str) -> list[dict]:
    records = []
    for path in git_files(git_dir, "tests/plugins/"):
        name = Path(path).stem.removesuffix("_test")
        if not path.endswith("_test.py") or name in ("base", "keyword", "high_entropy_strings"):
            continue
        tree = ast.parse(git_show(git_dir, path))
        constants = {
            target.id: node.value.value
            for node in tree.body
            if isinstance(node, ast.Assign)
            and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str)
            for target in node.targets
            if isinstance(target, ast.Name)
        }
        literal = _Literal(constants)
        for function in ast.walk(tree):
            if not isinstance(function, ast.FunctionDef):
                continue
            for decorator in function.decorator_list:
                if not (isinstance(decorator, ast.Call) and getattr(decorator.func, "attr", "") == "parametrize"):
                    continue
                if len(decorator.args) < 2 or not isinstance(decorator.args[1], (ast.List, ast.Tuple)):
                    continue
                for case in decorator.args[1].elts:
                    items = case.elts if isinstance(case, ast.Tuple) else [case]
                    if not items:
                        continue
                    flags = [i.value for i in items if isinstance(i, ast.Constant) and isinstance(i.value, bool)]
                    text = literal.value(items[0])
                    if text is None or len(text) < 8 or len(flags) > 1:
                        continue
                    positive = flags[0] if flags else not _NOT_FLAGGED.search(function.name)
                    if name == "aws_key":
                        label = "aws_access_key_id" if _AWS_ID.search(text) else "aws_secret_access_key"
                    elif name == "slack" and "hooks.slack.com/" in text:
                        label = "slack_webhook"
                    else:
                        label = DETECT_SECRETS_LABELS.get(name, f"other:{name}")
                    records.append(
                        {"source": f"detect-secrets/{name}", "label": label, "positive": positive, "text": text}
                    )
    return records


def main() -> None:
    records = gitleaks(sys.argv[1]) + trufflehog(sys.argv[2]) + detect_secrets(sys.argv[3])
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
