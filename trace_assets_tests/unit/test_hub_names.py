"""Hub names without a Hub: a publish root's repo and folder, and repo ids rendered from a run id
that the Hub would accept."""

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


@pytest.mark.parametrize(
    ("template", "run_id", "fields", "expected"),
    [
        ("{org}/{run_id}", "rl-sample-run", {"org": "acme"}, "acme/rl-sample-run"),
        ("{org}/t-{run_id}", "2025-01-07 12:00:00/gpu#3", {"org": "acme"}, "acme/t-2025-01-07-12-00-00-gpu-3"),
        ("{org}/{run_id}", "--run..42--", {"org": "acme"}, "acme/run.42"),
    ],
)
def test_render_repo_id_sanitises_the_run_id(template: str, run_id: str, fields: dict[str, str], expected: str) -> None:
    assert render_repo_id(template, run_id, **fields) == expected


@pytest.mark.parametrize(
    ("template", "run_id", "fields", "error"),
    [
        ("{org}/{run_id}", "run-1", {}, "needs a value for 'org'"),
        ("{org}/{run_id}", "///", {"org": "acme"}, "no characters usable"),
        ("{org}/{run_id}", "r" * 97, {"org": "acme"}, "1-96 characters"),
        ("{run_id}", "run-1", {}, "namespace/name"),
        ("{org}/{run_id}", "run-1", {"org": "bad org"}, "Invalid Hub repo id"),
    ],
)
def test_render_repo_id_rejects_ids_the_hub_would_refuse(
    template: str, run_id: str, fields: dict[str, str], error: str
) -> None:
    with pytest.raises(ValueError, match=error):
        render_repo_id(template, run_id, **fields)


def test_a_refused_repo_id_names_the_setting_it_came_from() -> None:
    """The Hub's own rules (huggingface_hub's validate_repo_id, `.git` endings included), told in
    the project's words with the setting the id came from."""
    with pytest.raises(ValueError, match=r"'acme/x\.git' \(from publish root 'hf://datasets/acme/x\.git'\).*'\.git'"):
        parse_publish_root("hf://datasets/acme/x.git")
    with pytest.raises(ValueError, match=r"'bad org/run-1' \(from repo id template '\{org\}/\{run_id\}'\)"):
        render_repo_id("{org}/{run_id}", "run-1", org="bad org")


@pytest.mark.parametrize(
    "repo_id",
    ["acme", "acme/a/b", "acme/-traces", "acme/traces.", "acme/tra--ces", "a..b/traces", "acme/bad name", "acme/x.git"],
)
def test_validate_repo_id_rejects_invalid_ids(repo_id: str) -> None:
    with pytest.raises(ValueError):
        validate_repo_id(repo_id)
