"""Issue 18, the program side: what drives scaling on each cloud, spot over an on-demand base, draining, the SCF scaler.

Every check runs the real program under the mock engine (gpufleet.preview) and reads what it declared.
"""

from __future__ import annotations

import base64
import copy
import json
import re
import zipfile
from decimal import Decimal
from io import BytesIO
from pathlib import Path

import pytest
import yaml

from gpufleet import preview, validation
from gpufleet.components.alicloud import rules as ali_rules
from gpufleet.components.alicloud import scaling as ali_scaling
from gpufleet.components.tencentcloud import autoscaler
from gpufleet.components.tencentcloud import rules as tc_rules
from gpufleet.errors import UserError
from gpufleet.images import scaling_signals
from gpufleet.stacks import loader

ROOT = Path(__file__).resolve().parents[1]
ALI, TC = "alicloud-cn-hangzhou-prod", "tencentcloud-ap-guangzhou-prod"


def _raw(stack: str, **changes) -> dict:
    _, config = loader.read_stack_config(stack, ROOT)
    raw = copy.deepcopy(config[loader.CONFIG_KEY])
    for path, value in changes.items():
        *head, last = path.split("__")
        node = raw
        for part in head:
            node = node.setdefault(part, {})
        node[last] = value
    return raw


def _inv(stack: str, **changes):
    raw = _raw(stack, **changes)
    return raw, preview.preview_spec(raw, stack)


def of(inv, token: str) -> list[dict]:
    return [r["inputs"] for r in inv.resources if r["type"] == token]


# --- the signal names have one home ---------------------------------------------------------------------


def test_metric_names_are_written_only_in_the_data_file():
    sig = scaling_signals.load()
    names = set(sig.names.values())
    hits = []
    for path in (ROOT / "src" / "gpufleet" / "components").rglob("*.py"):
        text = path.read_text()
        hits += [f"{path.relative_to(ROOT)}: {n}" for n in names if n in text]
    assert hits == []


def test_the_dimension_key_is_one_ess_accepts():
    assert scaling_signals.load().dimension not in ali_rules.ALARM_RESERVED_DIMENSIONS
    raw = yaml.safe_load(scaling_signals.PATH.read_text())
    assert raw["period_s"] in (60, 120, 300, 900)  # ess.Alarm period values (rules.py)


# --- Alibaba: ESS event-triggered tasks on the custom metrics -------------------------------------------


def test_alibaba_prod_scales_on_the_queue_in_the_declared_metrics_group():
    raw, inv = _inv(ALI)
    fleet = validation.validate(raw, stack=ALI, file="x", sizing=False)
    a, sig = fleet.spec.autoscaling, scaling_signals.load()
    assert a.metric == "queue"
    alarms = {x["name"]: x for x in of(inv, "alicloud:ess/alarm:Alarm")}
    out, in_ = alarms["llm-cn-hangzhou-prod-asg-scale-out"], alarms["llm-cn-hangzhou-prod-asg-scale-in"]
    (group,) = [r for r in inv.resources if r["type"] == "alicloud:cms/monitorGroup:MonitorGroup"]
    for alarm in (out, in_):
        assert alarm["metricType"] == "custom"
        assert alarm["cloudMonitorGroupId"] == f"{group['name']}_id"
        assert alarm["dimensions"] == {sig.dimension: "llm-prod-asg-group_id"}
    assert out["metricName"] == sig.name("queue") and out["comparisonOperator"] == ">"
    assert float(out["threshold"]) == a.queue.scale_out_above and out["evaluationCount"] == a.evaluation_minutes
    assert out["period"] == sig.period_s
    # scale in only when both are low
    assert in_["expressionsLogicOperator"] == "&&" and in_["evaluationCount"] == a.scale_in_evaluation_minutes
    assert {(e["metricName"], e["threshold"]) for e in in_["expressions"]} == {
        (sig.name("queue"), a.queue.scale_in_below),
        (sig.name("kv_cache"), a.kv_cache.scale_in_below),
    }


def test_alibaba_kv_cache_metric_scales_out_on_kv_usage():
    raw, inv = _inv(ALI, autoscaling__metric="kv_cache")
    (out,) = [x for x in of(inv, "alicloud:ess/alarm:Alarm") if x["name"].endswith("scale-out")]
    assert out["metricName"] == scaling_signals.load().name("kv_cache") and float(out["threshold"]) == 85


def test_alibaba_user_data_carries_the_group_ids_and_no_secret():
    _, inv = _inv(ALI)
    (config,) = of(inv, "alicloud:ess/scalingConfiguration:ScalingConfiguration")
    text = base64.b64decode(config["userData"]).decode()
    assert "GPUFLEET_METRICS_GROUP=llm-prod-alarms-metrics_id\n" in text
    assert "GPUFLEET_SCALING_GROUP=llm-prod-asg-group_id\n" in text
    assert "API_KEY_SECRET=gpufleet-prod-vllm-api-key\n" in text  # the secret's name; its value is fetched at boot


@pytest.mark.parametrize("stack", [ALI, TC])
def test_cpu_utilization_still_works(stack):
    raw, inv = _inv(stack, autoscaling__metric="cpu_utilization")
    if stack == ALI:
        alarms = of(inv, "alicloud:ess/alarm:Alarm")
        assert {x["metricName"] for x in alarms} == {"CpuUtilization"} and {x["metricType"] for x in alarms} == {"system"}
        assert {float(x["threshold"]) for x in alarms} == {70, 20}
    else:
        policies = of(inv, "tencentcloud:As/scalingPolicy:ScalingPolicy")
        assert {(p["comparisonOperator"], p["threshold"]) for p in policies} == {
            ("GREATER_THAN_OR_EQUAL_TO", 70),
            ("LESS_THAN_OR_EQUAL_TO", 20),
        }
        assert not of(inv, "tencentcloud:Scf/function:Function")


def test_alibaba_scale_in_drains_through_oos_with_a_role_scoped_to_the_group():
    raw, inv = _inv(ALI)
    (hook,) = [h for h in of(inv, "alicloud:ess/lifecycleHook:LifecycleHook") if h["lifecycleTransition"] == "SCALE_IN"]
    assert hook["heartbeatTimeout"] == raw["autoscaling"]["drain_timeout_s"]
    assert re.fullmatch(r"acs:oos:cn-hangzhou:<accountId>:template/ACS-ESS-LifeCycleRunCommand", hook["notificationArn"])
    meta = json.loads(hook["notificationMetadata"])
    assert meta["commandContent"] == ali_rules.DRAIN_COMMAND and meta["OOSAssumeRole"] == "llm-cn-hangzhou-prod-asg-drain"
    assert meta["timeout"] == hook["heartbeatTimeout"] and meta["lifecycleActionResult"] == "CONTINUE"
    (role,) = [r for r in of(inv, "alicloud:ram/role:Role") if r["roleName"] == "llm-cn-hangzhou-prod-asg-drain"]
    assert json.loads(role["assumeRolePolicyDocument"])["Statement"][0]["Principal"] == {"Service": ["oos.aliyuncs.com"]}
    (policy,) = [p for p in of(inv, "alicloud:ram/policy:Policy") if p["policyName"] == "llm-cn-hangzhou-prod-asg-drain"]
    ess = [s for s in json.loads(policy["policyDocument"])["Statement"] if "ess:CompleteLifecycleAction" in s["Action"]]
    assert ess[0]["Resource"] == ["acs:ess:cn-hangzhou:*:scalinggroup/llm-prod-asg-group_id"]


# --- spot with an on-demand base -------------------------------------------------------------------------


@pytest.mark.parametrize("stack", [ALI, TC])
def test_prod_spot_without_a_base_is_refused_with_the_fix(stack):
    with pytest.raises(UserError) as err:
        validation.validate(_raw(stack, billing={"model": "spot"}), stack=stack, file=f"stacks/Pulumi.{stack}.yaml")
    text = str(err.value)
    assert f"stacks/Pulumi.{stack}.yaml: fleet.billing.on_demand_base: prod with spot needs at least replicas.min (2)" in text
    assert "set billing.on_demand_base: 2" in text


def test_base_and_share_outside_spot_are_refused():
    with pytest.raises(UserError) as err:
        validation.validate(_raw(ALI, billing={"model": "payg", "on_demand_base": 2}), stack=ALI, file="f")
    assert "apply only with model: spot" in str(err.value)


def test_tencent_refuses_an_on_demand_share_above_the_base():
    raw = _raw(TC, billing={"model": "spot", "on_demand_base": 2, "on_demand_above_base_percent": 50})
    with pytest.raises(UserError) as err:
        validation.validate(raw, stack=TC, file="f")
    assert "fleet.billing.on_demand_above_base_percent" in str(err.value) and "0.2.3" in str(err.value)


def test_every_spot_pool_type_fits_the_model_and_is_priced():
    from gpufleet.cost import catalog
    from gpufleet.sizing import checks, fit, models
    from gpufleet.stacks.catalog import gpu_kinds, instance_type

    raw = _raw(ALI, billing={"model": "spot", "on_demand_base": 2})
    fleet = validation.validate(raw, stack=ALI, file="x", sizing=False)
    types = ali_scaling.instance_types(fleet)
    assert len(types) > 1 and types[0] == fleet.instance_type.type
    prices = catalog.load("alicloud", fleet.spec.region)
    model = models.lookup(fleet.spec.model.name)
    for name in types:
        t = instance_type("alicloud", name)
        assert (t.gpu, t.gpus) == (fleet.instance_type.gpu, fleet.instance_type.gpus)
        assert prices.get(f"instance/{name}", "payg").price is not None
        r = fit.fit(model, gpu_kinds()[t.gpu], checks.serving_of(fleet.spec), gpu_kinds(), checks.sold_sizes("alicloud"))
        assert r.fits, (name, r.problems)


def test_alibaba_prices_the_base_at_payg_and_the_rest_at_spot():
    from gpufleet.components.alicloud.pricing import _ali_spot_mix

    payg, spot, _ = _ali_spot_mix({"onDemandBaseCapacity": 2, "onDemandPercentageAboveBaseCapacity": 25}, Decimal(6))
    assert (payg, spot) == (Decimal(3), Decimal(3))  # 2 base + 25% of the 4 above it
    payg, spot, _ = _ali_spot_mix({"onDemandBaseCapacity": 2, "onDemandPercentageAboveBaseCapacity": 0}, Decimal("1.5"))
    assert (payg, spot) == (Decimal("1.5"), Decimal(0))  # fewer nodes than the base: all on demand


@pytest.mark.parametrize("stack, billing", [(ALI, {"on_demand_above_base_percent": 50}), (TC, {})])
def test_cost_of_a_spot_prod_stack_prices_the_mix(stack, billing):
    from gpufleet.cost import estimate, usage

    raw = _raw(stack, billing={"model": "spot", "on_demand_base": 2, **billing})
    fleet = validation.validate(raw, stack=stack, file="x", sizing=False)
    inv = preview.preview_spec(raw, stack)
    e = estimate.price_inventory(stack, fleet.spec, fleet.instance_type.type, inv.resources, usage.Usage())
    nodes = [line for line in e.lines if line.component.startswith("autoscaled node")]
    by_billing: dict[str, Decimal] = {}
    for line in nodes:
        by_billing[line.billing] = by_billing.get(line.billing, Decimal(0)) + line.monthly_quantity
    average = sum(by_billing.values()) / 730
    base = Decimal(2)
    above = average - base
    expected_payg = base + above * Decimal(billing.get("on_demand_above_base_percent", 0)) / 100
    assert by_billing["payg"] / 730 == pytest.approx(expected_payg, abs=Decimal("0.001"))
    assert by_billing["spot"] / 730 == pytest.approx(average - expected_payg, abs=Decimal("0.001"))


# --- Tencent: the SCF scaler ------------------------------------------------------------------------------


def test_tencent_prod_scales_on_the_queue_through_the_scf_scaler():
    raw, inv = _inv(TC)
    fleet = validation.validate(raw, stack=TC, file="x", sizing=False)
    (fn,) = of(inv, "tencentcloud:Scf/function:Function")
    assert fn["runtime"] == tc_rules.SCF_RUNTIME and fn["handler"] == "index.main_handler"
    assert fn["enablePublicNet"] is False and fn["vpcId"] == "llm-prod-net-vpc_id" and fn["subnetId"]
    assert fn["triggers"] == [{"name": "every-minute", "type": "timer", "triggerDesc": "0 */1 * * * * *"}]
    assert re.fullmatch(r"~/\.cache/gpufleet/scf/scaler-[0-9a-f]{16}\.zip", fn["zipFile"])
    assert fn["environment"] == {
        "GPUFLEET_REGION": "ap-guangzhou",
        "GPUFLEET_SCALING_GROUP": "llm-prod-asg-group_id",
        "GPUFLEET_SCALE_OUT_POLICY": "llm-prod-asg-scale-out_id",
        "GPUFLEET_SCALE_IN_POLICY": "llm-prod-asg-scale-in_id",
        "GPUFLEET_METRIC": "queue",
        "GPUFLEET_SCALE_OUT_ABOVE": f"{fleet.spec.autoscaling.queue.scale_out_above:g}",
        "GPUFLEET_SCALE_IN_BELOW": f"{fleet.spec.autoscaling.queue.scale_in_below:g}",
        "GPUFLEET_METRICS_PORT": str(fleet.spec.serving.gateway.metrics_port),
        "GPUFLEET_METRICS_PATH": "/metrics/vllm",
    }
    # the policies it executes can never fire on their own
    policies = {p["policyName"]: p for p in of(inv, "tencentcloud:As/scalingPolicy:ScalingPolicy")}
    assert (
        policies["llm-ap-guangzhou-prod-asg-scale-out"]["comparisonOperator"],
        policies["llm-ap-guangzhou-prod-asg-scale-out"]["threshold"],
    ) == (
        "GREATER_THAN",
        100,
    )
    # scale-in too: "CPU above 100%" (AS takes a CPU threshold of 1-100 only, so "below 0%" was refused at create)
    assert (
        policies["llm-ap-guangzhou-prod-asg-scale-in"]["comparisonOperator"],
        policies["llm-ap-guangzhou-prod-asg-scale-in"]["threshold"],
    ) == (
        "GREATER_THAN",
        100,
    )


def test_tencent_scaler_role_may_only_execute_and_read_this_fleets_groups():
    _, inv = _inv(TC)
    (role,) = [r for r in of(inv, "tencentcloud:Cam/role:Role") if r["name"] == "llm-ap-guangzhou-prod-scaler"]
    assert json.loads(role["document"])["statement"][0]["principal"] == {"service": ["scf.qcloud.com"]}
    (policy,) = [p for p in of(inv, "tencentcloud:Cam/policy:Policy") if p["name"] == "llm-ap-guangzhou-prod-scaler-role"]
    statements = json.loads(policy["document"])["statement"]
    actions = sorted(a for s in statements for a in s["action"])
    assert actions == ["name/as:DescribeAutoScalingInstances", "name/as:ExecuteScalingPolicy", "name/cvm:DescribeInstances"]
    for s in statements:
        if s["action"][0].startswith("name/as:"):
            # CAM's documented Auto Scaling resource: qcs::as:$region:$account:auto-scaling-group/$autoScalingGroupId
            assert s["resource"] == ["qcs::as:ap-guangzhou:uin/<ownerUin>:auto-scaling-group/llm-prod-asg-group_id"]
    # exactly the calls the scaler's code makes, no more, no fewer
    source = (Path(autoscaler.__file__).parent / "scaler" / "index.py").read_text()
    called = {f"name/{svc}:{action}" for svc, action in re.findall(r'api\.call\(\s*"(\w+)",\s*"(\w+)"', source)}
    assert called == set(actions)


def test_tencent_scaler_group_resource_matches_cams_documented_format():
    """CAM's Auto Scaling page writes the group as qcs::as:$region:$account:auto-scaling-group/$autoScalingGroupId,
    $account = uin/<uin> (tencentcloud.com/document/product/598/57063); the old autoscalinggroup/<id> matched nothing."""
    documented = re.compile(r"^qcs::as:(?P<region>[a-z0-9-]+):uin/(?P<uin>[^:]+):auto-scaling-group/(?P<id>.+)$")
    m = documented.match(autoscaler.group_resource("ap-guangzhou", "100000000001", "asg-abc123"))
    assert m and m.group("id") == "asg-abc123" and m.group("uin") == "100000000001"


def test_tencent_node_group_admits_the_scaler_subnet_on_the_metrics_port_only():
    raw, inv = _inv(TC)
    fleet = validation.validate(raw, stack=TC, file="x", sizing=False)
    (rules,) = [
        r["ingresses"] for r in of(inv, "tencentcloud:Security/groupRuleSet:GroupRuleSet") if "llm-prod-sec-nodes" in str(r)
    ]
    scaler = [r for r in rules if r["cidrBlock"] == fleet.subnets[0] and r["action"] == "ACCEPT"]
    assert [r["port"] for r in scaler] == [str(fleet.spec.serving.gateway.metrics_port)]


def test_tencent_drains_through_tat_on_every_group():
    raw, inv = _inv(TC, billing={"model": "spot", "on_demand_base": 2})
    (command,) = of(inv, "tencentcloud:Tat/command:Command")
    assert command["content"] == tc_rules.DRAIN_COMMAND and command["timeout"] == raw["autoscaling"]["drain_timeout_s"]
    hooks = of(inv, "tencentcloud:As/lifecycleHook:LifecycleHook")
    assert {h["scalingGroupId"] for h in hooks} == {"llm-prod-asg-group_id", "llm-prod-asg-base-group_id"}
    for h in hooks:
        assert h["lifecycleTransition"] == "INSTANCE_TERMINATING" and h["lifecycleCommand"] == {
            "commandId": "llm-prod-asg-drain_id"
        }
        assert h["heartbeatTimeout"] == raw["autoscaling"]["drain_timeout_s"]


def test_scaler_zip_is_reproducible_and_named_after_its_content(tmp_path, monkeypatch):
    """A preview names the code package and writes nothing (it wrote ~/.cache/gpufleet/scf/scaler-<hash>.zip on every
    Tencent preview, check and rollout command); a deploy writes it there, atomically."""
    import hashlib

    monkeypatch.setenv("HOME", str(tmp_path))
    data = autoscaler.scaler_zip()
    assert data == autoscaler.scaler_zip()
    assert "index.py" in zipfile.ZipFile(BytesIO(data)).namelist()
    _, inv = _inv(TC)
    (fn,) = of(inv, "tencentcloud:Scf/function:Function")
    assert (
        fn["zipFile"] == autoscaler.zip_path(data) == f"~/.cache/gpufleet/scf/scaler-{hashlib.sha256(data).hexdigest()[:16]}.zip"
    )
    assert list(tmp_path.iterdir()) == []  # the provider reads the file only when it creates or updates the function
    assert autoscaler.write_zip() == fn["zipFile"]  # what `pulumi up` does
    folder = tmp_path / ".cache" / "gpufleet" / "scf"
    assert [p.name for p in folder.iterdir()] == [Path(fn["zipFile"]).name]  # no temporary file left
    assert Path(fn["zipFile"]).expanduser().read_bytes() == data
    Path(fn["zipFile"]).expanduser().write_bytes(data[:100])  # cut short (a crash of an older gpufleet): written again
    assert autoscaler.write_zip() == fn["zipFile"] and Path(fn["zipFile"]).expanduser().read_bytes() == data


def test_only_a_deploy_writes_the_scaler_zip(tmp_path, monkeypatch):
    import pulumi

    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setattr(pulumi.runtime, "is_dry_run", lambda: True)
    path = autoscaler.code_file()
    assert list(tmp_path.iterdir()) == []
    monkeypatch.setattr(pulumi.runtime, "is_dry_run", lambda: False)
    assert autoscaler.code_file() == path and Path(path).expanduser().read_bytes() == autoscaler.scaler_zip()


def test_an_offline_tencent_preview_needs_no_writable_home(tmp_path, monkeypatch, capsys):
    """HOME pointing at a file (or a read-only one, common in CI containers) was a NotADirectoryError traceback of
    every Tencent preview, which wrote the scaler's zip into ~/.cache."""
    from inputs.inputs_helpers import run_cli

    home = tmp_path / "home"
    home.write_text("a file\n")
    monkeypatch.setenv("HOME", str(home))
    r = run_cli(["preview", "--stack", TC, "--json"], capsys)
    assert r.code == 0 and "Traceback" not in r.text, r.text
    assert home.read_text() == "a file\n" and sorted(p.name for p in tmp_path.iterdir()) == ["home"]


def test_a_deploy_that_cannot_write_the_scaler_zip_names_the_folder_and_the_fix(tmp_path, monkeypatch):
    """`pulumi up` of a Tencent stack writes the zip the provider reads: a folder it cannot make is a message naming
    the folder and the variable to set, not a traceback."""
    blocker = tmp_path / "file"
    blocker.write_text("x\n")
    monkeypatch.setenv("HOME", str(blocker))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "elsewhere"))  # not followed: the path is the function's input
    folder = blocker / ".cache" / "gpufleet" / "scf"
    with pytest.raises(UserError) as exc:
        autoscaler.write_zip()
    (problem,) = exc.value.problems
    said = str(problem)
    assert said.startswith(f"HOME: {folder}: cannot create or read this folder (Not a directory), where `pulumi up` "), said
    assert "with HOME set to a folder you can write in" in said, said
    assert not (tmp_path / "elsewhere").exists()


def test_a_full_disk_while_writing_the_scaler_zip_names_the_file(tmp_path, monkeypatch):
    import errno

    from gpufleet import files

    def full_disk(folder, name, data, mode):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(files, "_write_temp", full_disk)
    monkeypatch.setenv("HOME", str(tmp_path))
    with pytest.raises(UserError) as exc:
        autoscaler.write_zip()
    said = str(exc.value)
    assert said.startswith(f"HOME: {tmp_path}/.cache/gpufleet/scf/scaler-") and "No space left on device" in said, said
    assert list((tmp_path / ".cache" / "gpufleet" / "scf").iterdir()) == []


# --- preview notes ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("stack", [ALI, TC])
def test_preview_notes_compute_the_reaction_time_from_the_spec(stack):
    from gpufleet import registry

    raw = _raw(stack, autoscaling__evaluation_minutes=3, autoscaling__cooldown_s=420)
    fleet = validation.validate(raw, stack=stack, file="x", sizing=False)
    (note,) = [n for n in registry.notes(fleet.spec.cloud, fleet.spec) if n.startswith("scaling:")]
    assert "cooldown_s 420 s" in note
    if stack == ALI:
        assert "for 3 x 60 s = 180 s" in note and "next report: 240 s, and CloudMonitor's report lag" in note
        # before the first data point the custom-metric tasks are INSUFFICIENT_DATA: ESS runs neither
        assert "before the first data point" in note and "INSUFFICIENT_DATA" in note
    else:
        assert "each 60 s (timer)" in note and "within 60 s" in note
        assert "before the first reading (no node answers yet) it holds" in note
    raw = _raw(stack, autoscaling__metric="cpu_utilization", autoscaling__evaluation_minutes=4)
    fleet = validation.validate(raw, stack=stack, file="x", sizing=False)
    (note,) = [n for n in registry.notes(fleet.spec.cloud, fleet.spec) if n.startswith("scaling:")]
    assert "4 x 60 s = 240 s" in note and "CPU" in note.upper()


def test_the_handler_imports_under_the_declared_runtime():
    """The function's runtime (rules.SCF_RUNTIME, Python3.9) runs the handler: import it with that Python."""
    import os
    import shutil
    import subprocess

    version = tc_rules.SCF_RUNTIME.removeprefix("Python")
    exe = shutil.which(f"python{version}")
    if exe is None:
        pytest.skip(f"no python{version} on this machine")
    env = dict(os.environ)
    code = f"import sys; sys.path.insert(0, {str(autoscaler.SCALER)!r}); import index; print(sys.version_info[:2])"
    r = subprocess.run([exe, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    if r.returncode != 0 and "pyenv" in r.stderr:  # a pyenv shim without that version selected: select it
        versions = subprocess.run(["pyenv", "versions", "--bare"], capture_output=True, text=True).stdout.split()
        pick = next((v for v in versions if v.startswith(version + ".")), None)
        if pick is None:
            pytest.skip(f"no python{version} on this machine")
        r = subprocess.run([exe, "-c", code], capture_output=True, text=True, env={**env, "PYENV_VERSION": pick}, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == f"({version.replace('.', ', ')})"


def test_a_hook_shorter_than_the_nodes_drain_is_refused():
    raw = _raw(ALI, autoscaling__drain_timeout_s=600)  # 5 x 3 s + 600 s read timeout = 615 s
    with pytest.raises(UserError) as err:
        validation.validate(raw, stack=ALI, file="f")
    assert "f: fleet.autoscaling.drain_timeout_s: 600 s is shorter than a node's drain" in str(err.value)
    assert "set it to at least 615" in str(err.value)
