"""The node agent (images/node_agent.py) run as the image installs it (`python3 -I node_agent.py --config agent.json`,
the config rendered by images/node.py) against local stand-ins (agent_fakes.py): vLLM's /metrics in both pinned
versions' names, the instance metadata service and CloudMonitor's PutCustomMetric, which checks the signature.
The environment files are the fleet's real ones (components/userdata.py, images/gateway.py)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from agent_fakes import VLLM_0_10, VLLM_0_33, FakeCms, FakeMetadata, FakeVllm

from gpufleet import registry, validation
from gpufleet.components import userdata
from gpufleet.images import gateway, node, node_agent
from gpufleet.images.recipes import load_recipe

ROOT = Path(__file__).resolve().parents[2]
AGENT = ROOT / "src" / "gpufleet" / "images" / "node_agent.py"
STACKS = {"alicloud": "alicloud-cn-hangzhou-dev", "tencentcloud": "tencentcloud-ap-guangzhou-dev"}
ROLE = "gpufleet-dev-node"
GROUP, ASG = "4711", "asg-bp1test"


@pytest.fixture
def servers():
    made = []

    def make(cls, *a, **kw):
        made.append(cls(*a, **kw))
        return made[-1]

    yield make
    for s in made:
        s.close()


def setup(tmp: Path, cloud: str, vllm: FakeVllm, md: FakeMetadata | None = None, cms: FakeCms | None = None, **env) -> Path:
    """agent.json as the image has it, pointed at the stand-ins; the fleet's and gateway's env files as user-data
    writes them, with the scaling ids the program fills in and the test's short drain wait."""
    fleet = validation.load_fleet(STACKS[cloud], ROOT)
    cfg = node.agent_config(load_recipe(fleet.spec.image.recipe))
    fenv = userdata.environment(fleet, ROLE) | {"GPUFLEET_METRICS_GROUP": GROUP, "GPUFLEET_SCALING_GROUP": ASG}
    # the stand-in also plays the gateway (nginx passes the health path to vLLM) unless a test points these elsewhere
    genv = gateway.env_map(gateway.values_from_fleet(fleet)) | {
        "GATEWAY_VLLM_PORT": str(vllm.port),
        "GATEWAY_SERVING_PORT": str(vllm.port),
        "GATEWAY_HEALTH_PATH": "/health",
        "GATEWAY_DRAIN_WAIT_S": "1",
    }
    for key, value in env.items():
        (fenv if key.startswith("GPUFLEET_") else genv)[key] = value
    (tmp / "fleet.env").write_text("".join(f"{k}={v}\n" for k, v in fenv.items()))
    (tmp / "gateway.env").write_text("".join(f"{k}={v}\n" for k, v in genv.items()))
    cfg["env_files"] = [str(tmp / "fleet.env"), str(tmp / "gateway.env")]
    cfg["drain_flag"] = str(tmp / "draining")
    # systemd's answer about the node's units: a stand-in systemctl; a unit listed in failed-units is failed, the
    # others still starting
    stub = tmp / "systemctl"
    stub.write_text(
        '#!/bin/sh\n[ "$1 $2 $3" = "show --property=ActiveState --value" ] || exit 64\n'
        f'if grep -qxF "$4" {tmp / "failed-units"}; then echo failed; else echo activating; fi\n'
    )
    stub.chmod(0o755)
    (tmp / "failed-units").touch()
    cfg["systemctl"] = str(stub)
    cfg.update(backoff_s=0.2, spot_poll_s=0.2, drain_poll_s=0.1)
    for name, c in cfg["clouds"].items():
        if c["module"]:  # the image installs it beside the agent; here it is read where it lives
            c["module"] = str(registry.node_module_file(name))
        if md is not None:
            base = c["metadata"]["url"].split("/latest/")[0]
            c["metadata"] = {k: v.replace(base, md.url) for k, v in c["metadata"].items()}
        if c["metrics_api"] and cms is not None:
            assert c["metrics_api"] == "https://cms-vpc.{region}.aliyuncs.com/"
            c["metrics_api"] = cms.url + "/?region={region}"
    path = tmp / "agent.json"
    path.write_text(json.dumps(cfg))
    return path


def agent(config: Path, *args: str, timeout: float = 30) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-I", str(AGENT), "--config", str(config), *args], capture_output=True, text=True, timeout=timeout
    )


# --- parsing the pinned vLLMs' exposition ---------------------------------------------------------------------------


def _base(name: str) -> str:
    return re.sub(r"_(total|created|bucket|sum|count)$", "", name)


@pytest.mark.parametrize("version, text", [("0.33.0", VLLM_0_33), ("0.10.0", VLLM_0_10)])
def test_both_pinned_name_sets_give_the_three_signals(version, text):
    body = text.format(running=2.0, waiting=3.0, kv=0.25)
    samples = node_agent.parse_prometheus(body)
    pinned = set(
        yaml.safe_load((ROOT / "src" / "gpufleet" / "components/data/metric_names.yaml").read_text())["vllm"][version]["metrics"]
    )
    assert {_base(n) for n in samples} <= pinned, {_base(n) for n in samples} - pinned  # the fixture is that version's
    metrics = node.scaling_metrics()["metrics"]
    got = {k: node_agent.signal_value(samples, spec) for k, spec in metrics.items()}
    engines = 2 if version == "0.33.0" else 1  # 0.33 writes one label set per engine: counts add up, usage averages
    assert got == {"queue": 3.0 * engines, "running": 2.0, "kv_cache": 25.0}


def test_label_values_with_quotes_commas_and_braces_parse():
    s = node_agent.parse_prometheus('m{a="x \\"y\\", z",b="}{"} 4\nm{a="w"} 1e1 1700000000\n')
    assert s["m"] == [({"a": 'x "y", z', "b": "}{"}, 4.0), ({"a": "w"}, 10.0)]


def test_a_missing_signal_is_none_not_zero():
    samples = node_agent.parse_prometheus('vllm:num_requests_running{engine="0"} 1\n')
    assert node_agent.signal_value(samples, node.scaling_metrics()["metrics"]["queue"]) is None


# --- publishing (Alibaba) -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("version", ["0.33.0", "0.10.0"])
def test_publishes_the_three_signals_with_the_role_keys(tmp_path, servers, version):
    vllm = servers(FakeVllm, version, running=2, waiting=7, kv=0.5)
    md = servers(FakeMetadata, ROLE)
    cms = servers(FakeCms, md.keys)
    r = agent(setup(tmp_path, "alicloud", vllm, md, cms), "metrics", "--once")
    assert r.returncode == 0, r.stdout + r.stderr
    assert not cms.rejected, cms.rejected
    sm = node.scaling_metrics()
    points = {p["MetricName"]: p for p in cms.points()}
    assert set(points) == {m["name"] for m in sm["metrics"].values()}
    waiting = 14.0 if version == "0.33.0" else 7.0
    want = {"queue": waiting, "running": 2.0, "kv_cache": 50.0}
    for key, m in sm["metrics"].items():
        p = points[m["name"]]
        assert json.loads(p["Values"]) == {"value": want[key]}
        assert json.loads(p["Dimensions"]) == {sm["dimension"]: ASG} and p["GroupId"] == GROUP
        assert p["Type"] == "0" and p["Period"] == str(sm["period_s"])
    assert md.calls[0] == "PUT /latest/api/token"  # hardened mode: every GET carried the session token
    out = r.stdout + r.stderr
    assert "published" in out and all(secret not in out for secret in md.keys.values())


def test_retries_with_backoff_and_fresh_keys(tmp_path, servers):
    vllm = servers(FakeVllm)
    md = servers(FakeMetadata, ROLE)
    cms = servers(FakeCms, md.keys, fail=[(500, "InternalError"), (400, "Throttling.User")])
    r = agent(setup(tmp_path, "alicloud", vllm, md, cms), "metrics", "--once")
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.count("publish attempt") == 2 and "Throttling.User" in r.stdout
    assert len(cms.accepted) == 1 and md.issued == 3  # the keys were asked for again after each failure


def test_gives_up_within_the_period(tmp_path, servers):
    vllm = servers(FakeVllm)
    md = servers(FakeMetadata, ROLE)
    cms = servers(FakeCms, md.keys, fail=[(503, "ServiceUnavailable")] * 10)
    started = time.monotonic()
    r = agent(setup(tmp_path, "alicloud", vllm, md, cms), "metrics", "--once")
    assert r.returncode == 1 and "giving up this period" in r.stdout
    assert time.monotonic() - started < node.scaling_metrics()["period_s"]
    assert r.stdout.count("publish attempt") == node.agent_config(load_recipe("cuda13-vllm"))["publish_attempts"]


def test_a_wrong_signature_is_refused_by_the_stand_in(tmp_path, servers):
    """The fake CloudMonitor really checks the signature: keys it does not know are refused."""
    vllm = servers(FakeVllm)
    md = servers(FakeMetadata, ROLE)
    cms = servers(FakeCms, {**md.keys, "AccessKeySecret": "another-secret"})
    r = agent(setup(tmp_path, "alicloud", vllm, md, cms), "metrics", "--once")
    assert r.returncode == 1 and "SignatureDoesNotMatch" in r.stdout and not cms.accepted


def test_a_role_the_metadata_service_does_not_know_publishes_nothing(tmp_path, servers):
    vllm = servers(FakeVllm)
    md = servers(FakeMetadata, "some-other-role")
    cms = servers(FakeCms, md.keys)
    r = agent(setup(tmp_path, "alicloud", vllm, md, cms), "metrics", "--once")
    assert r.returncode == 1 and "HTTP 404" in r.stdout and not cms.accepted


def test_nothing_is_published_while_vllm_does_not_answer(tmp_path, servers):
    vllm = servers(FakeVllm)
    vllm.up = False
    md = servers(FakeMetadata, ROLE)
    cms = servers(FakeCms, md.keys)
    r = agent(setup(tmp_path, "alicloud", vllm, md, cms), "metrics", "--once")
    assert r.returncode == 1 and "nothing published this period" in r.stdout and not cms.accepted


def test_tencent_says_why_it_does_not_publish(tmp_path, servers):
    vllm = servers(FakeVllm)
    md = servers(FakeMetadata, ROLE)
    cms = servers(FakeCms, md.keys)
    r = agent(setup(tmp_path, "tencentcloud", vllm, md, cms), "metrics")  # not --once: it must end by itself
    assert r.returncode == 0 and "(PutMonitorData) was removed on 2023-08-11" in r.stdout
    assert not md.calls and not cms.accepted


def test_a_fleet_without_a_metrics_group_does_not_publish(tmp_path, servers):
    vllm = servers(FakeVllm)
    r = agent(setup(tmp_path, "alicloud", vllm, GPUFLEET_METRICS_GROUP=""), "metrics")
    assert r.returncode == 0 and "GPUFLEET_METRICS_GROUP or GPUFLEET_SCALING_GROUP is empty" in r.stdout


def test_a_missing_environment_file_is_a_clear_error(tmp_path, servers):
    config = setup(tmp_path, "alicloud", servers(FakeVllm))
    (tmp_path / "gateway.env").unlink()
    r = agent(config, "metrics", "--once")
    assert r.returncode == 2 and "gateway.env" in r.stderr and "Traceback" not in r.stderr


# --- drain ----------------------------------------------------------------------------------------------------------


def test_drain_fails_health_waits_for_the_load_balancer_and_for_requests_to_finish(tmp_path, servers):
    vllm = servers(FakeVllm, running=2, waiting=1)
    config = setup(tmp_path, "alicloud", vllm)
    started = time.monotonic()
    proc = subprocess.Popen(
        [sys.executable, "-I", str(AGENT), "--config", str(config), "drain"], stdout=subprocess.PIPE, text=True
    )
    try:
        deadline = time.monotonic() + 5
        while not (tmp_path / "draining").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert (tmp_path / "draining").exists()
        time.sleep(1.5)
        assert proc.poll() is None  # still 3 requests in flight
        vllm.running = vllm.waiting = 0
        out, _ = proc.communicate(timeout=10)
    finally:
        proc.kill() if proc.poll() is None else None
    assert proc.returncode == 0 and "no request running or waiting" in out, out
    assert time.monotonic() - started >= 1  # the load balancer's wait (GATEWAY_DRAIN_WAIT_S) came first
    again = agent(config, "drain")  # idempotent: already draining, nothing in flight, no second wait
    assert again.returncode == 0 and "already draining" in again.stdout
    assert agent(config, "drain", "--cancel").returncode == 0 and not (tmp_path / "draining").exists()


def test_drain_is_bounded(tmp_path, servers):
    vllm = servers(FakeVllm, running=5, waiting=0)
    started = time.monotonic()
    r = agent(setup(tmp_path, "alicloud", vllm), "drain", "--timeout", "1.5")
    assert r.returncode == 0 and "bound of 2s reached with 5 requests" in r.stdout, r.stdout
    assert time.monotonic() - started < 6


def test_drain_with_vllm_not_running_ends_at_once(tmp_path, servers):
    vllm = servers(FakeVllm)
    config = setup(tmp_path, "tencentcloud", vllm, GATEWAY_DRAIN_WAIT_S="0")
    vllm.close()  # nothing listens on the port: the connection is refused
    started = time.monotonic()
    r = agent(config, "drain", "--timeout", "20")
    assert r.returncode == 0 and "refuses connections (not running): nothing in flight" in r.stdout, r.stdout
    assert time.monotonic() - started < 5


def test_drain_does_not_take_a_slow_metrics_read_for_nothing_in_flight(tmp_path, servers):
    """A loaded vLLM answers /metrics late (same event loop as the requests): the drain keeps asking until its bound."""
    vllm = servers(FakeVllm, running=7, waiting=3)
    vllm.delay = 3  # more than http_timeout_s (2 s)
    started = time.monotonic()
    r = agent(setup(tmp_path, "alicloud", vllm, GATEWAY_DRAIN_WAIT_S="0"), "drain", "--timeout", "1.5")
    assert r.returncode == 0 and "nothing in flight" not in r.stdout, r.stdout
    assert "timed out" in r.stdout and "bound of 2s reached with no count of the requests" in r.stdout, r.stdout
    assert time.monotonic() - started >= 1.5


def test_drain_waits_for_an_answer_slower_than_one_calls_timeout(tmp_path, servers):
    vllm = servers(FakeVllm, running=7, waiting=3)
    vllm.delay = 2.5  # answers within the bound, later than http_timeout_s: 7 running, 3 + 3 waiting on two engines
    r = agent(setup(tmp_path, "alicloud", vllm, GATEWAY_DRAIN_WAIT_S="0"), "drain", "--timeout", "2.8")
    assert r.returncode == 0 and "bound of 3s reached with 13 requests running or waiting at the last read" in r.stdout, r.stdout


def test_drain_keeps_polling_on_an_error_status(tmp_path, servers):
    vllm = servers(FakeVllm)
    vllm.up = False  # /metrics answers 503
    r = agent(setup(tmp_path, "tencentcloud", vllm, GATEWAY_DRAIN_WAIT_S="0"), "drain", "--timeout", "1.5")
    assert r.returncode == 0 and "nothing in flight" not in r.stdout, r.stdout
    assert "HTTP 503" in r.stdout and "bound of 2s reached with no count of the requests" in r.stdout, r.stdout


# --- spot notice ----------------------------------------------------------------------------------------------------


def test_a_failed_token_request_is_asked_again_at_once(tmp_path, servers):
    """Hardened metadata: a token request that fails must not leave the watcher blind for the token's lifetime."""
    vllm = servers(FakeVllm, running=0, waiting=0)
    md = servers(FakeMetadata, ROLE)
    md.token_failures = 2
    md.notice = "2026-12-03T20:05:00Z"
    r = agent(setup(tmp_path, "alicloud", vllm, md, GATEWAY_DRAIN_WAIT_S="0"), "spot-watch", "--polls", "5", timeout=20)
    assert r.returncode == 0 and "reclaimed at" in r.stdout, r.stdout
    assert md.calls[0:6:2] == ["PUT /latest/api/token"] * 3  # asked again on each poll until it got one
    assert len(md.calls) == 6  # the notice was read on the third poll, the first with a token


@pytest.mark.parametrize("cloud", ["alicloud", "tencentcloud"])
def test_spot_notice_drains(tmp_path, servers, cloud):
    vllm = servers(FakeVllm, running=0, waiting=0)
    notice_path = {
        "alicloud": "/latest/meta-data/instance/spot/termination-time",
        "tencentcloud": "/latest/meta-data/spot/termination-time",
    }
    md = servers(FakeMetadata, ROLE, hardened=cloud == "alicloud", notice_path=notice_path[cloud])
    config = setup(tmp_path, cloud, vllm, md, GATEWAY_DRAIN_WAIT_S="0")
    proc = subprocess.Popen(
        [sys.executable, "-I", str(AGENT), "--config", str(config), "spot-watch"], stdout=subprocess.PIPE, text=True
    )
    try:
        time.sleep(1.0)
        assert proc.poll() is None and not (tmp_path / "draining").exists()  # 404: no notice yet
        md.notice = "2026-12-03T20:05:00Z"
        out, _ = proc.communicate(timeout=10)
    finally:
        proc.kill() if proc.poll() is None else None
    assert proc.returncode == 0 and "reclaimed at 2026-12-03T20:05:00Z" in out and (tmp_path / "draining").exists(), out
    polls = [c for c in md.calls if c.endswith("termination-time")]
    assert len(polls) >= 3 and all(c == f"GET {notice_path[cloud]}" for c in polls)


def test_no_metric_name_is_written_outside_the_data_file():
    """images/data/scaling_metrics.yaml is the one home of the names: the agent, its units and templates, and the
    scaler function read them from the rendered config, never from a literal of their own."""
    sm = node.scaling_metrics()
    names = {m["name"] for m in sm["metrics"].values()} | {v for m in sm["metrics"].values() for v in m["vllm"]}
    code = [
        ROOT / "src" / "gpufleet" / "images" / "node_agent.py",
        ROOT / "src" / "gpufleet" / "images" / "node.py",
        ROOT / "src" / "gpufleet" / "images" / "gateway.py",
        *(p for c in registry.names() if (p := registry.node_module_file(c))),
    ]
    code += sorted((ROOT / "src" / "gpufleet" / "images" / "templates").rglob("*.j2")) + sorted(
        (ROOT / "src" / "gpufleet" / "components/tencentcloud/scaler").glob("*.py")
    )
    hits = [(p.name, n) for p in code for n in names if n in p.read_text()]
    assert not hits, hits


def test_the_doc_gives_the_drain_command_the_hooks_run():
    """docs/scaling-node.md once said the hooks pass --timeout; the program installs the bare command."""
    from gpufleet.components.alicloud import rules
    from gpufleet.components.tencentcloud import rules as tc_rules

    doc = (ROOT / "docs" / "scaling-node.md").read_text()
    assert rules.DRAIN_COMMAND == tc_rules.DRAIN_COMMAND == "/usr/local/bin/gpufleet-drain"
    assert f"run `{rules.DRAIN_COMMAND}` with no `--timeout`" in doc.replace("\n", " ")
    assert "gpufleet-drain --timeout <" not in doc
