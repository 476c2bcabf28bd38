import json
from pathlib import Path

import pytest
from gpufleet.cost import estimate, usage
from gpufleet.stacks.loader import load_fleet

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture
def ali_inventory():
    return json.loads((FIXTURES / "alicloud-inventory.json").read_text())["resources"]


@pytest.fixture
def prod_fleet():
    return load_fleet("alicloud-cn-hangzhou-prod")


@pytest.fixture
def prod_estimate(ali_inventory, prod_fleet):
    return estimate.price_inventory(
        prod_fleet.stack, prod_fleet.spec, prod_fleet.instance_type.type, ali_inventory, usage.load(prod_fleet.stack)
    )
