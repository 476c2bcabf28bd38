"""The premise of components/tencentcloud/security.py: the node group has no rule for clients because the CLB is
declared with load_balancer_pass_to_target (only the CLB's group is checked for forwarded traffic; provider doc and
Tencent CLB docs 214/14733 cited there), and the CLB carries the group that admits load_balancer.allowed_cidrs."""

from pathlib import Path

import pytest

from gpufleet import validation
from gpufleet.components.tencentcloud import security
from gpufleet.preview import preview_stack
from gpufleet.stacks import loader

ROOT = Path(__file__).resolve().parents[1]
STACKS = [s for s in loader.stack_names(ROOT) if s.startswith("tencentcloud-")]


@pytest.mark.parametrize("stack", STACKS)
def test_clients_pass_the_clb_group_and_bypass_the_node_group(stack):
    inv = preview_stack(stack, ROOT)
    clb = next(r for r in inv.resources if r["type"] == "tencentcloud:Clb/instance:Instance")
    assert clb["inputs"]["loadBalancerPassToTarget"] is True
    if clb["inputs"]["networkType"] == "OPEN":  # the provider binds security groups to OPEN CLBs only
        assert [g.removesuffix("_id") for g in clb["inputs"]["securityGroups"]] == [
            f"{clb['name'].removesuffix('-lb-clb')}-sec-clb"
        ]
    fleet = validation.load_fleet(stack, ROOT)
    clients = {r["cidr_block"] for r in security.clb_ingress_rules(fleet) if r["action"] == "ACCEPT"}
    assert clients == set(fleet.spec.load_balancer.allowed_cidrs)
    nodes = {r["cidr_block"] for r in security.node_ingress_rules(fleet) if r["action"] == "ACCEPT" and r["port"] != "22"}
    # no client CIDR on the nodes (the SCF scaler's subnet, inside the VPC, reads the metrics port: issue 18)
    scaler = {fleet.subnets[0]} if fleet.spec.autoscaling.metric != "cpu_utilization" else set()
    assert nodes == {fleet.spec.network.vpc_cidr, security.CLB_HEALTH_CHECK_RANGE, *scaler}
