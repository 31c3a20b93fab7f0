"""The docs show the commands the guide promises (services/test_documented_commands.py runs each)."""

from __future__ import annotations

from trace_assets_tests.support.documented_commands import ALL_COMMANDS


def test_the_docs_show_commands_and_the_set_the_guide_promises() -> None:
    texts = [command.text for command in ALL_COMMANDS]
    readme = [command for command in ALL_COMMANDS if command.doc == "README.md"]
    assert {"make demo", "make test"} <= {c.text for c in readme if c.not_run}
    quickstart = [c.text for c in readme if c.text.startswith(("trace-assets materialize", "HF_TOKEN="))]
    for where in ("--publish-root ~/", "--publish-root s3://", "hf://datasets/"):
        assert any(where in text for text in quickstart), where
    assert any(text.startswith("HF_TOKEN=") for text in texts)
    assert any(text.startswith("hf auth login") for text in texts)
    for subcommand in ("runs", "status", "forget", "recheck", "backfill"):
        assert any(text.startswith(f"trace-assets {subcommand}") for text in texts), subcommand
    assert any("--dry-run" in text for text in texts)
    assert all("../shared" not in text for text in texts)
