import copy

import pytest

from gpufleet import plan
from gpufleet.cost import estimate, usage
from gpufleet.finance.compare import Option
from gpufleet.validation import load_fleet


@pytest.fixture
def ali_inventory():
    """What the real program declares for the Alibaba prod stack (a fresh copy: tests may edit it)."""
    return plan.for_stack("alicloud-cn-hangzhou-prod").resources


@pytest.fixture
def prod_fleet():
    return load_fleet("alicloud-cn-hangzhou-prod")


@pytest.fixture
def prod_estimate(ali_inventory, prod_fleet):
    return estimate.price_inventory(
        prod_fleet.stack, prod_fleet.spec, prod_fleet.instance_type.type, ali_inventory, usage.load(prod_fleet.stack)
    )


@pytest.fixture
def options(ali_inventory, prod_fleet):
    """Two priced Alibaba prod options (payg, spot) and a Tencent one whose preview failed."""
    out = []
    for billing in ("payg", "spot"):
        inv = copy.deepcopy(ali_inventory)
        if billing == "spot":
            next(r for r in inv if r["type"].endswith("ScalingConfiguration"))["inputs"]["spotStrategy"] = "SpotAsPriceGo"
        e = estimate.price_inventory(
            prod_fleet.stack, prod_fleet.spec, "ecs.gn7i-c8g1.2xlarge", inv, usage.load(prod_fleet.stack)
        )
        out.append(Option("alicloud", "cn-hangzhou", "ecs.gn7i-c8g1.2xlarge", billing, [], e))
    out.append(Option("tencentcloud", "ap-shanghai", None, "payg", ["region cn-hangzhou -> ap-shanghai"], None, "preview failed"))
    return out
