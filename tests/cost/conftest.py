import pytest
from gpufleet.cost import estimate, usage
from gpufleet.stacks.loader import load_fleet

from gpufleet import plan


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
