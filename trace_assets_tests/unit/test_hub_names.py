"""Hub names without a Hub: a publish root's repo and folder, and repo ids the Hub would accept
(a scope's repo id from the template: `test_hub_repo_naming.py`)."""

from __future__ import annotations

import pytest

from trace_assets.publishing.hub import (
    PublishRoot,
    parse_publish_root,
    render_repo_id,
    validate_repo_id,
)


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("hf://datasets/acme/traces", PublishRoot("acme/traces", "main", "")),
        ("hf://datasets/acme/traces/", PublishRoot("acme/traces", "main", "")),
        ("hf://datasets/acme/traces@staging", PublishRoot("acme/traces", "staging", "")),
        ("hf://datasets/acme/traces/runs/r1", PublishRoot("acme/traces", "main", "runs/r1")),
        ("hf://datasets/acme/traces@release%2F2025/runs/r1/", PublishRoot("acme/traces", "release/2025", "runs/r1")),
    ],
)
def test_parse_publish_root(url: str, expected: PublishRoot) -> None:
    assert parse_publish_root(url) == expected


@pytest.mark.parametrize(
    "url",
    [
        "s3://bucket/traces",
        "hf://models/acme/traces",
        "hf://datasets/acme",
        "hf://datasets/acme/bad name",
        "hf://datasets/acme/traces@",
        "hf://datasets/acme/traces/runs/../other",
        "hf://datasets/acme/traces/runs//r1",
    ],
)
def test_parse_publish_root_rejects_malformed_urls(url: str) -> None:
    with pytest.raises(ValueError):
        parse_publish_root(url)


def test_a_refused_repo_id_names_the_setting_it_came_from() -> None:
    """The Hub's own rules (huggingface_hub's validate_repo_id, `.git` endings included), told in
    the project's words with the setting the id came from."""
    with pytest.raises(ValueError, match=r"'acme/x\.git' \(from publish root 'hf://datasets/acme/x\.git'\).*'\.git'"):
        parse_publish_root("hf://datasets/acme/x.git")
    with pytest.raises(ValueError, match=r"'bad org/run-1' \(from repo id template '\{org\}/\{run_id\}'\)"):
        render_repo_id("{org}/{run_id}", "run-1", org="bad org")  # a namespace is never rewritten


@pytest.mark.parametrize(
    "repo_id",
    ["acme", "acme/a/b", "acme/-traces", "acme/traces.", "acme/tra--ces", "a..b/traces", "acme/bad name", "acme/x.git"],
)
def test_validate_repo_id_rejects_invalid_ids(repo_id: str) -> None:
    with pytest.raises(ValueError):
        validate_repo_id(repo_id)
