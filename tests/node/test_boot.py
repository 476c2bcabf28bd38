"""The node, end to end: the image recipe's serving layout plus the fleet's real rendered user-data, booted
with real systemd and real cloud-init in systemd-nspawn (docs/node.md).

Stand-ins only for what cannot run here: `vllm` (no GPU) at the recipe's venv path and the clouds' CLIs
(no cloud), which decide permission from the node role's policy in the stack's recorded inventory. The tree
is built once and cached (tree.py). Full scenario on one stack per cloud; every other shipped stack boots
once and serves; each wrong unit / environment is shown to keep the service down.
"""

from __future__ import annotations

import hashlib
import io
import ipaddress
import json
import os
import re
import shutil
import tarfile
import time
from pathlib import Path

import msgspec
import pytest

from gpufleet import validation
from gpufleet.components import userdata
from gpufleet.images import gateway
from gpufleet.images import node as node_files
from gpufleet.images.recipes import load_recipe
from gpufleet.images.runner import Result, Runner, StepFailed
from gpufleet.preview import preview_stack
from gpufleet.stacks import loader

from . import boot, tree
from .standin_vllm import STREAM_GAP_S

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).parent
STACKS = loader.stack_names(ROOT)
FULL = ["alicloud-cn-hangzhou-dev", "tencentcloud-ap-guangzhou-dev"]
KEY = "sk-node-test-7c1e"
RESTART_SEC = 1  # the test's drop-in; the recipe's unit says 5


def _why_not() -> str | None:
    if os.geteuid() != 0:
        return "needs root (overlayfs, losetup, nspawn)"
    for tool in ("systemd-nspawn", "debootstrap", "nsenter", "losetup"):
        if not shutil.which(tool):
            return f"{tool} not installed (scripts/install-system-tools.sh)"
    if not Path("/dev/loop-control").exists():
        return "no /dev/loop-control"
    cap_eff = next(line.split()[1] for line in Path("/proc/self/status").read_text().splitlines() if line.startswith("CapEff"))
    if not int(cap_eff, 16) & (1 << 21):  # CAP_SYS_ADMIN: overlayfs, loop devices and nspawn's namespaces need it
        return "no CAP_SYS_ADMIN (an unprivileged container cannot run systemd-nspawn)"
    return None


REASON = _why_not()
if REASON and os.environ.get("CI") == "true":
    raise RuntimeError(f"node boot test cannot run under CI=true: {REASON}")
pytestmark = pytest.mark.skipif(REASON is not None, reason=REASON or "")


class NsenterHost:
    """The image runner's Host, reached through the container's namespaces instead of SSH."""

    def __init__(self, node: boot.Node):
        self.node = node

    def run(self, script: str, timeout_s: int) -> Result:
        r = self.node.sh(script, timeout_s)
        return Result(r.returncode, r.stdout, r.stderr)

    def close(self) -> None:
        pass


@pytest.fixture(scope="session")
def image_layer(tmp_path_factory):
    """The cached tree plus the recipe's serving-layout step (applied by the project's runner) and the stand-ins."""
    base = tree.build(lambda m: None)
    work = tmp_path_factory.mktemp("image")
    seed = boot.prepare_dir(work / "seed")
    node = boot.Node([base], work, None, seed, print)
    recipe = load_recipe("cuda13-vllm")
    layout_only = recipe.model_copy(update={"steps": [recipe.step("serving-layout")], "manifest_facts": []})
    try:
        node.boot()
        try:
            result = Runner(layout_only, lambda: NsenterHost(node)).build()
        except StepFailed as exc:
            raise AssertionError(f"{exc}: {exc.result.output}\n{node.console.read_text()[-3000:]}") from None
        assert result.applied == ["serving-layout"], result
        again = Runner(layout_only, lambda: NsenterHost(node)).build()
        assert again.satisfied == ["serving-layout"]  # the step's check agrees with its apply
    finally:
        node.close()
    upper = node.upper
    for junk in ("var/lib/cloud", "var/log/journal", "etc/machine-id"):
        p = upper / junk
        shutil.rmtree(p, ignore_errors=True) if p.is_dir() else p.unlink(missing_ok=True)
    venv_bin = upper / recipe.layout.venv.lstrip("/") / "bin"
    venv_bin.mkdir(parents=True, exist_ok=True)
    shutil.copy(HERE / "standin_vllm.py", venv_bin / "vllm")
    (upper / "usr/local/bin").mkdir(parents=True, exist_ok=True)
    for name in ("ossutil", "aliyun", "coscli", "tccli"):
        shutil.copy(HERE / "standin_cli.py", upper / "usr/local/bin" / name)
        os.chmod(upper / "usr/local/bin" / name, 0o755)
    os.chmod(venv_bin / "vllm", 0o755)
    return [upper, base], recipe


def _archive() -> tuple[bytes, str]:
    data = b'{"architectures": ["Qwen2ForCausalLM"]}'
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        info = tarfile.TarInfo("config.json")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    return buf.getvalue(), hashlib.sha256(buf.getvalue()).hexdigest()


def _role(stack: str) -> tuple[str, dict]:
    """The node role's name and policy document from the stack's recorded inventory (the mock engine's record)."""
    inv = preview_stack(stack, ROOT)
    name = policy = None
    for r in (r for r in inv.resources if r["name"].endswith("-role-node")):  # not the drain hook's or scaler's role
        if r["type"] in ("alicloud:ram/role:Role", "tencentcloud:Cam/role:Role"):
            name = r["inputs"].get("roleName") or r["inputs"].get("name")
        if r["type"] in ("alicloud:ram/policy:Policy", "tencentcloud:Cam/policy:Policy"):
            policy = json.loads(r["inputs"].get("policyDocument") or r["inputs"]["document"])
    assert name and policy, f"{stack}: no node role in the inventory"
    return name, policy


def start(stack, layers, tmp: Path, *, sha256=None, disk=True, dropin="", policy=None, env=None) -> boot.Node:
    fleet = validation.load_fleet(stack, ROOT)
    role, recorded = _role(stack)
    archive, real_sha = _archive()
    spec = fleet.spec
    if sha256 or real_sha != spec.model.sha256:  # the spec's sha256 is an example; the test's archive is real
        spec = spec.model_copy(update={"model": spec.model.model_copy(update={"sha256": sha256 or real_sha})})
        fleet = msgspec.structs.replace(fleet, spec=spec)
    seed = boot.prepare_dir(tmp / "seed")
    (seed / "meta-data").write_text(f"instance-id: iid-{stack}\nlocal-hostname: node\n")
    text = userdata.render(fleet, role)
    for key, value in (env or {}).items():  # what the program fills in (issue 18: the scaling ids)
        text, n = re.subn(rf"(?m)^(\s+{key}=).*$", rf"\g<1>{value}", text)
        assert n == 1, key
    (seed / "user-data").write_text(text)
    disk_file = None
    if disk:
        disk_file = tmp / "data.img"
        with disk_file.open("wb") as fh:
            fh.truncate(64 << 20)
    node = boot.Node(layers, tmp, disk_file, seed, print)
    node.port = spec.serving.port
    node.gateway = gateway.values_from_fleet(fleet)
    node.layout = load_recipe(spec.image.recipe).layout
    node.mount()
    srv = node.root / "srv/standin"
    srv.mkdir(parents=True, exist_ok=True)
    (srv / "weights.tar").write_bytes(archive)
    shutil.copy(HERE / "stream_probe.py", srv / "stream_probe.py")
    shutil.copy(HERE / "standin_metadata.py", srv / "standin_metadata.py")
    (srv / "metrics.prom").write_text(_exposition(running=0, waiting=0, kv=0.1))
    (srv / "config.json").write_text(
        json.dumps(
            {
                "role": role,
                "region": spec.region,
                "policy": policy or recorded,
                "objects": {spec.model.source: "/srv/standin/weights.tar"},
                "secrets": {spec.serving.api_key_secret: KEY} if spec.serving.api_key_secret else {},
            }
        )
    )
    d = node.root / "etc/systemd/system/vllm.service.d"
    d.mkdir(parents=True, exist_ok=True)
    (d / "test.conf").write_text(f"[Service]\nRestartSec={RESTART_SEC}\n{dropin}")
    node.key = KEY if spec.serving.api_key_secret else None
    try:
        node.boot()
    except BaseException:
        node.close()
        raise
    return node


@pytest.fixture
def booted(tmp_path, image_layer):
    nodes = []

    def go(stack, **kw):
        nodes.append(start(stack, image_layer[0], tmp_path / f"n{len(nodes)}", **kw))
        return nodes[-1]

    yield go
    for n in nodes:
        n.close()


def _serves(node: boot.Node) -> None:
    """Everything below goes through the serving port, where only the gateway (nginx) listens."""
    r = node.sh("cloud-init status --wait --format json", 90)
    status = json.loads(r.stdout)
    assert status["status"] == "done" and not status.get("errors"), r.stdout
    node.wait_http("/health", 200, 30)
    assert node.http("/metrics") == 404 and node.http("/version", node.key) == 404  # vLLM's own paths stay inside
    assert node.http("/v1/models") == (401 if node.key else 200)
    assert node.http("/v1/models", node.key) == 200
    main = node.sh("systemctl show -p MainPID --value vllm.service").stdout.strip()
    assert node.sh(f"ps -o user= -p {main}").stdout.strip() == "vllm"
    src = node.sh("findmnt -n -o SOURCE /data/models").stdout.strip()
    assert src == "/dev/vdb", src
    prep = node.journal("gpufleet-prepare.service")
    assert "sha256 verified" in prep and "formatting data disk /dev/vdb" in prep, prep
    # Streamed without buffering: the first chunk arrives while vLLM is still generating, [DONE] last.
    probe = json.loads(node.sh(f"python3 /srv/standin/stream_probe.py {node.port} {node.key or '-'}").stdout)
    assert probe["text"].rstrip().rstrip("0\r\n").rstrip().endswith("data: [DONE]"), probe["text"]
    assert probe["done"] - probe["first"] >= 1.5 * STREAM_GAP_S, probe  # a buffering proxy delivers both at once
    # vLLM and the exporters on 127.0.0.1 only; the gateway alone on the serving and metrics ports.
    gw = node.gateway
    listening = node.listeners()
    assert listening.get(gw.vllm_port) == {"127.0.0.1"}, listening
    assert listening.get(gw.node_exporter_port) == {"127.0.0.1"}, listening
    assert gw.serving_port in listening and gw.metrics_port in listening, listening
    # The metrics port answers the VPC only: refused from loopback, served from a VPC address.
    assert node.http("/metrics/node", port=gw.metrics_port) == 403
    vpc_addr = str(ipaddress.ip_network(gw.metrics_cidrs[0]).network_address + 5)
    node.sh(f"ip addr add {vpc_addr}/32 dev lo")
    assert node.http("/metrics/node", port=gw.metrics_port, source=vpc_addr) == 200
    assert node.http("/metrics", port=gw.metrics_port, source=vpc_addr) == 404


def _exposition(running: float, waiting: float, kv: float) -> str:
    """vLLM 0.33's /metrics for the stand-in, names from images/data/scaling_metrics.yaml."""
    m = node_files.scaling_metrics()["metrics"]
    values = {"queue": waiting, "running": running, "kv_cache": kv}
    return "".join(f'{m[k]["vllm"][0]}{{engine="0",model_name="m"}} {v}\n' for k, v in values.items())


def _agent_units(node: boot.Node, cloud: str) -> None:
    """The node agent's units are installed and enabled; without a metrics group (and on Tencent always) the metrics
    unit says why it does not publish and ends cleanly; the spot watcher runs."""
    lay = node.layout
    r = node.sh(f"systemctl is-enabled {lay.metrics_unit} {lay.spot_unit}")
    assert r.stdout.split() == ["enabled", "enabled"], r.stdout + r.stderr
    deadline = time.monotonic() + 20
    while node.sh(f"systemctl is-active {lay.metrics_unit}").stdout.strip() in ("active", "activating"):
        assert time.monotonic() < deadline, node.journal(lay.metrics_unit)
        time.sleep(0.3)
    assert node.sh(f"systemctl show -p Result --value {lay.metrics_unit}").stdout.strip() == "success"
    why = (
        "(PutMonitorData) was removed" if cloud == "tencentcloud" else "GPUFLEET_METRICS_GROUP or GPUFLEET_SCALING_GROUP is empty"
    )
    assert why in node.journal(lay.metrics_unit), node.journal(lay.metrics_unit)
    assert node.sh(f"systemctl is-active {lay.spot_unit}").stdout.strip() == "active", node.journal(lay.spot_unit)


def _rate_limited(node: boot.Node) -> None:
    """429 past the rate: the node re-renders its gateway from its environment file with 6 requests a minute and no
    burst (the rendering path key rotation takes too), then a fixed number of requests from a fresh client address."""
    env = node.layout.gateway_env_file
    node.sh(
        f"sed -i -e 's/^GATEWAY_RATE_PER_MINUTE=.*/GATEWAY_RATE_PER_MINUTE=6/' -e 's/^GATEWAY_BURST=.*/GATEWAY_BURST=0/' {env}"
    )
    r = node.sh(f"systemctl restart {node.layout.gateway_unit} && systemctl reload-or-restart nginx.service")
    assert r.returncode == 0, r.stderr + node.diagnose()
    node.wait_http("/health", 200, 10)
    codes = [node.http("/v1/models", node.key, source="127.0.0.2") for _ in range(5)]
    assert codes == [200, 429, 429, 429, 429], codes  # one request per 10 s: the 2nd to 5th come sooner
    assert node.http("/v1/models", node.key, source="127.0.0.3") == 200  # per client: another address has its own
    assert node.http("/health", source="127.0.0.2") == 200  # health checks are not limited


@pytest.mark.parametrize("stack", FULL)
def test_full_scenario(stack, booted):
    started = time.monotonic()
    node = booted(stack)
    _serves(node)
    _agent_units(node, stack.split("-", 1)[0])
    _rate_limited(node)
    score = node.sh("systemd-analyze security --no-pager vllm.service | tail -1").stdout
    assert float(score.split(":")[1].split()[0]) <= 2.5, score
    versions = node.sh("systemctl --version | head -1; cloud-init --version 2>&1; cat /etc/debian_version").stdout
    print(f"{stack}: {score.strip()} | {' | '.join(versions.split(chr(10)))}")
    # kill -9: back within the restart interval (the test's RestartSec) plus the stand-in's start
    node.sh("systemctl kill -s KILL vllm.service")
    node.wait_http("/health", 200, RESTART_SEC + 10)
    # reboot: serves again, without downloading or formatting again
    fetches = node.sh("grep -c ' cp ' /srv/standin/calls").stdout.strip()
    node.reboot()
    node.wait_http("/health", 200, 30)
    assert node.http("/v1/models", node.key) == 200
    prep = node.journal("gpufleet-prepare.service")
    assert "not downloading again" in prep and "formatting" not in prep, prep
    assert node.sh("grep -c ' cp ' /srv/standin/calls").stdout.strip() == fetches == "1"
    print(f"{stack}: full scenario {time.monotonic() - started:.1f}s")


@pytest.mark.parametrize("stack", [s for s in STACKS if s not in FULL])
def test_other_stacks_boot_and_serve(stack, booted):
    _serves(booted(stack))


def _stays_down(node: boot.Node, within_s: float = 30) -> str:
    """Never serves: until the prepare unit has failed, or vLLM has failed to start twice (RestartSec is 1 here)."""
    node.sh("cloud-init status --wait", 90)
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        assert node.http("/health") != 200, "served although the node is wrong"
        prep = node.sh("systemctl is-failed gpufleet-prepare.service").stdout.strip()
        restarts = node.sh("systemctl show -p NRestarts --value vllm.service").stdout.strip()
        if prep == "failed" or int(restarts or 0) >= 2:
            assert node.sh("systemctl is-active vllm.service").stdout.strip() != "active" or prep != "failed"
            return node.journal("gpufleet-prepare.service") + node.journal("vllm.service")
        time.sleep(0.3)
    raise AssertionError(f"the wrong node neither failed nor served within {within_s}s\n{node.diagnose()}")


# A wrong node from boot on: each case boots its own node, on both clouds (the data disk and the fetch differ).
NEGATIVE = {
    "wrong-checksum": ({"sha256": "0" * 64}, "sha256 mismatch"),
    "no-data-disk": ({"disk": False}, "is not a block device"),
}
CASES = [(stack, case) for stack in FULL for case in NEGATIVE]

# A wrong vllm.service (drop-in) on a node that was serving: no cloud in it, so one node of one cloud takes them
# in turn (a restart each instead of a boot each: the CI budget), and serves again once the drop-in is gone.
WRONG_UNIT = {
    "wrong-key-file": ("LoadCredential=\nLoadCredential=api-key:/run/gpufleet/no-such-key\n", "243/CREDENTIALS"),
    "wrong-executable": ("ExecStart=\nExecStart=/opt/gpufleet/venv/bin/vllm-missing\n", "203/EXEC"),
    "wrong-user": ("User=nobody\nGroup=nogroup\n", "cannot read the model"),
}


def test_a_wrong_vllm_unit_stays_down(booted):
    node = booted(FULL[0])
    node.wait_http("/health", 200, 30)
    wrong = node.root / "etc/systemd/system/vllm.service.d/zz-wrong.conf"  # after the test's own drop-in
    for case, (dropin, line) in WRONG_UNIT.items():
        wrong.write_text(f"[Service]\n{dropin}")
        node.sh("systemctl daemon-reload; systemctl reset-failed vllm.service; systemctl restart vllm.service")
        out = _stays_down(node)
        assert line in out, f"{case}: {out}"
        wrong.unlink()
        node.sh("systemctl daemon-reload; systemctl reset-failed vllm.service; systemctl restart vllm.service")
        node.wait_http("/health", 200, 15)


@pytest.mark.parametrize("stack, case", CASES)
def test_a_wrong_node_stays_down(stack, case, booted):
    """...and the ready unit, asking systemd from its own sandbox (its static unprivileged user) about the prepare
    unit, sees it failed and abandons the scale-out (a systemctl that cannot reach systemd would say nothing, and
    the node would wait out the hook's whole timeout)."""
    kw, line = NEGATIVE[case]
    node = booted(stack, **kw)
    out = _stays_down(node)
    assert line in out, out
    ready = node.layout.ready_unit
    abandoned = re.compile(rf"ready: {re.escape(node.layout.prepare_unit)}(, \S+)* failed: this node cannot serve; abandoning")
    _wait_for(node, lambda: abandoned.search(node.journal(ready)), 20, f"{ready} abandoning:\n{node.journal(ready)}")
    assert "cannot ask systemd" not in node.journal(ready), node.journal(ready)


def test_a_role_without_head_bucket_cannot_fetch(booted):
    """coscli asks HeadBucket first: the recorded policy without it keeps the weights out and vLLM down."""
    stack = "tencentcloud-ap-guangzhou-dev"
    _, policy = _role(stack)
    policy = {**policy, "statement": [s for s in policy["statement"] if "name/cos:HeadBucket" not in s["action"]]}
    out = _stays_down(booted(stack, policy=policy))
    assert "HeadBucket: 403 AccessDenied" in out, out


def _wait_for(node: boot.Node, check, within_s: float, what: str) -> None:
    deadline = time.monotonic() + within_s
    while not check():
        assert time.monotonic() < deadline, f"{what} within {within_s}s\n{node.diagnose()}"
        time.sleep(0.3)


def test_node_agent_publishes_drains_and_heeds_the_spot_notice(booted):
    """Alibaba, with the scaling ids the program fills in: the metrics unit reads vLLM's /metrics (the stand-in's,
    0.33 names) and signs a PutCustomMetric with the role's keys from a hardened metadata stand-in (CloudMonitor
    itself cannot be reached here, so the call fails at name resolution, after the keys were fetched); the drain
    command fails the health check through the real nginx and waits for in-flight requests; the spot notice drains."""
    stack = FULL[0]
    node = booted(stack, env={"GPUFLEET_METRICS_GROUP": "4711", "GPUFLEET_SCALING_GROUP": "asg-node-test"})
    lay = node.layout
    node.sh("cloud-init status --wait", 90)
    node.wait_http("/health", 200, 30)
    r = node.sh("ip addr add 100.100.100.200/32 dev lo && (setsid python3 /srv/standin/standin_metadata.py "
                "</dev/null >/srv/standin/metadata.log 2>&1 &)")  # fmt: skip
    assert r.returncode == 0, r.stderr
    # the stand-in listening before the agent asks it (a bare connection: no request, so no entry in its call log)
    probe = "python3 -c \"import socket; socket.create_connection(('100.100.100.200', 80), 1).close()\""
    _wait_for(node, lambda: node.sh(probe).returncode == 0, 20, "the metadata stand-in listening")
    # metrics: restarted now that vLLM answers (the first period may have come before it did)
    node.sh(f"systemctl restart {lay.metrics_unit}")
    _wait_for(node, lambda: "publish attempt 1 failed" in node.journal(lay.metrics_unit), 20, "a publish attempt")
    journal = node.journal(lay.metrics_unit).rsplit("publishing every", 1)[1]  # since the restart
    assert "nothing published" not in journal and "cms-vpc.cn-hangzhou.aliyuncs.com" in journal, journal
    calls = node.sh("cat /srv/standin/metadata-calls").stdout
    assert "PUT /latest/api/token" in calls and "ram/security-credentials/" in calls, calls
    assert "node-secret-x" not in journal and "node-token-x" not in journal
    # drain: in flight 1 -> the bound ends it; health 503 through nginx (worker www-data sees /run/gpufleet-draining)
    (node.root / "srv/standin/metrics.prom").write_text(_exposition(running=1, waiting=0, kv=0.3))
    r = node.sh(f"{lay.drain_command} --timeout 3", 30)
    assert r.returncode == 0 and "bound of 3s reached with 1 requests" in r.stdout, r.stdout + r.stderr
    assert node.http("/health") == 503 and node.http("/v1/models", node.key) == 200
    (node.root / "srv/standin/metrics.prom").write_text(_exposition(running=0, waiting=0, kv=0.3))
    r = node.sh(f"{lay.drain_command} --timeout 3", 30)
    assert r.returncode == 0 and "already draining" in r.stdout and "no request running or waiting" in r.stdout, r.stdout
    assert node.sh(f"{lay.drain_command} --cancel").returncode == 0 and node.http("/health") == 200
    # spot notice: the watcher (polling every spot_poll_s) drains
    (node.root / "srv/standin/spot-notice").write_text("2026-12-03T20:30:00Z")
    _wait_for(node, lambda: node.http("/health") == 503, 20, "the spot notice did not drain")
    assert "reclaimed at 2026-12-03T20:30:00Z" in node.journal(lay.spot_unit)
