"""The node's serving files: one definition in the image recipe, the fleet's environment in user-data.

Checked by the tools that consume them: cloud-init schema (user-data), shellcheck (the prepare program),
`systemd-analyze verify` and `systemd-analyze security` (the units, verified against a root that holds the
recipe's files, so a wrong executable path fails). The node boot test (tests/node/) runs them for real.
"""

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from tools import require

from gpufleet import validation
from gpufleet.components import userdata
from gpufleet.images import gateway, node, node_env
from gpufleet.images.recipes import load_recipe, recipe_names
from gpufleet.stacks import loader

ROOT = Path(__file__).resolve().parents[1]
STACKS = loader.stack_names(ROOT)
SECURITY_MAX = 2.5  # issue 14: `systemd-analyze security` exposure of vllm.service at most this
SECURITY_SCORE = 1.8  # recorded with systemd 252 (Debian bookworm host), `--offline=true`; see docs/node.md


def rendered(stack):
    return yaml.safe_load(userdata.render(validation.load_fleet(stack, ROOT), "llm-node"))


@pytest.mark.parametrize(
    "text", ["A=1\nB=2", "", "one", "a\n\nb", "a\n  \nb", "\nlead", "a\r\nb", "tail  ", "x\u2028y", "a\n\n\n"]
)
def test_block_content_indents_as_jinjas_indent_filter_that_rendered_it_before(text):
    """user-data was a Jinja template until issue 25 measured the jinja2 import on every preview; the block content
    keeps the output of its `indent(6, true)` filter, including on lines the node files do not hold today."""
    from jinja2.filters import do_indent

    assert userdata.block_content(text) == do_indent(text, 6, True)


def unit_options(text: str) -> list[tuple[str, str]]:
    return [tuple(line.split("=", 1)) for line in text.splitlines() if "=" in line and not line.startswith("#")]


@pytest.mark.parametrize("stack", STACKS)
def test_user_data_writes_only_the_environment(stack):
    doc = rendered(stack)
    fleet = validation.load_fleet(stack, ROOT)
    lay = load_recipe(fleet.spec.image.recipe).layout
    assert set(doc) == {"write_files"}  # no units, no scripts, no runcmd
    assert [f["path"] for f in doc["write_files"]] == [lay.env_file, lay.argv_file, lay.gateway_env_file]
    assert all(isinstance(f["permissions"], str) for f in doc["write_files"])
    env = dict(line.split("=", 1) for line in doc["write_files"][0]["content"].splitlines())
    assert tuple(env) == node_env.ENV_KEYS and env["MODEL_SHA256"] == fleet.spec.model.sha256
    argv = json.loads(doc["write_files"][1]["content"])
    assert argv[:2] == ["serve", f"{lay.models}/current"]
    assert argv[argv.index("--max-model-len") + 1] == str(fleet.spec.serving.max_model_len)


@pytest.mark.parametrize("recipe", recipe_names())
@pytest.mark.parametrize("stack", STACKS)
def test_recipe_units_and_fleet_environment_come_from_the_same_data(recipe, stack):
    """The unit reads the files user-data writes; the prepare program reads exactly the variables it gets."""
    r = load_recipe(recipe)
    lay = r.layout
    files = {f.path: f for f in node.files(r)}
    vllm = dict(unit_options(files[f"/etc/systemd/system/{lay.unit}"].content))
    prep = dict(unit_options(files[f"/etc/systemd/system/{lay.prepare_unit}"].content))
    fleet = validation.load_fleet(stack, ROOT)
    doc = rendered(stack)
    written = {f["path"] for f in doc["write_files"]}
    assert prep["EnvironmentFile"] in written and vllm["ConditionPathExists"] in written
    launcher = files[vllm["ExecStart"]].content
    assert json.dumps(lay.argv_file) in launcher and json.dumps(lay.venv + "/bin/vllm") in launcher
    script = files[prep["ExecStart"]].content
    used = set(re.findall(r"\$\{([A-Z][A-Z0-9_]*)\}", script))
    # the node agent reads the names its config lists, from the files the config names (images/node_agent.py)
    agent_cfg = json.loads(files[f"{lay.gateway_lib}/{node.AGENT_CONFIG}"].content)
    # the agent and the clouds' node modules it loads (shipped beside it, images/node.py AGENT_CLOUDS)
    agent_src = files[f"{lay.gateway_lib}/{node.AGENT_FILE}"].content + "".join(
        f.content for p, f in files.items() if p.startswith(f"{lay.gateway_lib}/{node.AGENT_CLOUDS}/")
    )
    agent_reads = set(re.findall(r"env\[[\"']([A-Z][A-Z0-9_]*)[\"']\]|env\.get\([\"']([A-Z][A-Z0-9_]*)[\"']\)", agent_src))
    agent_reads = {a or b for a, b in agent_reads}
    assert agent_reads == set(agent_cfg["env_keys"]), agent_reads ^ set(agent_cfg["env_keys"])
    assert agent_cfg["env_files"] == [lay.env_file, lay.gateway_env_file]
    gw_keys = set(gateway.env_map(gateway.values_from_fleet(fleet)))
    assert agent_reads <= set(node_env.ENV_KEYS) | gw_keys, agent_reads - set(node_env.ENV_KEYS) - gw_keys
    from_fleet_env = used | (agent_reads & set(node_env.ENV_KEYS))
    assert from_fleet_env == set(node_env.ENV_KEYS), (
        f"prepare and agent read {sorted(from_fleet_env)}, user-data writes {node_env.ENV_KEYS}"
    )
    assert set(userdata.environment(fleet, "r")) == set(node_env.ENV_KEYS)
    assert vllm["LoadCredential"] == f"api-key:{lay.api_key_file}" and lay.api_key_file in script
    argv = json.loads(doc["write_files"][1]["content"])
    assert argv[1].startswith(lay.models + "/") and lay.models in script
    # The gateway: its oneshot reads the environment user-data writes and the key file the prepare program writes;
    # nginx listens on the serving port and forwards to the host and port vLLM's argv names.
    render = dict(unit_options(files[f"/etc/systemd/system/{lay.gateway_unit}"].content))
    cmd = render["ExecStart"].split()
    assert cmd[:3] == ["/usr/bin/python3", "-I", f"{lay.gateway_lib}/gateway.py"] and cmd[2] in files
    assert (
        cmd[cmd.index("--env") + 1] == lay.gateway_env_file == render["ConditionPathExists"] and lay.gateway_env_file in written
    )
    assert cmd[cmd.index("--key-file") + 1] == lay.api_key_file and render["After"] == lay.prepare_unit
    assert dict(unit_options(files["/etc/systemd/system/nginx.service.d/gpufleet.conf"].content))["Requires"] == lay.gateway_unit
    gw_env = next(f["content"] for f in doc["write_files"] if f["path"] == lay.gateway_env_file)
    values = gateway.from_env(gateway.parse_env(gw_env))  # what the node-side renderer reads back
    assert argv[argv.index("--host") + 1] == "127.0.0.1" and argv[argv.index("--port") + 1] == str(values.vllm_port)
    assert values.serving_port == fleet.spec.serving.port and values.health_path == fleet.spec.load_balancer.health_check.path
    # The exporters bind 127.0.0.1 on the ports the gateway's metrics server proxies, named in the same file.
    for unit, var in (
        ("prometheus-node-exporter.service.d/gpufleet.conf", "GATEWAY_NODE_EXPORTER_PORT"),
        ("dcgm-exporter.service", "GATEWAY_DCGM_EXPORTER_PORT"),
    ):
        opts = unit_options(files[f"/etc/systemd/system/{unit}"].content)
        assert ("EnvironmentFile", lay.gateway_env_file) in opts and var in gateway.parse_env(gw_env)
        cmd = [v for k, v in opts if k == "ExecStart" and v][0].split()
        assert any(word.endswith(f"127.0.0.1:${{{var}}}") for word in cmd)  # --address ADDR or --web.listen-address=ADDR
    # dcgm-exporter reads the counters file the recipe downloads (its -f default is installed by no package)
    dcgm = [v for k, v in unit_options(files["/etc/systemd/system/dcgm-exporter.service"].content) if k == "ExecStart"][0]
    counters = next(d for d in r.downloads if d.name == "dcgm-exporter-counters")
    assert dcgm.split()[-2:] == ["-f", counters.dest] and counters.mode == "0644"


@pytest.mark.parametrize("stack", STACKS)
def test_cloud_init_schema(stack, tmp_path):
    f = tmp_path / "user-data"
    f.write_text(userdata.render(validation.load_fleet(stack, ROOT), "llm-node"))
    run = subprocess.run([require("cloud-init"), "schema", "--config-file", str(f)], capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr


def test_a_value_systemd_would_interpret_is_refused():
    fleet = validation.load_fleet(STACKS[0], ROOT)
    spec = fleet.spec.model_copy(update={"region": "cn-hangzhou\nMODEL_SHA256=0"})
    import msgspec

    with pytest.raises(ValueError, match="GPUFLEET_REGION"):
        userdata.environment(msgspec.structs.replace(fleet, spec=spec), "r")


@pytest.mark.parametrize("recipe", recipe_names())
def test_prepare_program_passes_shellcheck(recipe, tmp_path):
    r = load_recipe(recipe)
    f = tmp_path / "gpufleet-prepare"
    f.write_text(node.file(r, f"{r.layout.bin}/gpufleet-prepare").content)
    run = subprocess.run([require("shellcheck"), "-S", "style", str(f)], capture_output=True, text=True)
    assert run.returncode == 0, run.stdout


@pytest.mark.parametrize("recipe", recipe_names())
def test_drain_command_passes_shellcheck(recipe, tmp_path):
    r = load_recipe(recipe)
    f = tmp_path / "gpufleet-drain"
    f.write_text(node.file(r, r.layout.drain_command).content)
    run = subprocess.run([require("shellcheck"), "-S", "style", str(f)], capture_output=True, text=True)
    assert run.returncode == 0, run.stdout


def _systemd_analyze() -> str:
    return require("systemd-analyze", "systemd")


def _root_with(recipe, tmp: Path, vllm_exists: bool = True) -> Path:
    """A root holding the recipe's files and an executable at the venv path (vLLM itself needs a GPU). Skips (fails
    under CI=true) without systemd-analyze, before copying systemd's units, which every caller verifies with it."""
    _systemd_analyze()
    root = tmp / "root"
    # systemd's own units (sysinit.target, ...) from this machine, so that verify loads the dependency tree
    shutil.copytree("/lib/systemd/system", root / "usr/lib/systemd/system", symlinks=True)
    for f in node.files(recipe):
        p = root / f.path.lstrip("/")
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(f.content)
        p.chmod(int(f.mode, 8))
    for exe in ("/usr/bin/python3", "/usr/bin/systemctl", "/usr/local/bin/dcgm-exporter"):  # what the other units run
        p = root / exe.lstrip("/")
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text("#!/bin/sh\n")
        p.chmod(0o755)
    if vllm_exists:
        exe = root / recipe.layout.venv.lstrip("/") / "bin/vllm"
        exe.parent.mkdir(parents=True, exist_ok=True)
        exe.write_text("#!/bin/sh\n")
        exe.chmod(0o755)
    return root


def _verify(root: Path, unit: str) -> list[str]:
    run = subprocess.run(
        [_systemd_analyze(), "verify", f"--root={root}", str(root / "etc/systemd/system" / unit)], capture_output=True, text=True
    )
    return [line for line in (run.stdout + run.stderr).splitlines() if unit in line or "executable" in line]


@pytest.mark.parametrize("recipe", recipe_names())
def test_units_pass_systemd_analyze_verify(recipe, tmp_path):
    r = load_recipe(recipe)
    root = _root_with(r, tmp_path)
    for unit in (r.layout.unit, r.layout.prepare_unit, r.layout.gateway_unit, "dcgm-exporter.service", r.layout.metrics_unit,
                 r.layout.spot_unit):  # fmt: skip
        assert not _verify(root, unit), _verify(root, unit)


def test_verify_catches_a_bare_command_name(tmp_path):
    """The check can fail: the old `ExecStart=vllm serve` form is refused by the same call."""
    r = load_recipe(recipe_names()[0])
    root = _root_with(r, tmp_path)
    unit = root / "etc/systemd/system" / r.layout.unit
    unit.write_text(re.sub(r"(?m)^ExecStart=.*$", "ExecStart=vllm serve /data/models/current", unit.read_text()))
    assert any("vllm" in line and "not executable" in line for line in _verify(root, r.layout.unit))


def _security(root: Path, unit: str) -> tuple[float, str]:
    run = subprocess.run(
        [_systemd_analyze(), "security", "--offline=true", f"--root={root}", "--no-pager", unit],
        capture_output=True,
        text=True,
    )
    m = re.search(r"Overall exposure level for \S+: ([0-9.]+)", run.stdout + run.stderr)
    assert m, run.stdout + run.stderr
    return float(m.group(1)), run.stdout


@pytest.mark.parametrize("recipe", recipe_names())
def test_vllm_unit_security_score(recipe, tmp_path):
    r = load_recipe(recipe)
    score, table = _security(_root_with(r, tmp_path), r.layout.unit)
    assert score <= SECURITY_MAX, table
    assert score == SECURITY_SCORE, f"score changed to {score}: update SECURITY_SCORE and docs/node.md\n{table}"


@pytest.mark.parametrize("recipe", recipe_names())
def test_sandbox_leaves_a_gpu_process_working(recipe):
    """What a CUDA process needs (issue 14 item 3); unverified on a GPU here, see docs/node.md."""
    r = load_recipe(recipe)
    text = node.file(r, f"/etc/systemd/system/{r.layout.unit}").content
    opts = unit_options(text)
    keys = {k for k, _ in opts}
    values = {k: [v for kk, v in opts if kk == k] for k in keys}
    assert values["User"] == [r.layout.user] and r.layout.user != "root"
    assert "ExecStartPre" not in keys and "PrivateDevices" not in keys and "MemoryDenyWriteExecute" not in keys
    assert values["NoNewPrivileges"] == ["yes"] and values["ProtectSystem"] == ["strict"]
    assert values["ProtectHome"] == ["yes"] and values["PrivateTmp"] == ["yes"] and values["CapabilityBoundingSet"] == [""]
    allowed = {v.split()[0] for v in values["DeviceAllow"]}
    assert {"char-nvidia-frontend", "char-nvidia-uvm", "char-nvidia-caps", "/dev/nvidiactl", "/dev/nvidia-uvm"} <= allowed
    assert "/dev/nvidia-uvm-tools" in allowed
    env = dict(kv.split("=", 1) for v in values["Environment"] for kv in v.split())
    cache = f"/var/cache/{values['CacheDirectory'][0]}/"
    assert all(env[k].startswith(cache) for k in ("VLLM_CACHE_ROOT", "TRITON_CACHE_DIR", "HF_HOME"))
    assert "/dev/shm" in values["ReadWritePaths"]


def test_vllm_args_come_from_the_spec():
    fleet = validation.load_fleet("alicloud-cn-hangzhou-dev", ROOT)
    args = userdata.vllm_args(fleet)
    assert args[args.index("--quantization") + 1] == "awq"
    assert args[args.index("--port") + 1] == str(fleet.spec.serving.gateway.vllm_port)
    assert args[args.index("--host") + 1] == "127.0.0.1"


@pytest.mark.parametrize("recipe", recipe_names())
def test_nginx_is_pinned_and_an_unconfirmed_version_blocks_the_build(recipe, tmp_path):
    """The gateway's nginx comes from the recipe's apt step; while its Ubuntu point release is unconfirmed
    (version null), `image build` refuses the recipe and the step's check stops with an error (exit 2)."""
    from gpufleet.images.steps import build_blockers, render

    r = load_recipe(recipe)
    pinned = {p.name: p for p in r.apt_packages}
    assert {"nginx", "nginx-common"} <= set(pinned) and all(pinned[n].repo == "ubuntu" for n in ("nginx", "nginx-common"))
    unconfirmed = [n for n in ("nginx", "nginx-common") if pinned[n].version is None]
    blocked = {path for path, _ in build_blockers(r)}
    for name in unconfirmed:
        assert f"recipe.apt_packages.{r.apt_packages.index(pinned[name])}.version" in blocked
    if unconfirmed:
        check = tmp_path / "check.sh"
        check.write_text(next(s for s in render(r) if s.name == "apt-packages").check)
        run = subprocess.run(["bash", str(check)], capture_output=True, text=True)
        assert run.returncode == 2 and "nginx" in run.stderr, run.stderr


@pytest.mark.parametrize("recipe", recipe_names())
def test_node_agent_units_are_sandboxed_like_vllm(recipe, tmp_path):
    """The agent's units (docs/scaling-node.md) are held to the serving unit's exposure bound."""
    r = load_recipe(recipe)
    root = _root_with(r, tmp_path)
    for unit in (r.layout.metrics_unit, r.layout.spot_unit):
        score, table = _security(root, unit)
        assert score <= SECURITY_MAX, table
