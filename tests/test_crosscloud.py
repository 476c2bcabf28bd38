"""Moving a stack between clouds by changing cloud, region and zones; Tencent's UTC+8 schedule times."""

import copy
from pathlib import Path

import pytest
from views import tencentcloud_view

from gpufleet import registry, validation
from gpufleet.components.tencentcloud.checks import cron_to_utc8
from gpufleet.errors import UserError
from gpufleet.preview import preview_spec
from gpufleet.stacks import loader

ROOT = Path(__file__).resolve().parents[1]


def _alibaba_prod_moved(**changes):
    raw = copy.deepcopy(loader.read_stack_config("alicloud-cn-hangzhou-prod", ROOT)[1][loader.CONFIG_KEY])
    raw.update({"cloud": "tencentcloud", "region": "ap-guangzhou", "zones": ["ap-guangzhou-6", "ap-guangzhou-7"], **changes})
    return raw


def _problems(raw):
    with pytest.raises(UserError) as exc:
        validation.validate(raw, stack="moved", file="Pulumi.moved.yaml")
    return [(p.path, p.message) for p in exc.value.problems]


def test_only_cloud_region_zones_changed_names_what_does_not_carry_over():
    problems = _problems(_alibaba_prod_moved())
    assert [f for f, _ in problems] == ["fleet.model.source"]
    assert "cos://" in problems[0][1] and "oss://" in problems[0][1]


def test_with_a_cos_source_the_moved_stack_is_a_valid_tencent_fleet():
    raw = _alibaba_prod_moved()
    raw["model"] = {**raw["model"], "source": "cos://gpufleet-models-1250000000/qwen2.5-7b-instruct.tar"}
    fleet = validation.validate(raw, stack="moved", file="x")
    assert fleet.instance_type.type == "GNV4.3XLARGE44"  # the catalog's A10 size on Tencent
    v = tencentcloud_view(preview_spec(raw, "moved"))
    assert v["group_zones"] == 2 and v["group_min"] >= 2 and v["nat_with_eip"] and v["health_check_path"] == "/health"
    # the Alibaba contact group is not a notification template id: a preview note, not an error
    assert any("notice-" in n and "llm-oncall" in n for n in registry.notes("tencentcloud", fleet.spec))


def test_a_zone_that_does_not_sell_the_gpu_is_named():
    raw = _alibaba_prod_moved(zones=["ap-guangzhou-3", "ap-guangzhou-6"])
    raw["model"] = {**raw["model"], "source": "https://models.example.com/qwen.tar"}
    problems = _problems(raw)
    assert any("ap-guangzhou-3" in m and "A10" in m for _, m in problems), problems


def test_a_cos_source_on_alibaba_is_named():
    raw = copy.deepcopy(loader.read_stack_config("alicloud-cn-hangzhou-prod", ROOT)[1][loader.CONFIG_KEY])
    raw["model"] = {**raw["model"], "source": "cos://bucket-1250000000/m.tar"}
    assert [f for f, _ in _problems(raw)] == ["fleet.model.source"]


@pytest.mark.parametrize(
    "utc, utc8",
    [
        ("0 1 * * 1-5", "0 9 * * 1-5"),
        ("0 14 * * *", "0 22 * * *"),
        ("30 20 * * 1-5", "30 4 * * 2-6"),  # 20:30 UTC Mon-Fri is 04:30 UTC+8 Tue-Sat
        ("0 18 * * 0,6", "0 2 * * 0,1"),  # Sat/Sun evenings UTC are Sun/Mon mornings UTC+8
        ("0 20 * * 7", "0 4 * * 1"),  # 7 is Sunday too
        ("0 20 15 * *", "0 4 16 * *"),
        ("0 10,20 * * *", "0 4,18 * * *"),  # every day: the wrap needs no day shift
        ("*/15 * * * *", "*/15 * * * *"),
    ],
)
def test_cron_to_utc8(utc, utc8):
    assert cron_to_utc8(utc) == utc8


@pytest.mark.parametrize("cron", ["0 10,20 * * 1", "0 20 31 * *", "0 20 1 6 *", "0 */2 * * 1"])
def test_cron_that_cannot_be_shifted_exactly(cron):
    with pytest.raises(ValueError):
        cron_to_utc8(cron)


def test_unshiftable_schedule_is_a_stack_problem():
    raw = loader.read_stack_config("tencentcloud-ap-guangzhou-prod", ROOT)[1][loader.CONFIG_KEY]
    raw = {
        **raw,
        "autoscaling": {**raw["autoscaling"], "schedules": [{"name": "evening", "cron": "0 10,20 * * 1-5", "min": 2, "max": 4}]},
    }
    (problem,) = _problems(raw)
    assert problem[0] == "fleet.autoscaling.schedules.0.cron" and "split it into two schedules" in problem[1]
