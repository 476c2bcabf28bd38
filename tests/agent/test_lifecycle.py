"""The node's part of Alibaba's scale-out and scale-in sequences (docs/first-hour.md), run for real: the node agent
(`python3 -I node_agent.py ready` / `drain --complete`, as the image's units run it) ends its lifecycle wait with ESS
CompleteLifecycleAction once vLLM is healthy (or once drained), signed like the CloudMonitor calls, against a
signature-checking ESS stand-in (ess_fakes.py) that also enforces the node role's RAM policy as the program declares
it. Before, nothing called CompleteLifecycleAction: every new node waited the whole grace period."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest
from agent_fakes import FakeMetadata, FakeVllm
from ess_fakes import FakeEss, signature
from test_agent_signatures import DOC_PARAMS, DOC_SIGNATURE
from test_node_agent import ROLE
from test_node_agent import agent as run_agent
from test_node_agent import setup as agent_setup

from gpufleet import preview

ROOT = Path(__file__).resolve().parents[2]
PROD = "alicloud-cn-hangzhou-prod"
REGION = "cn-hangzhou"


@pytest.fixture(scope="module")
def declared():
    """(the node role's RAM statements, the scaling group id) as the Alibaba prod program declares them."""
    inv = preview.preview_stack(PROD, ROOT)
    (policy,) = [
        r["inputs"] for r in inv.resources if r["type"] == "alicloud:ram/policy:Policy" and r["name"].endswith("-role-node")
    ]
    (group,) = [r for r in inv.resources if r["type"] == "alicloud:ess/scalingGroup:ScalingGroup"]
    return json.loads(policy["policyDocument"])["Statement"], f"{group['name']}_id"


@pytest.fixture
def servers():
    made = []

    def make(cls, *a, **kw):
        made.append(cls(*a, **kw))
        return made[-1]

    yield make
    for s in made:
        s.close()


def _config(tmp_path, vllm, md, ess, group, **env):
    path = agent_setup(tmp_path, "alicloud", vllm, md, GPUFLEET_SCALING_GROUP=group, GPUFLEET_REGION=REGION, **env)
    cfg = json.loads(path.read_text())
    assert cfg["clouds"]["alicloud"]["lifecycle_api"] == "https://ess.aliyuncs.com/"
    cfg["clouds"]["alicloud"]["lifecycle_api"] = ess.url + "/"
    cfg.update(ready_poll_s=0.2, lifecycle_retry_s=0.2)
    path.write_text(json.dumps(cfg))
    return path


def _loading_node(servers, declared):
    """(vllm, metadata, ess, group): a node still loading (vLLM not healthy) whose scale-out wait is pending."""
    statements, group = declared
    vllm = servers(FakeVllm)
    vllm.healthy = False
    md = servers(FakeMetadata, ROLE, instance_id="i-bp1new")
    ess = servers(FakeEss, md.keys, REGION, statements)
    _one_wait(ess, group)
    return vllm, md, ess, group


def _after_a_second(change) -> list[float]:
    """Run `change` a second from now, in a thread; the list gets the moment it ran."""
    at: list[float] = []

    def later():
        time.sleep(1.0)
        at.append(time.monotonic())
        change()

    threading.Thread(target=later, daemon=True).start()
    return at


def _one_wait(ess, group: str) -> None:
    """The ESS stand-in with one scale-out activity of `group` holding i-bp1new in a pending wait."""
    ess.activities = {"asa-1": group}
    ess.actions = [{"activity": "asa-1", "hook": "ash-loading", "token": "t", "instances": ["i-bp1new"], "group": group}]


def test_the_stand_ins_signer_reproduces_the_documented_example():
    assert signature(DOC_PARAMS, "testsecret", "GET") == DOC_SIGNATURE


def test_ready_ends_the_scale_out_wait_once_vllm_is_healthy(tmp_path, servers, declared):
    statements, group = declared
    vllm = servers(FakeVllm)
    vllm.healthy = False  # loading the weights
    md = servers(FakeMetadata, ROLE, instance_id="i-bp1new")
    ess = servers(FakeEss, md.keys, REGION, statements)
    ess.activities = {"asa-other": "asg-other", "asa-1": group}
    ess.actions = [
        {"activity": "asa-1", "hook": "ash-loading", "token": "tok-mine", "instances": ["i-bp1new"], "group": group},
        {"activity": "asa-1", "hook": "ash-loading", "token": "tok-theirs", "instances": ["i-bp1peer"], "group": group},
    ]
    config = _config(tmp_path, vllm, md, ess, group)
    healthy_at = _after_a_second(lambda: setattr(vllm, "healthy", True))  # loading the weights
    r = run_agent(config, "ready")
    assert r.returncode == 0, r.stdout + r.stderr
    (done,) = ess.completed
    assert (done["hook"], done["token"], done["result"]) == ("ash-loading", "tok-mine", "CONTINUE")
    assert done["at"] >= healthy_at[0]  # not before vLLM served
    assert ess.actions[1].get("status", "Pending") == "Pending"  # the peer's wait is its own
    assert ess.rejected == [] and ess.calls[-1] == "CompleteLifecycleAction"
    assert "ended the wait of hook ash-loading for i-bp1new" in r.stdout
    for secret in (md.keys["AccessKeySecret"], md.keys["SecurityToken"], "tok-mine"):
        assert secret not in r.stdout + r.stderr


def test_ready_judges_the_gateway_the_load_balancer_checks_not_vllm_alone(tmp_path, servers, declared):
    """vLLM is healthy but nginx (the serving port, the fleet's health path) is not up yet: no CONTINUE before it is."""
    statements, group = declared
    vllm = servers(FakeVllm)  # healthy at once
    nginx = servers(FakeVllm)  # stands in for the gateway, which passes the health path to vLLM
    nginx.up = False  # 503, like nginx while its upstream is unreachable
    md = servers(FakeMetadata, ROLE, instance_id="i-bp1new")
    ess = servers(FakeEss, md.keys, REGION, statements)
    _one_wait(ess, group)
    config = _config(tmp_path, vllm, md, ess, group, GATEWAY_SERVING_PORT=str(nginx.port), GATEWAY_HEALTH_PATH="/health")
    up_at = _after_a_second(lambda: setattr(nginx, "up", True))
    r = run_agent(config, "ready")
    assert r.returncode == 0, r.stdout + r.stderr
    (done,) = ess.completed
    assert done["result"] == "CONTINUE" and done["at"] >= up_at[0], r.stdout
    assert nginx.health_asked >= 2 and "serving through the gateway" in r.stdout


def test_ready_gives_up_at_its_bound_while_the_gateway_is_down(tmp_path, servers, declared):
    statements, group = declared
    vllm, md = servers(FakeVllm), servers(FakeMetadata, ROLE, instance_id="i-bp1new")
    ess = servers(FakeEss, md.keys, REGION, statements)
    _one_wait(ess, group)
    closed = servers(FakeVllm)
    config = _config(tmp_path, vllm, md, ess, group, GATEWAY_SERVING_PORT=str(closed.port))
    closed.close()  # nginx not running (e.g. the render unit failed closed)
    r = run_agent(config, "ready", "--timeout", "1")
    assert r.returncode == 1 and not ess.completed, r.stdout
    assert f"port {closed.port} did not answer 200" in r.stdout


@pytest.mark.parametrize("unit", ["gpufleet-prepare.service", "gpufleet-gateway-render.service"])
def test_ready_abandons_the_scale_out_when_the_node_knows_it_is_broken(tmp_path, servers, declared, unit):
    """Preparation (weights, disk, key) or the gateway's render failed: no health will come; ESS releases it at once."""
    vllm, md, ess, group = _loading_node(servers, declared)
    config = _config(tmp_path, vllm, md, ess, group)
    assert unit in json.loads(config.read_text())["failed_units"]
    (tmp_path / "failed-units").write_text(f"{unit}\n")
    started = time.monotonic()
    r = run_agent(config, "ready")
    assert r.returncode == 0, r.stdout + r.stderr
    (done,) = ess.completed
    assert done["result"] == "ABANDON" and f"{unit} failed" in r.stdout and "with ABANDON" in r.stdout, r.stdout
    assert time.monotonic() - started < 10


def test_ready_does_not_abandon_while_units_are_only_starting(tmp_path, servers, declared):
    vllm, md, ess, group = _loading_node(servers, declared)
    (tmp_path / "failed-units").write_text("some-other.service\n")
    r = run_agent(_config(tmp_path, vllm, md, ess, group), "ready", "--timeout", "1")
    assert r.returncode == 1 and not ess.completed, r.stdout


@pytest.mark.parametrize("reach", ["missing", "no bus"])
def test_a_systemctl_that_cannot_run_is_said_once_and_ready_still_waits_for_health(tmp_path, servers, declared, reach):
    """A systemctl that is not there, or that cannot reach systemd (exit 1, as `is-failed` also exits for a unit
    that has not failed), tells nothing about the units: said once, no ABANDON."""
    vllm, md, ess, group = _loading_node(servers, declared)
    config = _config(tmp_path, vllm, md, ess, group)
    (tmp_path / "failed-units").write_text("gpufleet-prepare.service\n")  # were it asked, it would be failed
    doc = json.loads(config.read_text())
    doc["systemctl"] = str(tmp_path / "no-such-systemctl")
    if reach == "no bus":
        doc["systemctl"] = str(tmp_path / "systemctl-no-bus")
        Path(doc["systemctl"]).write_text('#!/bin/sh\necho "Failed to connect to bus: Host is down" >&2\nexit 1\n')
        Path(doc["systemctl"]).chmod(0o755)
    config.write_text(json.dumps(doc))
    r = run_agent(config, "ready", "--timeout", "1")
    assert r.returncode == 1 and not ess.completed, r.stdout
    said = [line for line in r.stdout.splitlines() if "cannot ask systemd" in line]
    assert len(said) == len(doc["failed_units"]) and "Traceback" not in r.stderr, r.stdout


def test_a_wrong_key_is_refused_by_the_stand_in_and_nothing_completes(tmp_path, servers, declared):
    statements, group = declared
    vllm, md = servers(FakeVllm), servers(FakeMetadata, ROLE, instance_id="i-bp1new")
    ess = servers(FakeEss, {**md.keys, "AccessKeySecret": "another-secret"}, REGION, statements)
    _one_wait(ess, group)
    cfg = _config(tmp_path, vllm, md, ess, group)
    doc = json.loads(cfg.read_text())
    doc["lifecycle_attempts"] = 2
    cfg.write_text(json.dumps(doc))
    r = run_agent(cfg, "ready")
    assert r.returncode == 1 and "SignatureDoesNotMatch" in r.stdout and not ess.completed


def test_the_role_may_not_end_another_groups_wait(tmp_path, servers, declared):
    statements, group = declared
    vllm, md = servers(FakeVllm), servers(FakeMetadata, ROLE, instance_id="i-bp1new")
    ess = servers(FakeEss, md.keys, REGION, statements)
    ess.activities = {"asa-9": "asg-someone-else"}
    ess.actions = [{"activity": "asa-9", "hook": "h", "token": "t", "instances": ["i-bp1new"], "group": "asg-someone-else"}]
    cfg = _config(tmp_path, vllm, md, ess, "asg-someone-else")
    doc = json.loads(cfg.read_text())
    doc["lifecycle_attempts"] = 1
    cfg.write_text(json.dumps(doc))
    r = run_agent(cfg, "ready")
    assert r.returncode == 1 and "Forbidden.RAM" in r.stdout and not ess.completed


def test_no_pending_wait_is_said_and_exits_0(tmp_path, servers, declared):
    statements, group = declared
    vllm, md = servers(FakeVllm), servers(FakeMetadata, ROLE)
    ess = servers(FakeEss, md.keys, REGION, statements)
    cfg = _config(tmp_path, vllm, md, ess, group)
    doc = json.loads(cfg.read_text())
    doc["lifecycle_attempts"] = 2
    cfg.write_text(json.dumps(doc))
    r = run_agent(cfg, "ready")
    assert r.returncode == 0 and "in no pending wait" in r.stdout and not ess.completed


def test_an_unreachable_metadata_service_is_asked_again_and_logged_without_a_traceback(tmp_path, servers, declared):
    statements, group = declared
    vllm, md = servers(FakeVllm), servers(FakeMetadata, ROLE, instance_id="i-bp1new")
    ess = servers(FakeEss, md.keys, REGION, statements)
    _one_wait(ess, group)
    cfg = _config(tmp_path, vllm, md, ess, group)
    doc = json.loads(cfg.read_text())
    doc["lifecycle_attempts"] = 3
    cfg.write_text(json.dumps(doc))
    md.close()  # the metadata service refuses connections
    r = run_agent(cfg, "ready")
    assert r.returncode == 1 and "Traceback" not in r.stderr, r.stdout + r.stderr
    assert [line.split(":")[1] for line in r.stdout.splitlines() if "lifecycle attempt" in line] == [
        " lifecycle attempt 1 failed",
        " lifecycle attempt 2 failed",
        " lifecycle attempt 3 failed",
    ], r.stdout
    assert "Connection refused" in r.stdout and "the wait ends at its timeout" in r.stdout and not ess.completed


def test_drain_complete_ends_the_scale_in_wait_once_drained(tmp_path, servers, declared):
    statements, group = declared
    vllm = servers(FakeVllm, running=1, waiting=0)
    md = servers(FakeMetadata, ROLE, instance_id="i-bp1old")
    ess = servers(FakeEss, md.keys, REGION, statements)
    ess.activities = {"asa-in": group}
    ess.actions = [{"activity": "asa-in", "hook": "ash-drain", "token": "tok-in", "instances": ["i-bp1old"], "group": group}]
    cfg = _config(tmp_path, vllm, md, ess, group)
    drained_at = []

    def finish():
        time.sleep(1.5)
        vllm.running = 0
        drained_at.append(time.monotonic())

    threading.Thread(target=finish, daemon=True).start()
    r = run_agent(cfg, "drain", "--timeout", "20", "--complete")
    assert r.returncode == 0, r.stdout + r.stderr
    (done,) = ess.completed
    assert done["hook"] == "ash-drain" and done["at"] >= drained_at[0] and "drained" in r.stdout


def test_tencent_has_no_wait_to_end(tmp_path, servers):
    vllm = servers(FakeVllm)
    cfg = agent_setup(tmp_path, "tencentcloud", vllm)
    r = run_agent(cfg, "ready")
    assert r.returncode == 0 and "no lifecycle wait to end on tencentcloud" in r.stdout
