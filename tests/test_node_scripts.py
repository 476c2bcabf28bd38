"""The node's boot scripts from user-data, run for real with bash.

The cloud CLIs they call are stand-ins on PATH that behave like the real ones where it matters (coscli,
like the real one, refuses to run without a config file holding credentials or a CvmRole mode); the
scripts' absolute paths are moved into a temporary folder. What is checked: the weights are fetched once,
verified and unpacked; a wrong sha256 leaves no model behind; the key lands in a 0600 file."""

import hashlib
import io
import os
import stat
import subprocess
import tarfile
from pathlib import Path

import pytest
import yaml
from gpufleet.components import userdata
from gpufleet.components.registry import profile
from gpufleet.images.recipes import load_recipe, recipe_names
from gpufleet.stacks import loader

ROOT = Path(__file__).resolve().parents[1]
STACKS = ["alicloud-cn-hangzhou-dev", "tencentcloud-ap-guangzhou-dev"]
ROLE = "llm-node-role"
KEY = "k-5f2b9c"

STUBS = {
    # ossutil cp SRC DST --force --mode EcsRamRole --ecs-role-name ROLE -e ENDPOINT (both needed without a config)
    "ossutil": """#!/bin/bash
set -eu
echo "ossutil $*" >> "$CALLS"
[ "$1 $4 $5 $6 $7" = "cp --force --mode EcsRamRole --ecs-role-name" ] || { echo "ossutil: want EcsRamRole and a role" >&2; exit 2; }
[ "$9" = -e ] && [ -n "${10}" ] || { echo "ossutil: endpoint is empty" >&2; exit 2; }
echo "$8 ${10}" > "$CALLS.oss"
cp "$FIXTURE" "$3"
""",
    # coscli --config-path FILE cp SRC DST; without a config it fails as the real one does
    "coscli": """#!/bin/bash
set -eu
echo "coscli $*" >> "$CALLS"
if [ "$1" != --config-path ]; then echo "missing parameter SecretID" >&2; exit 1; fi
case "$2" in *.yaml) ;; *) echo "config file need end with .yaml" >&2; exit 1 ;; esac
cp "$2" "$CALLS.cos.yaml"
[ "$3" = cp ] || exit 2
cp "$FIXTURE" "$5"
""",
    "aliyun": """#!/bin/bash
echo "aliyun $*" >> "$CALLS"
printf '{"RequestId": "r", "SecretName": "s", "SecretData": "%s"}\\n' "$SECRET"
""",
    "tccli": """#!/bin/bash
echo "tccli $*" >> "$CALLS"
printf '{"RequestId": "r", "SecretName": "s", "SecretString": "%s"}\\n' "$SECRET"
""",
}


def _archive(path: Path) -> str:
    data = b'{"architectures": ["Qwen2ForCausalLM"]}'
    with tarfile.open(path, "w") as tar:
        info = tarfile.TarInfo("config.json")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _node(stack: str, tmp: Path, sha256: str | None = None) -> dict:
    """Write the user-data files under tmp (paths moved there) and return the environment to run them in."""
    moved = {"/etc/gpufleet": str(tmp / "etc"), "/data/models": str(tmp / "models"), "/run/gpufleet": str(tmp / "run")}

    def move(text: str) -> str:
        for old, new in moved.items():
            text = text.replace(old, new)
        return text

    fixture = tmp / "fixture.tar"
    real_sha = _archive(fixture)
    doc = yaml.safe_load(userdata.render(loader.load_fleet(stack, ROOT), ROLE))
    for f in doc["write_files"]:
        path = Path(move(f["path"])) if f["path"].startswith(tuple(moved)) else tmp / "sbin" / Path(f["path"]).name
        path.parent.mkdir(parents=True, exist_ok=True)
        text = move(f["content"])
        if path.name == "fleet.env":
            spec_sha = loader.load_fleet(stack, ROOT).spec.model.sha256
            text = text.replace(spec_sha, sha256 or real_sha).replace("API_KEY_SECRET=\n", "API_KEY_SECRET=llm-api-key\n")
        path.write_text(text)
        path.chmod(int(f["permissions"], 8))
    bin_dir = tmp / "bin"
    bin_dir.mkdir()
    for name, body in STUBS.items():
        (bin_dir / name).write_text(body)
        (bin_dir / name).chmod(0o755)
    return {
        **os.environ,
        "PATH": f"{bin_dir}:{os.environ['PATH']}",
        "CALLS": str(tmp / "calls"),
        "FIXTURE": str(fixture),
        "SECRET": KEY,
        "HOME": str(tmp),
    }


def _run(tmp: Path, script: str, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", str(tmp / "sbin" / script)], env=env, capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("stack", STACKS)
def test_fetch_model_downloads_verifies_unpacks_once(stack, tmp_path):
    env = _node(stack, tmp_path)
    first = _run(tmp_path, "gpufleet-fetch-model", env)
    assert first.returncode == 0, first.stderr
    assert (tmp_path / "models" / "current" / "config.json").read_text().startswith('{"architectures"')
    assert not (tmp_path / "models" / "weights.tar").exists()  # the archive is removed after unpacking
    again = _run(tmp_path, "gpufleet-fetch-model", env)
    assert again.returncode == 0 and len((tmp_path / "calls").read_text().splitlines()) == 1  # second boot: no download
    if stack.startswith("alicloud"):
        assert (tmp_path / "calls.oss").read_text().split() == [ROLE, "oss-cn-hangzhou-internal.aliyuncs.com"]
    if stack.startswith("tencentcloud"):
        cfg = yaml.safe_load((tmp_path / "calls.cos.yaml").read_text())["cos"]
        assert cfg["base"]["mode"] == "CvmRole" and cfg["base"]["cvmrolename"] == ROLE
        assert cfg["buckets"] == [
            {"name": "gpufleet-models-ap-guangzhou", "alias": "gpufleet-models-ap-guangzhou", "region": "ap-guangzhou"}
        ]
        config_path = (tmp_path / "calls").read_text().split()[2]
        assert config_path.endswith(".yaml") and not Path(config_path).exists()  # removed on exit


@pytest.mark.parametrize("stack", STACKS)
def test_fetch_model_refuses_a_wrong_checksum_and_leaves_no_model(stack, tmp_path):
    env = _node(stack, tmp_path, sha256="0" * 64)
    r = _run(tmp_path, "gpufleet-fetch-model", env)
    assert r.returncode != 0 and "FAILED" in r.stdout + r.stderr
    assert not (tmp_path / "models" / "current").exists()


@pytest.mark.parametrize("stack", STACKS)
def test_fetch_secret_writes_the_key_to_a_private_file(stack, tmp_path):
    env = _node(stack, tmp_path)
    r = _run(tmp_path, "gpufleet-fetch-secret", env)
    assert r.returncode == 0, r.stderr
    secret = tmp_path / "run" / "secret.env"
    assert secret.read_text() == f"VLLM_API_KEY={KEY}\n" and stat.S_IMODE(secret.stat().st_mode) == 0o600
    call = (tmp_path / "calls").read_text()
    assert ("--use-cvm-role" in call) if stack.startswith("tencentcloud") else (f"--ram-role-name {ROLE}" in call)
    assert KEY not in r.stdout + r.stderr


def _called(tmp: Path) -> set[str]:
    return {line.split()[0] for line in (tmp / "calls").read_text().splitlines()}


@pytest.mark.parametrize("stack", STACKS)
def test_the_scripts_call_only_the_cloud_tools_the_images_install(stack, tmp_path):
    env = _node(stack, tmp_path)
    for script in ("gpufleet-fetch-model", "gpufleet-fetch-secret"):
        assert _run(tmp_path, script, env).returncode == 0
    cloud = stack.split("-")[0]
    assert _called(tmp_path) == set(profile(cloud).node_tools)


@pytest.mark.parametrize("recipe", recipe_names())
def test_every_recipe_installs_the_tools_of_every_cloud_it_is_copied_to(recipe):
    r = load_recipe(recipe)
    for cloud in r.regions:
        missing = set(profile(cloud).node_tools) - r.commands()
        assert not missing, f"{recipe} is copied to {cloud} but does not install {sorted(missing)}"
