"""What a run worker pays to load the code location: no dagster-aws, no boto3 (see defs/s3_config.py),
and the `object_storage` resource's config still that of dagster-aws's S3Resource."""

from __future__ import annotations

import subprocess
import sys

from dagster_aws.s3 import S3Resource

from trace_assets.defs.resources import ObjectStorage
from trace_assets.defs.s3_config import S3Config


def test_object_storage_takes_s3_resources_config():
    theirs = S3Resource.model_fields
    assert set(ObjectStorage.model_fields) == set(S3Config.model_fields) == set(theirs)
    for name, field in theirs.items():
        ours = S3Config.model_fields[name]
        assert (ours.annotation, ours.default, ours.description) == (field.annotation, field.default, field.description)
        assert ObjectStorage.model_fields[name].annotation == field.annotation, name
    assert ObjectStorage().max_attempts == 8  # ours retries 8 times, not 5


def test_loading_the_code_location_imports_no_aws_sdk():
    code = (
        "import sys, trace_assets.definitions; "
        "print(sorted(m for m in ('dagster_aws', 'boto3', 'botocore', 's3fs', 'huggingface_hub') if m in sys.modules))"
    )
    loaded = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    assert loaded.strip() == "[]"
