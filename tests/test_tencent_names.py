"""Tencent names the spec must get right before anything is declared (components/tencentcloud/checks.py)."""

from pathlib import Path

import pytest

from gpufleet import validation
from gpufleet.components.tencentcloud import checks

ROOT = Path(__file__).resolve().parents[1]
STACK = "tencentcloud-ap-guangzhou-dev"


def _problems(**serving_or_model):
    spec = validation.load_fleet(STACK, ROOT).spec
    if "api_key_secret" in serving_or_model:
        spec = spec.model_copy(update={"serving": spec.serving.model_copy(update=serving_or_model)})
    else:
        spec = spec.model_copy(update={"model": spec.model.model_copy(update=serving_or_model)})
    return checks.spec_problems(spec)


def test_shipped_tencent_stack_has_no_name_problem():
    assert _problems(api_key_secret="gpufleet-dev-vllm-api-key") == []


@pytest.mark.parametrize("name", ["gpufleet/dev/vllm-api-key", "-leading", "a" * 129, "key.with.dots"])
def test_illegal_ssm_secret_names_are_refused(name):
    out = _problems(api_key_secret=name)
    assert [f for f, _ in out] == ["fleet.serving.api_key_secret"] and "SSM" in out[0][1]


@pytest.mark.parametrize("bucket", ["gpufleet-models-ap-guangzhou", "Upper-1250000000", "name-125"])
def test_cos_bucket_needs_the_appid_suffix(bucket):
    out = _problems(source=f"cos://{bucket}/w.tar")
    assert [f for f, _ in out] == ["fleet.model.source"] and "<appid>" in out[0][1]
