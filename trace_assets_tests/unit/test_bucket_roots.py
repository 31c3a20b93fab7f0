"""`hf://buckets/...` traces roots, as the settings take them: the one hf:// form a traces root may
have, its bucket and prefix as the operator's values to scrub, and kept apart from other roots."""

from __future__ import annotations

import pytest

from trace_assets.core.roots import overlapping_roots
from trace_assets.defs.resources import config_from_env
from trace_assets.orchestration.options import privacy_options
from trace_assets.settings import ConfigError
from trace_assets.store.bucket_url import BucketRoot

PUBLISH = {"publish_root": "/tmp/published-datasets"}


@pytest.mark.parametrize(
    ("url", "bucket_id", "prefix"),
    [
        ("hf://buckets/org/traces", "org/traces", ""),
        ("hf://buckets/org/traces/", "org/traces", ""),
        ("hf://buckets/org/traces/sweeps/lr-3e4/", "org/traces", "sweeps/lr-3e4"),
    ],
)
def test_a_bucket_root_is_its_bucket_and_prefix(url, bucket_id, prefix):
    assert BucketRoot.parse(url) == BucketRoot(bucket_id, prefix)
    config = config_from_env({"TRACE_ASSETS_TRACES_ROOT": url}, **PUBLISH)
    assert config.traces_root == url


@pytest.mark.parametrize(
    "url", ["hf://buckets/org", "hf://buckets//traces", "hf://buckets/org/traces/../other", "hf://datasets/org/x"]
)
def test_any_other_hf_url_is_refused_as_a_traces_root(url):
    with pytest.raises(ConfigError, match=r"hf://buckets/<namespace>/<bucket>\[/<prefix>\]"):
        config_from_env({"TRACE_ASSETS_TRACES_ROOT": url}, **PUBLISH)


def test_the_bucket_id_and_prefix_are_scrubbed_not_the_word_buckets():
    config = config_from_env({"TRACE_ASSETS_TRACES_ROOT": "hf://buckets/acme-lab/rl-traces/sweep-0412"}, **PUBLISH)
    literals = privacy_options(config).literals
    assert {"acme-lab/rl-traces", "sweep-0412"} <= set(literals) and "buckets" not in literals


def test_a_bucket_root_overlaps_only_the_same_bucket_and_prefix():
    roots = {"traces_root": "hf://buckets/org/traces/runs", "publish_root": "hf://datasets/org/traces"}
    assert overlapping_roots(roots) == []
    assert overlapping_roots({**roots, "publish_root": "hf://datasets/buckets/org"}) == []
    same = {"traces_root": "hf://buckets/org/traces/runs", "staging_root": "hf://buckets/org/traces"}
    assert overlapping_roots(same) == [("traces_root", "staging_root")]
