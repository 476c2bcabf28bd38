"""Limits read from the vendors' own API references (tccli 3.1.189.1 api.json, the Alibaba SDKs' request documents) that
the provider schemas leave out, each found by the rules-versus-API audit: the rule refuses the value the text refuses,
and the spec, where the value comes from it, is refused through the CLI (exit 2, the field, the member), not at
`pulumi up`. The expected numbers and character sets are the vendor's sentences, quoted next to each case."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

from gpufleet import contract

NOW = datetime(2026, 12, 1, tzinfo=UTC)
TC_CONFIG = "tencentcloud:As/scalingConfig:ScalingConfig"
TC_CLB = "tencentcloud:Clb/instance:Instance"


def _resource(type_, **inputs):
    return {"type": type_, "name": "r", "inputs": {contract.camel(k): v for k, v in inputs.items()}}


def _violations(cloud: str, type_: str, **inputs) -> list[contract.Violation]:
    return contract.check_inventory([_resource(type_, **inputs)], NOW, cloud)


def _preview(stack: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "GPUFLEET_NOW": "2026-12-01T00:00:00Z", "COLUMNS": "400"}
    gpufleet = Path(sys.executable).with_name("gpufleet")
    return subprocess.run(
        [str(gpufleet), "preview", "--stack", stack, "--json"], capture_output=True, text=True, env=env, timeout=180
    )


def _tags(n: int) -> dict[str, str]:
    return {f"t{i}": f"v{i}" for i in range(n)}


# --- A1: Tencent tag counts. CreateLaunchConfiguration InstanceTags "最多支持指定10个标签";
# CreateLoadBalancer Tags "最大支持20个标签键值对" (gpufleet allowed 30 everywhere).


@pytest.mark.parametrize(
    "type_, arg, most, member",
    [
        (TC_CONFIG, "instance_tags", 10, "autoscaling/v20180419/CreateLaunchConfiguration:InstanceTags"),
        (TC_CLB, "tags", 20, "clb/v20180317/CreateLoadBalancer:Tags"),
    ],
)
def test_tencent_tag_counts_are_refused_above_the_members_count(type_, arg, most, member):
    assert _violations("tencentcloud", type_, **{arg: _tags(most)}) == []
    (v,) = _violations("tencentcloud", type_, **{arg: _tags(most + 1)})
    assert f"{most + 1} items is outside 0-{most}" in v.message
    assert f"tccli==3.1.189.1 {member}" in v.rule.source and v.spec_field == "fleet.tags"


def _with_tags(project: Path, stack: str, n: int) -> None:
    path = project / "stacks" / f"Pulumi.{stack}.yaml"
    lines = path.read_text().splitlines(keepends=True)
    (i,) = [i for i, line in enumerate(lines) if line.startswith("    tags: {")]
    lines[i] = "    tags: {" + ", ".join(f"{k}: {v}" for k, v in _tags(n).items()) + "}\n"
    path.write_text("".join(lines))


def test_tencent_spec_takes_the_nodes_ten_tags_less_gpufleets_two_through_the_cli(project):
    import json

    stack = "tencentcloud-ap-guangzhou-prod"
    _with_tags(project, stack, 9)
    result = _preview(stack)
    out = result.stdout + result.stderr
    assert result.returncode == 2, out
    assert f"stacks/Pulumi.{stack}.yaml: fleet.tags: 9 given;" in out and "keep at most 8" in out
    assert "CreateLaunchConfiguration:InstanceTags" in out and "Traceback" not in out
    _with_tags(project, stack, 8)
    result = _preview(stack)
    assert result.returncode == 0, result.stdout + result.stderr
    sent = json.loads(result.stdout)["resources"]
    counts = {len(r["inputs"]["instanceTags"]) for r in sent if r["type"] == TC_CONFIG}
    assert counts == {10}


# --- A2: Alibaba SLB HealthCheckURI. "The URI must be 1 to 80 characters in length, and can contain letters, digits,
# and the following special characters: `-/.%?#&`. The URI must start with a forward slash (`/`), but cannot be a single
# forward slash (`/`)." (alibabacloud_slb20140515 3.3.31, CreateLoadBalancerHTTPSListener / HTTPListener)

ALI_LISTENER = "alicloud:slb/listener:Listener"


@pytest.mark.parametrize(
    "uri, refused",
    [
        ("/health", False),
        ("/v1/health.json?probe&x%20#top", False),
        ("/health?probe=1", True),  # = is not in the set
        ("/" + "a" * 79, False),  # 80 characters
        ("/", True),  # "cannot be a single forward slash"
        ("/health_z", True),  # _ is not in the set
        ("/health~z", True),
        ("health", True),  # "must start with a forward slash"
        ("/" + "a" * 80, True),
    ],
)
def test_alibaba_health_check_uri_takes_the_documented_characters(uri, refused):
    found = [v for v in _violations("alicloud", ALI_LISTENER, health_check_uri=uri) if v.rule.kind == "pattern"]
    assert bool(found) == refused, found
    if refused:
        assert "alibabacloud_slb20140515==3.3.31" in found[0].rule.source and "HealthCheckURI" in found[0].rule.source
        assert found[0].spec_field == "fleet.load_balancer.health_check.path"


def _with_health_path(project: Path, stack: str, path_value: str) -> None:
    path = project / "stacks" / f"Pulumi.{stack}.yaml"
    text = path.read_text()
    assert "path: /health," in text
    path.write_text(text.replace("path: /health,", f"path: {path_value},"))


@pytest.mark.parametrize("path_value", ["/", "/health_z"])
def test_alibaba_spec_refuses_a_health_check_path_the_listener_refuses_through_the_cli(project, path_value):
    stack = "alicloud-cn-hangzhou-prod"
    _with_health_path(project, stack, path_value)
    result = _preview(stack)
    out = result.stdout + result.stderr
    assert result.returncode == 2, out
    assert f"stacks/Pulumi.{stack}.yaml: fleet.load_balancer.health_check.path: '{path_value}' does not match" in out
    assert "HealthCheckURI" in out and "not / alone" in out and "Traceback" not in out


# --- A3, A4: the texts the Tencent program writes. Monitor CreateAlarmPolicy Remark "备注，不超过100字符，仅支持中英文、
# 数字、下划线、-"; SCF CreateFunction Description "最大支持 1000 个英文字母、数字、空格、逗号、换行符和英文句号，支持中文".

TC_ALARM = "tencentcloud:Monitor/alarmPolicy:AlarmPolicy"
TC_SCF = "tencentcloud:Scf/function:Function"


@pytest.mark.parametrize(
    "type_, arg, value, refused",
    [
        (TC_ALARM, "remark", "GPU hardware health: replace or reboot the node", True),  # sent before: spaces, :
        (TC_ALARM, "remark", "GPU utilisation and memory above the spec's thresholds", True),
        (TC_ALARM, "remark", "GPU-hardware_health-2", False),
        (TC_ALARM, "remark", "GPU告警-2", False),
        (TC_SCF, "description", "gpufleet: scale the AS group on vLLM's queue / KV cache read from the nodes", True),
        (TC_SCF, "description", "Scale, then wait.\nThe nodes 2 扩缩容", False),
        (TC_SCF, "description", "queue-or-kv", True),  # - is not in the set
    ],
)
def test_tencent_remark_and_description_take_the_documented_characters(type_, arg, value, refused):
    found = [v for v in _violations("tencentcloud", type_, **{arg: value}) if v.rule.kind == "pattern"]
    assert bool(found) == refused, found
    if refused:
        assert "tccli==3.1.189.1" in found[0].rule.source


def test_the_shipped_tencent_stacks_send_remarks_and_descriptions_in_the_documented_characters():
    from gpufleet.preview import preview_stack
    from gpufleet.stacks import loader

    root = Path(__file__).resolve().parents[2]
    seen = 0
    for stack in (s for s in loader.stack_names(root) if s.startswith("tencentcloud-")):
        resources = preview_stack(stack, root).resources
        texts = [r for r in resources if r["type"] in (TC_ALARM, TC_SCF)]
        assert contract.check_inventory(texts, NOW, "tencentcloud") == []
        seen += sum(1 for r in texts if r["inputs"].get("remark") or r["inputs"].get("description"))
    assert seen >= 6


# --- B2: Alibaba ESS CreateScheduledTask ScheduledTaskName "must be 2 to 64 characters in length" (the provider page's
# 2-40 is validated nowhere in its schema); a 41-64 character name was cut to 40 with a digest.


def test_alibaba_scheduled_task_names_take_the_apis_64_characters():
    import re

    import yaml

    from gpufleet.components.alicloud import rules, scaling

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "system"))
    import speclib

    text = speclib.alibaba_member("alibabacloud_ess20220222/CreateScheduledTask:ScheduledTaskName").document
    low, high = map(int, re.search(r"must be (\d+) to (\d+) characters in length", text).groups())
    assert (low, high) == (2, 64) == (2, rules.SCHEDULED_TASK_NAME_MAX)
    task = "alicloud:ess/scheduledTask:ScheduledTask"
    assert _violations("alicloud", task, scheduled_task_name="a" * 64) == []
    (v,) = _violations("alicloud", task, scheduled_task_name="a" * 65)
    assert "outside 2-64" in v.message and "CreateScheduledTask:ScheduledTaskName" in v.rule.source
    scopes = yaml.safe_load((Path(rules.__file__).parent / "name_scopes.yaml").read_text())
    (entry,) = [n for n in scopes["names"] if n["type"] == task]
    assert entry["max"] == high
    from gpufleet import validation

    fleet = validation.load_fleet("alicloud-cn-hangzhou-prod", Path(__file__).resolve().parents[2], sizing=False)
    name = scaling.scheduled_task_name(fleet, "business-day-and-eve")
    assert name == f"{name.rsplit('-business-day-and-eve', 1)[0]}-business-day-and-eve" and 40 < len(name) <= 64


# --- B3: Alibaba ESS RecurrenceEndTime. The API reference: "in the YYYY-MM-DDThh:mmZ format"; the provider's acceptance
# tests (run against the real API) send Format("2006-01-02T15:04Z"); only the provider page says hh:mm:ssZ.


def test_alibaba_recurrence_end_time_is_sent_and_checked_in_the_apis_format():
    from gpufleet import validation
    from gpufleet.components.alicloud import scaling

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "system"))
    import speclib

    for action in ("CreateScheduledTask", "ModifyScheduledTask"):
        text = speclib.alibaba_member(f"alibabacloud_ess20220222/{action}:RecurrenceEndTime").document
        assert "in the YYYY-MM-DDThh:mmZ format" in text, text
    fleet = validation.load_fleet("alicloud-cn-hangzhou-prod", Path(__file__).resolve().parents[2], sizing=False)
    sent = [a["recurrence_end_time"] for a in scaling.schedule_args(fleet, NOW)]
    assert sent and all(datetime.strptime(v, "%Y-%m-%dT%H:%MZ") for v in sent), sent  # 2027-11-30T00:00Z, no seconds
    task = "alicloud:ess/scheduledTask:ScheduledTask"
    assert _violations("alicloud", task, recurrence_end_time="2027-06-01T00:00Z") == []
    (v,) = _violations("alicloud", task, recurrence_end_time="2027-06-01T00:00:00Z")
    assert "not in the documented format YYYY-MM-DDThh:mmZ" in v.message
    assert "CreateScheduledTask RecurrenceEndTime" in v.rule.source and "2006-01-02T15:04Z" in v.rule.source


# --- C4: values only the program sets, held to the member's text where the provider's schema is looser.


@pytest.mark.parametrize(
    "cloud, type_, inputs, bad, member",
    [
        # Alibaba HTTPS/HTTP listener: Scheduler "Valid values: wrr, rr" (the provider also takes wlc, sch, tch, qch)
        ("alicloud", ALI_LISTENER, {"protocol": "http", "scheduler": "wrr"}, {"scheduler": "wlc"}, "Scheduler"),
        # HealthCheckConnectPort "Valid values: 1 to 65535" (the provider: 0-65535)
        ("alicloud", ALI_LISTENER, {"health_check_connect_port": 8000}, {"health_check_connect_port": 0}, "Port"),
        # HealthyThreshold / UnhealthyThreshold "Valid values: 2 to 10" (the provider: 1-10)
        ("alicloud", ALI_LISTENER, {"healthy_threshold": 2}, {"healthy_threshold": 1}, "HealthyThreshold"),
        ("alicloud", ALI_LISTENER, {"unhealthy_threshold": 3}, {"unhealthy_threshold": 1}, "UnhealthyThreshold"),
        # CreateNatGateway NatType "Valid values: Enhanced", InternetChargeType "Valid values: PayByLcu"
        ("alicloud", "alicloud:vpc/natGateway:NatGateway", {"nat_type": "Enhanced"}, {"nat_type": "Normal"}, "NatType"),
        (
            "alicloud",
            "alicloud:vpc/natGateway:NatGateway",
            {"internet_charge_type": "PayByLcu"},
            {"internet_charge_type": "PayBySpec"},
            "InternetChargeType",
        ),
        # AssociateEipAddress InstanceType "Valid values: Nat, SlbInstance, EcsInstance, NetworkInterface, HaVip, IpAddress"
        ("alicloud", "alicloud:ecs/eipAssociation:EipAssociation", {"instance_type": "Nat"}, {"instance_type": "NAT"}, "Type"),
        # Tencent CreateNatGateway MaxConcurrentConnection "1000000、3000000、10000000" (2000000 is the standard NAT's own)
        (
            "tencentcloud",
            "tencentcloud:Nat/gateway:Gateway",
            {"nat_product_version": 1, "max_concurrent": 1000000},
            {"max_concurrent": 2000000},
            "MaxConcurrentConnection",
        ),
        # SCF CreateFunction MemorySize "128MB-3072MB，并且以 128MB 为阶梯"
        ("tencentcloud", TC_SCF, {"mem_size": 128}, {"mem_size": 200}, "MemorySize"),
    ],
)
def test_program_set_values_are_held_to_the_member_text(cloud, type_, inputs, bad, member):
    assert _violations(cloud, type_, **inputs) == []
    found = [v for v in _violations(cloud, type_, **{**inputs, **bad}) if "==" in v.rule.source]
    assert found and member in found[0].rule.source, found


def test_the_standard_nat_keeps_its_2000000():
    assert _violations("tencentcloud", "tencentcloud:Nat/gateway:Gateway", nat_product_version=2, max_concurrent=2000000) == []
