"""Extract kingfisher's rule examples for the kinds traces print into held-out test records.

    .venv/bin/python benchmarks/build_secret_holdout.py KINGFISHER_GIT_DIR

Reads a git directory of kingfisher (Apache-2.0, copyright MongoDB; bare mirrors are fine) and writes
only the derived records to `trace_assets_tests/data/secrets/kingfisher_examples.jsonl`: each
`examples` string of the rules in `RULE_FILES`, labelled by our kind (or `new:<kind>` for the kinds
this scanner did not claim before issue 39), `positive: true`, `source: kingfisher/<file>`. The
scanner's rules were never tuned on them (`secret_holdout.py` reports them apart).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.build_secret_corpus import git_show  # noqa: E402

OUT = Path(__file__).resolve().parent.parent / "trace_assets_tests" / "data" / "secrets" / "kingfisher_examples.jsonl"

# kingfisher rule file -> rule id prefix -> label (a rule not listed is left out: public keys, ids)
RULE_FILES = {
    "age": {"kingfisher.age.2": "new:age_secret_key"},
    "gcp": {"kingfisher.gcp.": "new:gcp_service_account"},
    "azurestorage": {"kingfisher.azurestorage.": "new:azure_connection_string"},
    "discord": {"kingfisher.discord.": "new:discord"},
    "mailgun": {"kingfisher.mailgun.": "new:mailgun"},
    "sendgrid": {"kingfisher.sendgrid.": "new:sendgrid"},
    "postgres": {"kingfisher.postgres.": "new:database_url"},
    "mongodb": {"kingfisher.mongodb.": "new:database_url"},
    "mysql": {"kingfisher.mysql.": "new:database_url"},
    "jwt": {"kingfisher.jwt.": "jwt"},
    "github": {"kingfisher.github.": "github_token"},
    "slack": {"kingfisher.slack.": "slack_token"},
    "openai": {"kingfisher.openai.": "openai_api_key"},
    "anthropic": {"kingfisher.anthropic.": "anthropic_api_key"},
    "huggingface": {"kingfisher.huggingface.": "hf_token"},
    "gitlab": {"kingfisher.gitlab.": "gitlab_token"},
    "stripe": {"kingfisher.stripe.": "stripe_key"},
    "npm": {"kingfisher.npm.": "npm_token"},
    "pypi": {"kingfisher.pypi.": "pypi_token"},
}


def kingfisher(git_dir: str) -> list[dict]:
    records = []
    for name, labels in RULE_FILES.items():
        for suffix in (".yml", ".yaml"):
            try:
                rules = yaml.safe_load(git_show(git_dir, f"data/rules/{name}{suffix}"))["rules"]
                break
            except Exception:  # noqa: BLE001 - absent under this suffix: try the other
                rules = []
        for rule in rules:
            label = next((lab for prefix, lab in labels.items() if rule["id"].startswith(prefix)), None)
            if label is None:
                continue
            for example in rule.get("examples") or []:
                records.append({"source": f"kingfisher/{name}", "label": label, "positive": True, "text": example})
    return records


def main() -> None:
    records = kingfisher(sys.argv[1])
    OUT.write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in records))
    print(f"{len(records)} records -> {OUT}")


if __name__ == "__main__":
    main()
