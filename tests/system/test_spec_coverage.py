"""Every argument the program sends, checked against the vendor's own API reference (pinned packages), through the map
components/<cloud>/api_map.yaml: unmapped arguments, stated limits no rule encodes, rules citing a limit the spec no
longer states, and values outside a stated range all fail here."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest
from contract import sweep

from gpufleet import contract

from . import coverage, speclib

ROOT = Path(__file__).resolve().parents[2]
CLOUDS = [c for c in ("alicloud", "tencentcloud") if coverage._has_map(c)]


@pytest.fixture(autouse=True)
def fixed_clock(monkeypatch):
    monkeypatch.setenv("GPUFLEET_NOW", "2026-12-01T00:00:00+00:00")


def _inventories():
    return sweep.inventories() + coverage.shipped()


def _sent(cloud: str) -> dict[str, set[str]]:
    return coverage.sent_args(_inventories())[cloud]


def test_the_spec_packages_are_pinned_test_dependencies_at_the_version_the_maps_read():
    lock = (ROOT / "requirements-dev.lock").read_text()
    import tomllib

    test_extra = str(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]["test"])
    for cloud in CLOUDS:
        for name, version in coverage.spec_packages(coverage.api_map(cloud)).items():
            assert f"\n{name}=={version}\n" in lock, f"{name}=={version} not in requirements-dev.lock"
            runtime = str(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"])
            pinned = any(f"'{n}==" in test_extra for n in (name, name.replace("-", "_")))
            assert pinned or name.replace("-", "_") in runtime, f"{name} not pinned in the test extra"
            assert speclib.version(name) == version, f"installed {name} {speclib.version(name)}"


@pytest.mark.parametrize("cloud", CLOUDS)
def test_every_sent_argument_is_mapped_and_every_stated_limit_is_encoded_or_waived(cloud):
    rep = coverage.report(cloud, _sent(cloud))
    assert rep.problems == []
    assert rep.sent > 100 and len(rep.stated) > 30  # the map is read, not skipped


@pytest.mark.parametrize("cloud", CLOUDS)
def test_the_values_sent_lie_in_the_ranges_the_spec_states(cloud):
    assert coverage.value_problems(cloud, _inventories()) == []


def test_the_counts_in_docs_are_the_current_ones():
    reports = {cloud: coverage.report(cloud, _sent(cloud)) for cloud in CLOUDS}
    block = coverage.doc_block(coverage.DOC.read_text())
    assert block == coverage.counts_block(reports), "run: .venv/bin/python tests/system/coverage.py --write"


# --- the check fails when it should (each on the real map and the real spec text)

TENCENT_POLICY = "tencentcloud:As/scalingPolicy:ScalingPolicy"


@pytest.mark.skipif("tencentcloud" not in CLOUDS, reason="no Tencent map")
def test_a_loosened_rule_leaves_the_stated_limit_unencoded():
    rules = contract.rules_module("tencentcloud").RULES
    threshold = [r for r in rules if (r.type, r.arg) == (TENCENT_POLICY, "threshold")]
    assert threshold, "the AS threshold rule is gone"
    loosened = [msgspec.structs.replace(r, low=0) if r in threshold else r for r in rules]
    rep = coverage.report("tencentcloud", _sent("tencentcloud"), rules=loosened)
    assert any("threshold" in p and "range 1-100" in p and "no rule encodes it" in p for p in rep.problems), rep.problems
    # and, as the loosened rule still cites the spec member, its limit is one the text does not state
    assert any("MetricAlarm.Threshold" in p and "no longer states" in p for p in rep.problems), rep.problems


@pytest.mark.skipif("tencentcloud" not in CLOUDS, reason="no Tencent map")
def test_an_unmapped_argument_a_missing_member_and_a_stale_version_fail():
    sent = {k: set(v) for k, v in _sent("tencentcloud").items()}
    sent[TENCENT_POLICY].add("brand_new_argument")
    rep = coverage.report("tencentcloud", sent)
    assert [p for p in rep.problems if "brand_new_argument" in p] == [
        f"{TENCENT_POLICY} brand_new_argument: sent but not mapped to an API member (components/tencentcloud/api_map.yaml)"
    ]
    amap = {**coverage.api_map("tencentcloud")}
    amap["resources"] = {**amap["resources"]}
    policy = {**amap["resources"][TENCENT_POLICY], "args": {**amap["resources"][TENCENT_POLICY]["args"]}}
    policy["args"]["threshold"] = "MetricAlarm.NoSuchMember"
    amap["resources"][TENCENT_POLICY] = policy
    amap["spec"] = {**amap["spec"], "version": "0.0.1"}
    rep = coverage.report("tencentcloud", _sent("tencentcloud"), amap=amap)
    assert any("MetricAlarm.NoSuchMember" in p and "has no member" in p for p in rep.problems)
    assert any("installed 3.1.189.1" in p for p in rep.problems)


@pytest.mark.skipif("tencentcloud" not in CLOUDS, reason="no Tencent map")
def test_the_old_never_firing_scale_in_threshold_is_refused_by_the_rule_and_by_the_spec_text():
    """Defect: the scale-in policy the SCF scaler runs sent CPU LESS_THAN 0; AS takes 1-100 for CPU_UTILIZATION."""
    old = {"metricName": "CPU_UTILIZATION", "comparisonOperator": "LESS_THAN", "threshold": 0}
    resource = {"type": TENCENT_POLICY, "name": "llm-prod-asg-scale-in", "custom": True, "inputs": old}
    (violation,) = contract.check_inventory([resource], __import__("datetime").datetime.now(), "tencentcloud")
    assert "0 is outside 1-100" in violation.message and "tccli==3.1.189.1" in violation.rule.source
    inv = (("old", "tencentcloud", {"resources": [resource]}),)
    assert coverage.value_problems("tencentcloud", inv) == [
        f"{TENCENT_POLICY} threshold=0: outside what autoscaling/v20180419/CreateScalingPolicy:MetricAlarm.Threshold states (1-100)"
    ]


@pytest.mark.skipif("tencentcloud" not in CLOUDS, reason="no Tencent map")
def test_every_tencent_stack_scaling_on_the_queue_or_kv_cache_sends_valid_policies_that_never_fire():
    seen = 0
    for name, cloud, inv in _inventories():
        if cloud != "tencentcloud" or "cpu_utilization" in name:
            continue
        scf = [r for r in inv["resources"] if r["type"] == "tencentcloud:Scf/function:Function"]
        if not scf:
            continue  # scales on CPU: the AS alarms act themselves
        for r in (r for r in inv["resources"] if r["type"] == TENCENT_POLICY):
            i = r["inputs"]
            assert i["metricName"] == "CPU_UTILIZATION" and 1 <= i["threshold"] <= 100, (name, r["name"], i)
            assert (i["comparisonOperator"], i["threshold"]) == ("GREATER_THAN", 100), "CPU never exceeds 100%"
            seen += 1
    assert seen >= 4


# --- the extraction, on the vendors' own sentences


def test_extraction_reads_ranges_enums_lengths_and_scopes_from_tccli_text():
    threshold = speclib.tencent_member("autoscaling/v20180419/CreateScalingPolicy:MetricAlarm.Threshold")
    assert [str(x) for x in speclib.extract(threshold.document, threshold.type)] == ["range 1-100"]
    cooldown = speclib.tencent_member("autoscaling/v20180419/CreateAutoScalingGroup:DefaultCooldown")
    assert "range 0-3600" in [str(x) for x in speclib.extract(cooldown.document, cooldown.type)]
    name = speclib.tencent_member("autoscaling/v20180419/CreateAutoScalingGroup:AutoScalingGroupName")
    assert "unique in account" in [str(x) for x in speclib.extract(name.document, name.type)]
    policies = speclib.tencent_member("autoscaling/v20180419/CreateAutoScalingGroup:TerminationPolicies")
    assert "enum OLDEST_INSTANCE, NEWEST_INSTANCE" in [str(x) for x in speclib.extract(policies.document, policies.type)]
    user_data = speclib.tencent_member("cvm/v20170312/RunInstances:UserData")
    assert "length -16384" in [str(x) for x in speclib.extract(user_data.document, user_data.type)]


@pytest.mark.parametrize(
    "text, expected",
    [
        ("The period of time before the lifecycle hook times out. Valid values: 30 to 21600. Unit: seconds.", "range 30-21600"),
        ("Each lifecycle hook name must be unique within a scaling group.", "unique in group"),
        ("The name must be 2 to 64 characters in length, and can contain letters.", "length 2-64"),
        ("The parameter value cannot exceed 4,096 characters in length.", "length -4096"),
        ("Valid values:\n\n*   CONTINUE: go on.\n*   ABANDON: release.\n", "enum CONTINUE, ABANDON"),
        ("告警策略名称，在您账号中必须唯一。名称长度不能超过60", "length -60"),
        # a region named after "unique", past the window, narrows the account (ESS CreateScalingRule; review C2)
        ("The name of each scaling rule must be unique under the same account within a region.", "unique in region"),
        ("伸缩组名称，在您账号中必须唯一。名称仅支持中文、英文、数字", "unique in account"),
        # the Alibaba SDKs' markdown bold, a list ending ", and X", one value defined after a colon (review C4: these
        # limits were not read, so looser rules passed the coverage check)
        ("The port that is used for health checks.\n\nValid values: **1** to **65535**.", "range 1-65535"),
        (
            "Valid values: **http_2xx**, **http_3xx**, **http_4xx**, and **http_5xx**.",
            "enum http_2xx, http_3xx, http_4xx, http_5xx",
        ),
        ("The type of the NAT gateway. Valid values: **Enhanced**: enhanced NAT gateway.", "enum Enhanced"),
        ("NAT网关并发连接数上限，支持参数值：1000000、3000000、10000000，默认值为1000000。", "enum 1000000, 3000000, 10000000"),
        ("标签列表。通过指定该参数，可以为扩容的实例绑定标签。最多支持指定10个标签。", "count -10"),
        ("购买负载均衡的同时，给负载均衡打上标签，最大支持20个标签键值对。", "count -20"),
        ("The tags of the ECS instance. You can specify up to 20 tags in key-value pairs.", "count -20"),
    ],
)
def test_extraction_reads_the_documented_phrasings(text, expected):
    assert expected in [str(x) for x in speclib.extract(text)]


def test_a_length_in_letters_is_not_read_as_a_count():
    text = "函数描述,最大支持 1000 个英文字母、数字、空格、逗号、换行符和英文句号，支持中文"
    assert [str(x) for x in speclib.extract(text) if x.kind == "count"] == []


@pytest.mark.skipif("tencentcloud" not in CLOUDS, reason="no Tencent map")
def test_a_dropped_tag_count_rule_leaves_the_members_count_unencoded():
    """A map sent as {Key, Value} items: its own member's count is read too (InstanceTags takes 10)."""
    rules = contract.rules_module("tencentcloud").RULES
    dropped = [r for r in rules if not (r.kind == "count" and r.arg == "instance_tags")]
    assert len(dropped) == len(rules) - 1
    rep = coverage.report("tencentcloud", _sent("tencentcloud"), rules=dropped)
    assert [p for p in rep.problems if "instance_tags" in p] == [
        "tencentcloud:As/scalingConfig:ScalingConfig instance_tags -> autoscaling/v20180419/CreateLaunchConfiguration:"
        "InstanceTags: the spec states count -10; no rule encodes it (nor a waiver)"
    ]


def test_a_pattern_rule_must_cite_a_member_that_states_a_character_set():
    uri = speclib.alibaba_member("alibabacloud_slb20140515/CreateLoadBalancerHTTPSListener:HealthCheckURI")
    assert "can contain letters, digits, and the following special characters" in (speclib.charset(uri.document) or "")
    timeout = speclib.alibaba_member("alibabacloud_slb20140515/CreateLoadBalancerHTTPSListener:HealthCheckTimeout")
    assert speclib.charset(timeout.document) is None
    wrong = contract.Rule(
        "alicloud:slb/listener:Listener",
        "health_check_timeout",
        "pattern",
        "alibabacloud_slb20140515==3.3.31 alibabacloud_slb20140515/CreateLoadBalancerHTTPSListener:HealthCheckTimeout",
        regex="[0-9]+",
    )
    assert [p for p in coverage.cited_problems([wrong], "alibaba-sdk") if "no longer states" in p]
