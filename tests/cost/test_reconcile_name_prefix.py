"""A bill's instance name is matched to the longest declared name it starts with, followed by a separator.

finance/reconcile.py _by_name: "the longest declared name it starts with followed by a separator (an autoscaled node's
name with the suffix the scaling group adds)". Written by hand: with both llm-prod (the VPC) and llm-prod-node (the
scaling configuration's node name) declared, the ESS node llm-prod-node-0003 is the scaling configuration's; a name
that only shares letters (llm-prodx) is nobody's.
"""

from gpufleet.finance import reconcile

NAMES = {"llm-prod": "vpc", "llm-prod-node": "scaling-config", "llm-prod-clb": "clb"}


def test_the_longest_declared_prefix_wins():
    assert reconcile._by_name(NAMES, "llm-prod-node-0003") == "scaling-config"
    assert reconcile._by_name(NAMES, "llm-prod-node.2") == "scaling-config"
    assert reconcile._by_name(NAMES, "llm-prod-clb") == "clb"


def test_a_prefix_must_end_at_a_separator():
    assert reconcile._by_name(NAMES, "llm-prodx-node") is None
    assert reconcile._by_name(NAMES, "llm-prod-nodes") == "vpc"  # llm-prod then '-': the longest that ends at one
