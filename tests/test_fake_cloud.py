"""Meta test: a third cloud is one package (tests/fake_cloud/) plus one registry line.

The fake cloud is registered for this module only; preview, cost estimate, catalog derivation, the policy tests
of tests/test_policy.py and `region new` then run for it with no edit anywhere else. On the node, the image ships its
node module beside the agent, which publishes the fake cloud's custom metrics through it (against a signature-checking
endpoint), and the prepare script fetches the weights with the fetch command of its profile.
"""

import ast
import hashlib
import hmac
import importlib
import inspect
import json
import shutil
import subprocess
import sys
import threading
from decimal import Decimal
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from tools import require

from gpufleet import registry, validation
from gpufleet.cli import main
from gpufleet.cost import catalog, derive
from gpufleet.images.recipes import load_recipe

REPO = Path(__file__).resolve().parents[1]
PACKAGE = Path(__file__).resolve().parent / "fake_cloud"
STACK = "fakecloud-fk-east-1-prod"
STACK_FILE = """config:
  gpufleet:fleet:
    cloud: fakecloud
    region: fk-east-1
    zones: [fk-east-1a, fk-east-1b]
    environment: prod
    gpu: {kind: A10, count: 1}
    replicas: {min: 2, max: 4}
    image: {recipe: cuda13-vllm}
    model:
      name: Qwen/Qwen2.5-7B-Instruct
      source: https://models.example/qwen2.5-7b-instruct.tar
      sha256: 9a8b7c6d5e4f30211203a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f9
      catalog: Qwen/Qwen2.5-7B-Instruct
    serving: {dtype: bfloat16, max_model_len: 8192, api_key_secret: gpufleet/prod/vllm-api-key}
    network: {vpc_cidr: 10.40.0.0/16, ssh_cidrs: [198.51.100.0/24]}
    load_balancer: {tls: {domain: llm.example.com, certificate_id: example-certificate-id}}
"""


def _run(argv: list[str]) -> int:
    try:
        main(argv)
    except SystemExit as exc:
        return exc.code or 0
    return 0


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    """A project of its own (stacks, the image lock with the fake cloud's images), the fake cloud registered."""
    root = tmp_path_factory.mktemp("fakeproject")
    shutil.copy(REPO / "Pulumi.yaml", root / "Pulumi.yaml")
    (root / "stacks").mkdir()
    shutil.copy(REPO / "stacks" / "__main__.py", root / "stacks" / "__main__.py")
    (root / "stacks" / f"Pulumi.{STACK}.yaml").write_text(STACK_FILE)
    lock = json.loads((REPO / "images" / "lock.json").read_text())
    for name, entry in lock["images"].items():
        entry["regions"]["fakecloud"] = {
            "fk-east-1": {"image_id": f"fk-img-{name}", "manifest_sha256": None, "placeholder": False}
        }
        entry["pins"] = load_recipe(name).pins  # a built entry records its build's pins, as `image lock record` writes
    (root / "images").mkdir()
    (root / "images" / "lock.json").write_text(json.dumps(lock))
    mp = pytest.MonkeyPatch()
    mp.setenv("GPUFLEET_PROJECT", str(root))
    registry.register("fakecloud", "fake_cloud")  # the one registry line
    yield root
    registry.unregister("fakecloud")
    mp.undo()


def test_the_fake_cloud_fulfils_the_contract(project):
    assert registry.problems(("fakecloud",)) == []
    assert any("has no alarms" in n for n in registry.notes("fakecloud"))


def test_what_the_fake_cloud_leaves_out_is_the_registrys_defaults(project):
    """No gateway, rules or prices module, no checks.notes, no pricing FREE_PREFIXES: the registry's defaults stand in."""
    assert not {"gateway.py", "rules.py", "prices.py"} & {p.name for p in PACKAGE.iterdir()}
    assert not hasattr(importlib.import_module("fake_cloud.checks"), "notes")
    assert registry.module("fakecloud", "gateway").TRUSTED_PROXIES == ()
    rules = registry.module("fakecloud", "rules")
    assert (rules.RULES, rules.GAPS, rules.DOCSTRING_OVERRIDES, rules.CRON_ZONE_HOURS) == ((), {}, {}, 0)
    assert set(rules.NAMES) == set(registry.NAME_KINDS) and not any(rules.NAMES.values())
    assert registry.module("fakecloud", "pricing").FREE_PREFIXES == {}
    assert registry.list_caps("fakecloud") == {}
    spec = validation.load_fleet(STACK).spec
    assert registry.notes("fakecloud", spec) == registry.notes("fakecloud")  # the capabilities' notes alone
    assert registry.module("fakecloud", "checks").spec_problems(spec) == []  # its own member, read through


def test_catalog_refresh_says_the_fake_cloud_has_no_pricing_api(project, capsys):
    assert _run(["catalog", "refresh", "--cloud", "fakecloud", "--region", "fk-east-1"]) == 2
    err = capsys.readouterr().err
    assert "fakecloud has no pricing API; prices come from `catalog build`" in " ".join(err.split()), err


def test_preview(project):
    from gpufleet.preview import preview_stack

    inv = preview_stack(STACK)
    types = {r["type"] for r in inv.resources}
    assert {"fakecloud:compute/group:Group", "fakecloud:lb/balancer:Balancer", "fakecloud:net/nat:Nat"} <= types
    assert inv.outputs["endpoint"] == "https://llm.example.com"  # prod from the internet: TLS with the spec's certificate


def test_cost_estimate(project, capsys):
    assert _run(["cost", "estimate", "--stack", STACK, "--json"]) == 0
    est = json.loads(capsys.readouterr().out)
    assert float(est["monthly_total"]) > 0
    assert not [line for line in est["lines"] if line["component"] == "resource type not priced"]


def test_its_own_usage_key_is_read_from_a_usage_file_and_priced(project, capsys):
    """fk_nat_processed_gb is declared by the fake cloud's pricing (USAGE) alone: a usage file may set it, its line is
    priced from it, unknown it is a unit price, and it is an overhead lever of the fake cloud's estimate."""
    (project / "fk-usage.yaml").write_text("fk_nat_processed_gb: 100\n")
    assert _run(["cost", "estimate", "--stack", STACK, "--json", "--usage", str(project / "fk-usage.yaml")]) == 0
    est = json.loads(capsys.readouterr().out)
    (line,) = [x for x in est["lines"] if x["component"] == "NAT processed traffic"]
    assert Decimal(line["monthly_quantity"]) == 100 and Decimal(line["monthly_cost"]) == Decimal("5.00"), line
    assert "fk_nat_processed_gb: 100" in est["assumptions"]
    assert _run(["cost", "estimate", "--stack", STACK, "--json"]) == 0
    est = json.loads(capsys.readouterr().out)
    (line,) = [x for x in est["lines"] if x["component"] == "NAT processed traffic"]
    assert line["monthly_cost"] is None and line["note"] == "usage fk_nat_processed_gb", line
    assert "fake NAT processing (GB a month)" in [o["lever"] for o in est["overhead_scenarios"]]
    assert "fk_nat_processed_gb" not in {k.name for c in ("alicloud", "tencentcloud") for k in registry.usage_keys(c)}


def test_catalog_build_reproduces_the_shipped_prices(project):
    derived = derive.derive("fakecloud", "fk-east-1", "2026-12-01")
    shipped = catalog.load("fakecloud", "fk-east-1")
    assert derived.rows == shipped.rows


def test_policy_tests(project, monkeypatch):
    import test_policy

    monkeypatch.setattr(test_policy, "ROOT", project)
    ran = []
    for name, fn in inspect.getmembers(test_policy, inspect.isfunction):
        if name.startswith("test_") and list(inspect.signature(fn).parameters) == ["stack"]:
            fn(STACK)
            ran.append(name)
    assert len(ran) >= 8, ran


def test_region_new(project, capsys):
    assert _run(["region", "new", "--cloud", "fakecloud", "--region", "fk-east-1", "--env", "dev"]) == 0, capsys.readouterr()
    fleet = validation.load_fleet("fakecloud-fk-east-1-dev")
    assert fleet.spec.model.source.startswith("fks://") and fleet.instance_type.type == "fk.t4.8x"


# --- the node side: its own metrics publisher and object store, shipped and rendered from its package alone ----------

ROLE = "fk-prod-node-role"
METRICS_GROUP, SCALING_GROUP = "fk-metrics-1", "fk-group-1"
KEY_ID, SECRET = "fk-key-1", "fk-secret-1"


class _Server:
    """A ThreadingHTTPServer on 127.0.0.1 answering with handle(method, path, headers, body) -> (status, text)."""

    def __init__(self, handle):
        outer = self

        class H(BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def _any(self):
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                status, text = handle(self.command, self.path, self.headers, body)
                data = text.encode()
                self.send_response(status)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_PUT = _any

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True).start()
        outer.calls = []

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def node_side(project, tmp_path):
    """The agent and the fake cloud's node module as the image installs them (copied from node.files into a tree),
    agent.json pointed at stand-ins: vLLM's /metrics, the fake metadata service (the role's keys) and the fake
    custom-metric endpoint, which checks the signature with its own HMAC and the secret the metadata service gave."""
    from gpufleet import validation
    from gpufleet.components import userdata
    from gpufleet.images import gateway, node
    from gpufleet.images.recipes import load_recipe

    recipe = load_recipe("cuda13-vllm")
    lay = recipe.layout
    files = {f.path: f for f in node.files(recipe)}
    lib = tmp_path / "lib"
    for path in (f"{lay.gateway_lib}/{node.AGENT_FILE}", f"{lay.gateway_lib}/{node.AGENT_CLOUDS}/fakecloud.py"):
        (lib / path.lstrip("/")).parent.mkdir(parents=True, exist_ok=True)
        (lib / path.lstrip("/")).write_text(files[path].content)
    cfg = json.loads(files[f"{lay.gateway_lib}/{node.AGENT_CONFIG}"].content)
    fk = cfg["clouds"]["fakecloud"]
    assert fk["module"] == f"{lay.gateway_lib}/{node.AGENT_CLOUDS}/fakecloud.py"
    assert fk["metrics_api"] == "https://metrics.{region}.fakecloud.example/v1/points"

    state = {"points": [], "rejected": [], "secret": SECRET}
    vllm = _Server(
        lambda m, p, h, b: (
            (200, "vllm:num_requests_waiting 3\nvllm:num_requests_running 2\nvllm:kv_cache_usage_perc 0.25\n")
            if p == "/metrics"
            else (404, "")
        )
    )

    def metadata(method, path, headers, body):
        if path == f"/fake/meta-data/role-keys/{ROLE}":
            return 200, json.dumps({"KeyId": KEY_ID, "Secret": state["secret"], "Expires": "2099-01-01T00:00:00+00:00"})
        return 404, ""

    def metrics(method, path, headers, body):
        want = hmac.new(
            SECRET.encode(), f"{headers['X-Fk-Date']}\n{hashlib.sha256(body).hexdigest()}".encode(), hashlib.sha256
        ).hexdigest()
        if method != "POST" or path != "/v1/points?region=fk-east-1" or headers["X-Fk-Key"] != KEY_ID:
            state["rejected"].append(path)
            return 400, json.dumps({"error": "bad request"})
        if not hmac.compare_digest(want, headers.get("X-Fk-Signature", "")):
            state["rejected"].append("signature")
            return 403, json.dumps({"error": "SignatureDoesNotMatch"})
        doc = json.loads(body)
        assert doc["group"] == METRICS_GROUP and doc["dimensions"] == {node.scaling_metrics()["dimension"]: SCALING_GROUP}
        state["points"] += doc["points"]
        return 200, json.dumps({"accepted": len(doc["points"]), "id": f"fk-req-{len(state['points'])}"})

    md, endpoint = _Server(metadata), _Server(metrics)
    fk["module"] = str(lib / fk["module"].lstrip("/"))
    fk["metadata"] = {k: v.replace("http://169.254.0.23", md.url) for k, v in fk["metadata"].items()}
    fk["metrics_api"] = endpoint.url + "/v1/points?region={region}"
    fleet = validation.load_fleet(STACK)
    fenv = userdata.environment(fleet, ROLE, METRICS_GROUP, SCALING_GROUP)
    genv = gateway.env_map(gateway.values_from_fleet(fleet)) | {"GATEWAY_VLLM_PORT": vllm.url.rsplit(":", 1)[1]}
    (tmp_path / "fleet.env").write_text("".join(f"{k}={v}\n" for k, v in fenv.items()))
    (tmp_path / "gateway.env").write_text("".join(f"{k}={v}\n" for k, v in genv.items()))
    cfg.update(env_files=[str(tmp_path / "fleet.env"), str(tmp_path / "gateway.env")], backoff_s=0.1)
    (tmp_path / "agent.json").write_text(json.dumps(cfg))
    agent = lib / f"{lay.gateway_lib}/{node.AGENT_FILE}".lstrip("/")
    yield [sys.executable, "-I", str(agent), "--config", str(tmp_path / "agent.json")], state
    for s in (vllm, md, endpoint):
        s.close()


def test_the_node_agent_publishes_the_fake_clouds_custom_metrics(node_side):
    from gpufleet.images import node

    argv, state = node_side
    r = subprocess.run([*argv, "metrics", "--once"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    names = {k: m["name"] for k, m in node.scaling_metrics()["metrics"].items()}
    got = {p["name"]: p["value"] for p in state["points"]}
    assert got == {names["queue"]: 3, names["running"]: 2, names["kv_cache"]: 25.0}, got
    assert f"group {METRICS_GROUP}, request fk-req-3" in r.stdout and not state["rejected"]


def test_a_wrong_key_fails_the_fake_clouds_signature_check(node_side):
    argv, state = node_side
    state["secret"] = "not-the-secret"  # the metadata service hands out keys the endpoint does not know
    r = subprocess.run([*argv, "metrics", "--once"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 1 and "SignatureDoesNotMatch" in r.stdout, r.stdout + r.stderr
    assert state["rejected"] and not state["points"]


def test_prepare_fetches_from_the_fake_object_store(project, tmp_path):
    """The fake cloud's fetch command from its profile is rendered into the prepare script's case for fks:// (the
    script passes shellcheck) and, run with a stand-in fkctl that accepts only its documented call, fetches."""
    from gpufleet.images import node
    from gpufleet.images.recipes import load_recipe

    recipe = load_recipe("cuda13-vllm")
    script = node.file(recipe, f"{recipe.layout.bin}/gpufleet-prepare").content
    assert '    fks://*)\n      fkctl object get "${MODEL_SOURCE}" --output "${archive}"' in script
    (tmp_path / "prepare.sh").write_text(script)
    r = subprocess.run(
        [require("shellcheck"), "--shell=bash", "--severity=style", str(tmp_path / "prepare.sh")], capture_output=True, text=True
    )
    assert r.returncode == 0, r.stdout
    case = script[script.index('  case "${MODEL_SOURCE}" in') : script.index("  esac") + len("  esac")]
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    (bin_ / "fkctl").write_text(
        "#!/bin/bash\n"
        'want=(object get fks://models/qwen.tar --output "$WANT_OUT" --role fk-role --region fk-east-1)\n'
        '[ "$*" = "${want[*]}" ] || { echo "fkctl: unexpected call: $*" >&2; exit 2; }\n'
        'printf weights > "$WANT_OUT"\n'
    )
    (bin_ / "fkctl").chmod(0o755)
    out = tmp_path / "weights.tar"
    prog = f'set -euo pipefail\ndie() {{ echo "$*" >&2; exit 1; }}\narchive={out}\n{case}\n'
    env = {
        "PATH": f"{bin_}:/usr/bin:/bin",
        "WANT_OUT": str(out),
        "MODEL_SOURCE": "fks://models/qwen.tar",
        "GPUFLEET_ROLE": "fk-role",
        "GPUFLEET_REGION": "fk-east-1",
    }
    r = subprocess.run(["bash", "-c", prog], capture_output=True, text=True, env=env)
    assert r.returncode == 0 and out.read_text() == "weights", r.stderr
    r = subprocess.run(["bash", "-c", prog], capture_output=True, text=True, env={**env, "MODEL_SOURCE": "fkz://models/qwen.tar"})
    assert r.returncode == 1 and "no fetcher for this scheme" in r.stderr


def test_a_profile_api_without_its_node_module_is_named(project, tmp_path, monkeypatch):
    shutil.copytree(PACKAGE, tmp_path / "fake_cloud_nonode", ignore=shutil.ignore_patterns("node_agent.py", "__pycache__"))
    monkeypatch.syspath_prepend(str(tmp_path))
    registry.register("fakenonode", "fake_cloud_nonode")
    try:
        assert registry.problems(("fakenonode",)) == [
            "fakenonode: profile.node_metrics_api is set but the package has no node_agent.py (with publisher())"
        ]
    finally:
        registry.unregister("fakenonode")


def test_the_fake_cloud_is_added_by_its_package_and_one_registry_line_alone():
    """Nothing of gpufleet names the fake cloud, its scheme or its CLI; this module registers it once."""
    words = ("fakecloud", "fake_cloud", "fks://", "fkctl", "fk-east-1", "fk_nat_processed_gb")
    hits = [
        (str(p.relative_to(REPO)), w)
        for p in sorted((REPO / "src").rglob("*"))
        if p.is_file() and p.suffix in {".py", ".j2", ".yaml", ".yml", ".json", ".toml", ".sh"}
        for w in words
        if w in p.read_text(errors="replace")
    ]
    assert not hits, hits
    calls = [
        [a.value for a in n.args if isinstance(a, ast.Constant)]
        for n in ast.walk(ast.parse(Path(__file__).read_text()))
        if isinstance(n, ast.Call) and ast.unparse(n.func) == "registry.register"
    ]
    assert calls.count(["fakecloud", "fake_cloud"]) == 1 and ["fakenonode", "fake_cloud_nonode"] in calls and len(calls) == 2


def test_a_recipe_copied_to_the_fake_cloud_installs_its_cli_from_its_profile(project, tmp_path):
    import yaml

    from gpufleet.images.recipes import RECIPES, load_recipe

    raw = yaml.safe_load((RECIPES / "cuda13-vllm.yaml").read_text())
    raw["regions"]["fakecloud"] = ["fk-east-1"]
    (tmp_path / "copied.yaml").write_text(yaml.safe_dump(raw))
    recipe = load_recipe(str(tmp_path / "copied.yaml"))
    (fk,) = [d for d in recipe.downloads if d.name == "fkctl"]
    assert fk.url == raw["tool_mirror"] + "fkctl" and fk.dest == "/usr/local/bin/fkctl" and fk.sha256 is None
    assert "fkctl" in recipe.commands() and "fkctl" not in load_recipe("cuda13-vllm").commands()


def test_cost_compare_maps_regions_from_each_clouds_own_locations(project):
    """No region map between clouds: the fake cloud lists where its region is, the other clouds theirs."""
    from gpufleet.finance import compare

    assert compare.region_for("fakecloud", "fk-east-1", "alicloud") == (
        "cn-shanghai",
        "alicloud has no Fakeville region; nearest: Fakeville-Shanghai about 1685 km, Fakeville-Hangzhou about 1840 km, "
        "Fakeville-Beijing about 2060 km",
    )
    assert compare.region_for("tencentcloud", "ap-guangzhou", "fakecloud")[0] == "fk-east-1"
    assert compare.region_for("alicloud", "cn-beijing", "tencentcloud") == ("ap-beijing", "same city")
