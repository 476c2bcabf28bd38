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
        # ESS CreateScalingConfiguration / ECS RunInstances UserData: 32 KB before Base64 (review B1: 16 KB was refused)
        ("alicloud", "user_data", "x" * 32768, "x" * 32770),
        ("tencentcloud", "user_data", "x" * 12000, "x" * 12500),
    ],
)
def test_names(cloud, kind, good, bad):
    assert contract.name_problems(cloud, kind, good) == []
    (problem, *_) = contract.name_problems(cloud, kind, bad)
    assert any(cite in problem for cite in ("terraform-provider", "alibabacloud.com", "alibabacloud_", "tencentcloud.com"))


def test_alibaba_user_data_takes_the_32_kb_both_apis_state():
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "system"))
    import speclib  # the vendors' text, read as tests/system reads it

    from gpufleet.components.alicloud import rules

    for ref, sentence in (
        ("alibabacloud_ess20220222/CreateScalingConfiguration:UserData", "The raw data can be up to 32 KB in size."),
        ("alibabacloud_ecs20140526/RunInstances:UserData", "cannot exceed 32 KB before Base64 encoding"),
    ):
        assert sentence in speclib.alibaba_member(ref).document
    assert rules.USER_DATA_MAX_BYTES == 32 * 1024
    assert contract.name_problems("alicloud", "user_data", "x" * 20000) == []  # refused as over 16 KB before
    (problem,) = contract.name_problems("alicloud", "user_data", "é" * 16385)  # 32770 bytes: the size is in bytes
    assert "43692" in problem and "CreateScalingConfiguration UserData" in problem and "RunInstances UserData" in problem


def test_spec_tags_are_checked():
    raw = _raw("tencentcloud-ap-guangzhou-dev")
    raw["tags"] = {"qcs:owner": "me"}
    with pytest.raises(UserError) as err:
        validation.validate(raw, stack="s", file="x", sizing=False)
    assert any(p.path == "fleet.tags.qcs:owner" for p in err.value.problems)
