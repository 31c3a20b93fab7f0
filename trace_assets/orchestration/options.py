"""The domain's options, built from the settings: what the export, the scan, the privacy scrub,
the scan's policy, the card and the shrink guard each take. Settings are a high layer: these
builders live here, above the domain modules they build for, so `settings.py` imports none of them."""

from __future__ import annotations

import getpass
import socket
from dataclasses import astuple
from urllib.parse import urlsplit

from trace_assets.harbor.options import ExportOptions
from trace_assets.publishing.card import CardSettings
from trace_assets.secret_scan.policy import ScanPolicy
from trace_assets.secret_scan.privacy import PrivacyOptions, operator_literals
from trace_assets.secret_scan.scanner import ScanOptions
from trace_assets.settings import PipelineSettings, env_name, flag_of
from trace_assets.steps.scan import scan_options as parsed_scan_options
from trace_assets.store.bucket_url import BucketRoot, is_bucket_url


def export_options(settings: PipelineSettings) -> ExportOptions:
    return ExportOptions(
        settings.episodes,
        settings.sharegpt,
        settings.success_filter,
        settings.instruction_metadata,
        settings.verifier_metadata,
        settings.subagents,
    )


def _words(text: str) -> tuple[str, ...]:
    return tuple(word.strip() for word in text.split(",") if word.strip())


def card_settings(settings: PipelineSettings) -> CardSettings:
    return CardSettings(
        license=settings.card_license,
        pretty_name=settings.card_pretty_name,
        language=_words(settings.card_language),
        task_categories=_words(settings.card_task_categories),
        framework=settings.card_framework,
        task_source=settings.card_task_source,
        model=settings.card_model,
        intro=settings.card_intro,
    )


def privacy_options(settings: PipelineSettings) -> PrivacyOptions:
    """The operator's values: the traces root's bucket and prefix, this machine's host and user
    name, and the configured literals and regexes. A short literal or a bad regex raises ValueError."""
    root = urlsplit(settings.traces_root)
    bucket, prefix = (root.netloc, root.path) if root.scheme and root.netloc else (None, "")
    if is_bucket_url(settings.traces_root):  # the bucket's id, not `buckets`
        bucket, prefix = astuple(BucketRoot.parse(settings.traces_root))
    extra = [value for value in settings.scrub_literals.split(",") if value.strip()]
    literals = operator_literals(bucket, prefix, socket.gethostname(), getpass.getuser(), extra)
    return PrivacyOptions(literals, tuple(p for p in settings.scrub_patterns.split(";") if p.strip()))


def scan_options(settings: PipelineSettings) -> ScanOptions:
    return parsed_scan_options(
        settings.secret_patterns,
        settings.secret_allowlist,
        settings.secret_wrap_width,
        privacy_options(settings),
        settings.on_near_miss,
    )


def scan_policy(settings: PipelineSettings) -> ScanPolicy:
    return ScanPolicy(settings.on_secret, settings.on_unverified, settings.on_private)


def shrink_override_hint() -> str:
    """What a refused smaller version's message tells the operator to set to publish it anyway."""
    flag, variable = flag_of(PipelineSettings, "allow_shrink"), env_name(PipelineSettings, "allow_shrink")
    return f"pass {flag} (or set {variable}=1 / allow_shrink) to publish it anyway"
