"""Re-declaring the fleet for another cloud / billing: the spec dict the program is run with."""

from gpufleet import validation
from gpufleet.finance import compare
from gpufleet.stacks import loader

PROD = "alicloud-cn-hangzhou-prod"


def _raw():
    return loader.read_stack_config(PROD)[1][loader.CONFIG_KEY]


def test_other_cloud_nearest_region_zones_and_type(prod_fleet):
    new, notes, region, itype = compare.redeclare(_raw(), prod_fleet, "tencentcloud", "monthly")
    assert region == "ap-shanghai" and itype == "GNV4.3XLARGE44"
    assert new["cloud"] == "tencentcloud" and new["region"] == "ap-shanghai"
    assert new["zones"] == ["ap-shanghai-5", "ap-shanghai-8"]  # the zones that sell A10, as many as the stack spans
    assert new["billing"] == {"model": "monthly", "period_months": 1}
    assert new["gpu"]["instance_type"] == "GNV4.3XLARGE44"
    assert any("cn-hangzhou -> ap-shanghai" in n for n in notes) and any("nearest vCPU" in n for n in notes)
    # the re-declared spec passes the same validation as a stack file
    fleet = validation.validate(new, stack=PROD, file="x")
    assert fleet.instance_type.type == "GNV4.3XLARGE44"
    assert _raw()["cloud"] == "alicloud"  # the stack's own spec is untouched


def test_same_cloud_other_billing(prod_fleet):
    new, notes, region, itype = compare.redeclare(_raw(), prod_fleet, "alicloud", "yearly")
    assert region == "cn-hangzhou" and new["zones"] == _raw()["zones"]
    assert new["billing"] == {"model": "yearly", "period_months": 12}
    assert notes == ["billing payg -> yearly (1-year subscription)"]
    assert compare.redeclare(_raw(), prod_fleet, "alicloud", "payg")[0]["billing"] == {"model": "payg"}
    # prod spot keeps replicas.min on demand (issue 18)
    spot = {"model": "spot", "on_demand_base": _raw()["replicas"]["min"]}
    assert compare.redeclare(_raw(), prod_fleet, "alicloud", "spot")[0]["billing"] == spot


def test_gpu_the_other_cloud_does_not_sell(prod_fleet):
    raw = {**_raw(), "gpu": {"kind": "A100-80G", "count": 1}, "zones": ["cn-hangzhou-h", "cn-hangzhou-i"]}
    fleet = validation.validate(raw, stack=PROD, file="x")
    new, notes, region, itype = compare.redeclare(raw, fleet, "tencentcloud", "payg")
    assert new is None and "sells no A100-80G" in notes[-1]
    raw = {
        **_raw(),
        "gpu": {"kind": "V100-16G", "count": 1},
        "zones": ["cn-hangzhou-h", "cn-hangzhou-i"],
        "image": {"recipe": "cuda12-vllm-v100"},
        "serving": {
            **_raw()["serving"],
            "dtype": "float16",
            "max_model_len": 4096,
            "max_num_batched_tokens": 1024,
            "gpu_memory_utilization": 0.95,
        },
    }
    fleet = validation.validate(raw, stack=PROD, file="x")
    new, notes, region, itype = compare.redeclare(raw, fleet, "tencentcloud", "payg")
    assert new["gpu"]["kind"] == "V100-32G" and itype.startswith("GN10X")
