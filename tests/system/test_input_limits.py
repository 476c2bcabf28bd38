"""The input limits of issue 27 against the vendors' own API reference text (pinned test dependencies, speclib).

What the spec refuses or caps rests on these texts: a new SDK or tccli that changes one fails here, naming the text.
- Tencent tags: each resource the fleet's tags go to states its own count; the spec takes the fewest (the nodes'
  InstanceTags, 10) less gpufleet's own 2 (tencentcloud/checks.py MAX_TAGS, the `count` rules in rules.py).
- The IPv4-only fields the CIDRs go into: the VPC range and the security group / access list sources on both clouds,
  each with a separate IPv6 field the program does not send (spec.IPV4_ONLY).
- alarms.contact_group: neither reference states a length or character set, so 128 is gpufleet's own rule
  (spec.CONTACT_GROUP_MAX); a reference that starts stating one fails here, to be taken instead.
"""

from __future__ import annotations

import re

from gpufleet.components.tencentcloud import checks as tencent_checks
from gpufleet.components.tencentcloud import rules as tencent_rules
from gpufleet.stacks import spec

from . import speclib

TENCENT_TAG_TEXTS = {  # (type, arg) -> (member, the sentence that states the count)
    ("tencentcloud:As/scalingConfig:ScalingConfig", "instance_tags"): (
        "autoscaling/v20180419/CreateLaunchConfiguration:InstanceTags",
        r"最多支持指定(\d+)个标签",
    ),
    ("tencentcloud:As/scalingConfig:ScalingConfig", "tags"): (
        "autoscaling/v20180419/CreateLaunchConfiguration:Tags",
        r"每个启动配置最多支持(\d+)个标签",
    ),
    ("tencentcloud:As/scalingGroup:ScalingGroup", "tags"): (
        "autoscaling/v20180419/CreateAutoScalingGroup:Tags",
        r"每个伸缩组最多支持(\d+)个标签",
    ),
    ("tencentcloud:Clb/instance:Instance", "tags"): ("clb/v20180317/CreateLoadBalancer:Tags", r"最大支持(\d+)个标签键值对"),
    ("tencentcloud:Tat/command:Command", "tags"): ("tat/v20201028/CreateCommand:Tags", r"列表长度不超过(\d+)"),
}


def test_tencent_tag_counts_are_the_api_references_and_the_spec_takes_the_fewest():
    stated = {}
    for key, (ref, sentence) in TENCENT_TAG_TEXTS.items():
        doc = speclib.member("tccli", ref).document
        found = re.search(sentence, doc)
        assert found, doc
        stated[key] = int(found.group(1))
    rules = {(r.type, r.arg): r for r in tencent_rules.RULES if r.kind == "count" and r.spec == "fleet.tags"}
    assert {key: r.high for key, r in rules.items()} == stated
    assert all(ref in rules[key].source for key, (ref, _) in TENCENT_TAG_TEXTS.items())
    assert stated[("tencentcloud:As/scalingConfig:ScalingConfig", "instance_tags")] == 10 == min(stated.values())
    assert tencent_checks.MAX_TAGS == min(stated.values())
    assert tencent_checks.LIST_CAPS["tags"].most == min(stated.values()) - 2  # gpufleet:fleet, gpufleet:env
    assert "CreateLaunchConfiguration:InstanceTags" in tencent_checks.LIST_CAPS["tags"].quota


def test_the_cidr_fields_are_ipv4_with_ipv6_apart():
    # Alibaba: the security group source the program sends (cidr_ip -> SourceCidrIp) is IPv4; IPv6 is another field
    source = speclib.member("alibaba-sdk", "alibabacloud_ecs20140526/AuthorizeSecurityGroup:Permissions.SourceCidrIp")
    assert "IPv4" in source.document, source.document
    speclib.member("alibaba-sdk", "alibabacloud_ecs20140526/AuthorizeSecurityGroup:Permissions.Ipv6SourceCidrIp")
    vpc = speclib.member("alibaba-sdk", "alibabacloud_vpc20160428/CreateVpc:CidrBlock").document
    assert "primary IPv4 CIDR block" in vpc, vpc
    # Tencent: security group policies carry CidrBlock and a separate Ipv6CidrBlock; the VPC range is IPv4 space
    api = speclib.tccli_api("vpc/v20170312")
    policy = {m["name"] for m in api["objects"]["SecurityGroupPolicy"]["members"]}
    assert {"CidrBlock", "Ipv6CidrBlock"} <= policy
    tencent_vpc = speclib.member("tccli", "vpc/v20170312/CreateVpc:CidrBlock").document
    assert all(block in tencent_vpc for block in ("10.0.0.0", "172.16.0.0", "192.168.0.0")), tencent_vpc
    assert "IPv4" in spec.IPV4_ONLY


def test_contact_group_has_no_vendor_limit_so_gpufleets_own_rule_applies():
    texts = [
        speclib.member("alibaba-sdk", "alibabacloud_cms20190101/CreateDynamicTagGroup:ContactGroupList").document,
        speclib.member("alibaba-sdk", "alibabacloud_cms20190101/CreateMonitorGroup:ContactGroups").document,
        speclib.member("tccli", "monitor/v20180724/CreateAlarmPolicy:NoticeIds").document,
    ]
    for text in texts:
        assert not [lim for lim in speclib.extract(text) if lim.kind in ("length", "format")], text
    assert spec.CONTACT_GROUP_MAX == 128
