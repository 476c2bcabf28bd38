"""Provider-facing names and sizes (tags, secret and bucket names, user data), each refusal with its citation."""

import pytest

from gpufleet import contract, validation
from gpufleet.errors import UserError

from .test_contract import _raw


@pytest.mark.parametrize(
    "cloud, kind, good, bad",
    [
        ("tencentcloud", "secret_name", "gpufleet-prod-vllm-api-key", "gpufleet/prod/vllm-api-key"),
        ("alicloud", "secret_name", "gpufleet/prod/vllm-api-key", "acs/secret"),
        ("tencentcloud", "bucket_name", "gpufleet-models-1250000000", "gpufleet-models-ap-guangzhou"),
        ("alicloud", "bucket_name", "gpufleet-models-cn-hangzhou", "Gpufleet_models"),
        ("tencentcloud", "tag_key", "gpufleet:fleet", "qcs:owner"),
        ("alicloud", "tag_key", "gpufleet:fleet", "aliyun-owner"),
        # the documented rule is the prefix and a URL: a newline is no part of it (it was refused as "not aliyun*"), a
        # URL after one still is
        ("alicloud", "tag_value", "line one\nline two", "see\nhttps://example.com"),
        ("tencentcloud", "tag_value", "ml-platform", " padded "),
        ("alicloud", "user_data", "x" * 16000, "x" * 16500),
        ("tencentcloud", "user_data", "x" * 12000, "x" * 12500),
    ],
)
def test_names(cloud, kind, good, bad):
    assert contract.name_problems(cloud, kind, good) == []
    (problem, *_) = contract.name_problems(cloud, kind, bad)
    assert "terraform-provider" in problem or "alibabacloud.com" in problem or "tencentcloud.com" in problem


def test_spec_tags_are_checked():
    raw = _raw("tencentcloud-ap-guangzhou-dev")
    raw["tags"] = {"qcs:owner": "me"}
    with pytest.raises(UserError) as err:
        validation.validate(raw, stack="s", file="x", sizing=False)
    assert any(p.path == "fleet.tags.qcs:owner" for p in err.value.problems)
