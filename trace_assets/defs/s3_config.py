"""dagster-aws's `S3Resource` configuration, declared here so that loading the code location does
not import `dagster_aws`: its package init imports every component it ships (Athena, Secrets
Manager, ... and Dagster's test utilities) and boto3, about 0.3-0.7 s of every run worker's
start, for a resource whose client the steps never use (they read through s3fs)."""

from __future__ import annotations

import dagster as dg
from pydantic import Field


class S3Config(dg.ConfigurableResource):
    """The fields, defaults and descriptions of `dagster_aws.s3.S3Resource` (dagster-aws 0.29), so
    launchpad and run configs written for it keep working; a test compares the two."""

    use_unsigned_session: bool = Field(default=False, description="Specifies whether to use an unsigned S3 session.")
    region_name: str | None = Field(default=None, description="Specifies a custom region for the S3 session.")
    endpoint_url: str | None = Field(default=None, description="Specifies a custom endpoint for the S3 session.")
    max_attempts: int = Field(
        default=5,
        description=(
            "This provides Boto3's retry handler with a value of maximum retry attempts, where the"
            " initial call counts toward the max_attempts value that you provide."
        ),
    )
    profile_name: str | None = Field(default=None, description="Specifies a profile to connect that session.")
    use_ssl: bool = Field(default=True, description="Whether or not to use SSL. By default, SSL is used.")
    verify: bool | None = Field(
        default=None,
        description="Whether or not to verify SSL certificates. By default SSL certificates are verified.",
    )
    aws_access_key_id: str | None = Field(
        default=None, description="AWS access key ID to use when creating the boto3 session."
    )
    aws_secret_access_key: str | None = Field(
        default=None, description="AWS secret access key to use when creating the boto3 session."
    )
    aws_session_token: str | None = Field(
        default=None, description="AWS session token to use when creating the boto3 session."
    )


class ObjectStorage(S3Config):
    """Object-storage access, S3Resource's config (endpoint_url for MinIO, R2, Ceph), handed to s3fs
    (`store.s3_options`); here, apart from the pipeline, so `trace-assets status` lists a traces root
    without loading it.

    Unset fields fall through to botocore's own environment handling (AWS_ENDPOINT_URL,
    AWS_ENDPOINT_URL_S3, AWS_PROFILE, ...). Credentials stay inside the s3fs client.
    """

    max_attempts: int = 8
