"""Region-scoped names clash only inside one region (gpufleet/namescope.py): the same ESS names in two regions of one
account are legal, the same RAM names are not. Scopes as components/alicloud/name_scopes.yaml quotes the API
reference: ESS CreateScalingGroup "The name must be unique within a region", CreateScalingRule "unique under the same
account within a region", CreateScheduledTask "unique in the region"; a RAM role is acs:ram:*:{accountId}:role/{name},
no region."""

from gpufleet import namescope, plan

STACK = "alicloud-cn-hangzhou-prod"
REGION_SCOPED = {
    "alicloud:ess/scalingGroup:ScalingGroup",
    "alicloud:ess/scalingRule:ScalingRule",
    "alicloud:ess/scheduledTask:ScheduledTask",
}


def _names(stack: str, region: str) -> list[namescope.Name]:
    """The names the prod program declares, as if deployed as `stack` in `region` (the same names: issue 26's case
    of two stacks sharing a name base)."""
    names, unknown = namescope.names_of(plan.for_stack(STACK).resources, stack, "alicloud", region)
    assert unknown == []
    return names


def test_the_same_names_in_two_regions_clash_only_where_the_scope_is_the_account():
    clashes = namescope.clashes(_names("a-prod", "cn-hangzhou") + _names("b-prod", "cn-shanghai"))
    assert {c.rule.scope for c in clashes} == {"account"}
    assert {c.rule.type for c in clashes} >= {"alicloud:ram/role:Role", "alicloud:ram/policy:Policy"}
    assert all(c.scope == "the alicloud account" and c.stacks == ("a-prod", "b-prod") for c in clashes)


def test_the_same_names_in_one_region_clash_in_that_region_too():
    clashes = namescope.clashes(_names("a-prod", "cn-hangzhou") + _names("b-prod", "cn-hangzhou"))
    regional = {c.rule.type for c in clashes if c.rule.scope == "region"}
    assert regional == REGION_SCOPED
    assert {c.scope for c in clashes if c.rule.scope == "region"} == {"region cn-hangzhou of the alicloud account"}
