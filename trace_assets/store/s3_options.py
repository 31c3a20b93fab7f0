"""Object-storage settings (dagster-aws `S3Resource`'s fields) as s3fs's and boto3's options, in one
place for every reader and writer of an `s3://` URL: the trace store, the staging mirror, the
publish target and the sensor's queue. Unset fields fall through to botocore's own environment
handling (AWS_ENDPOINT_URL, AWS_ENDPOINT_URL_S3, AWS_PROFILE, ...)."""

from __future__ import annotations

from typing import Any, Protocol


class S3Access(Protocol):
    """The fields read here: the `object_storage` resource's, or anything carrying them."""

    use_unsigned_session: bool
    region_name: str | None
    endpoint_url: str | None
    max_attempts: int
    profile_name: str | None
    use_ssl: bool
    verify: bool | None
    aws_access_key_id: str | None
    aws_secret_access_key: str | None
    aws_session_token: str | None


def storage_options(access: S3Access, url: str) -> dict[str, Any]:
    """s3fs's options for `url` (none for a URL that is not `s3://`); credentials stay inside its client."""
    if not url.startswith(("s3://", "s3a://")):
        return {}
    options: dict[str, Any] = {
        "config_kwargs": {"retries": {"max_attempts": access.max_attempts, "mode": "standard"}},
        "skip_instance_cache": True,
        # Trace files are small: one GET each, without the HEAD s3fs sends to plan ranged reads.
        "max_concurrency": 1,
    }
    client_kwargs: dict[str, Any] = {}
    if access.region_name:
        client_kwargs["region_name"] = access.region_name
    if access.verify is not None:
        client_kwargs["verify"] = access.verify
    if client_kwargs:
        options["client_kwargs"] = client_kwargs
    if access.endpoint_url:
        options["endpoint_url"] = access.endpoint_url
    if access.use_unsigned_session:
        options["anon"] = True
    if access.profile_name:
        options["profile"] = access.profile_name
    if access.aws_access_key_id:
        options["key"] = access.aws_access_key_id
    if access.aws_secret_access_key:
        options["secret"] = access.aws_secret_access_key
    if access.aws_session_token:
        options["token"] = access.aws_session_token
    if not access.use_ssl:
        options["use_ssl"] = False
    return options


def aws_session_options(access: S3Access) -> tuple[dict[str, Any], dict[str, Any]]:
    """The same settings for a boto3 session and its clients (the sensor's SQS queue): unset
    ones fall through to botocore's environment handling, as for S3."""
    session = {
        name: value
        for name, value in (
            ("profile_name", access.profile_name),
            ("region_name", access.region_name),
            ("aws_access_key_id", access.aws_access_key_id),
            ("aws_secret_access_key", access.aws_secret_access_key),
            ("aws_session_token", access.aws_session_token),
        )
        if value
    }
    client: dict[str, Any] = {"use_ssl": access.use_ssl}
    if access.verify is not None:
        client["verify"] = access.verify
    return session, client
