"""The stand-in cloud CLIs of the node boot test (tests/node/standin_cli.py) against the stacks' recorded node
roles: they must refuse what the real services refuse, or the boot test would prove nothing.

The boot test itself (tests/node/test_boot.py) runs the image's prepare program with them on a booted node.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gpufleet.images.recipes import load_recipe, recipe_names
from gpufleet.preview import preview_stack
from gpufleet.registry import profile

ROOT = Path(__file__).resolve().parents[1]
STANDIN = Path(__file__).parent / "node" / "standin_cli.py"
KEY = "k-5f2b9c"


def _policy(stack):
    inv = preview_stack(stack, ROOT)
    # the node's role and policy (the fleet also declares roles for the drain hook and the SCF scaler)
    role = next(
        r["inputs"]
        for r in inv.resources
        if r["type"] in ("alicloud:ram/role:Role", "tencentcloud:Cam/role:Role") and r["name"].endswith("-role-node")
    )
    pol = next(
        r["inputs"]
        for r in inv.resources
        if r["type"] in ("alicloud:ram/policy:Policy", "tencentcloud:Cam/policy:Policy") and r["name"].endswith("-role-node")
    )
    return role.get("roleName") or role["name"], json.loads(pol.get("policyDocument") or pol["document"])


def _cli(tmp: Path, name: str, args: list[str], stack: str, policy=None, source=None, secret=None):
    role, recorded = _policy(stack)
    fixture = tmp / "weights.tar"
    fixture.write_bytes(b"weights")
    (tmp / "config.json").write_text(
        json.dumps(
            {
                "role": role,
                "region": stack.split("-", 1)[1].rsplit("-", 1)[0],
                "policy": recorded if policy is None else policy,
                "objects": {source: str(fixture)} if source else {},
                "secrets": {secret: KEY} if secret else {},
            }
        )
    )
    exe = tmp / name
    exe.write_text(STANDIN.read_text())
    exe.chmod(0o755)
    env = {**os.environ, "STANDIN_DIR": str(tmp)}
    return role, subprocess.run([sys.executable, str(exe), *args], capture_output=True, text=True, env=env, timeout=30)


TC = "tencentcloud-ap-guangzhou-dev"
SRC = "cos://gpufleet-models-ap-guangzhou-1250000000/qwen2.5-7b-instruct-awq.tar"


def _cos_config(tmp: Path, role: str) -> Path:
    cfg = tmp / "cos.yaml"
    cfg.write_text(
        f"cos:\n  base:\n    mode: CvmRole\n    cvmrolename: {role}\n  buckets:\n"
        f"    - name: gpufleet-models-ap-guangzhou-1250000000\n      region: ap-guangzhou\n"
    )
    return cfg


def test_coscli_downloads_with_the_recorded_role(tmp_path):
    role, _ = _policy(TC)
    cfg = _cos_config(tmp_path, role)
    _, r = _cli(tmp_path, "coscli", ["--config-path", str(cfg), "cp", SRC, str(tmp_path / "out")], TC, source=SRC)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "out").read_bytes() == b"weights"


def test_coscli_needs_head_bucket_in_the_policy(tmp_path):
    role, policy = _policy(TC)
    cut = {**policy, "statement": [s for s in policy["statement"] if "name/cos:HeadBucket" not in s["action"]]}
    cfg = _cos_config(tmp_path, role)
    _, r = _cli(tmp_path, "coscli", ["--config-path", str(cfg), "cp", SRC, str(tmp_path / "out")], TC, policy=cut, source=SRC)
    assert r.returncode != 0 and "HeadBucket: 403" in r.stderr


def test_coscli_without_a_config_file_fails_like_the_real_one(tmp_path):
    _, r = _cli(tmp_path, "coscli", ["cp", SRC, str(tmp_path / "out")], TC, source=SRC)
    assert r.returncode != 0 and "SecretID" in r.stderr


@pytest.mark.parametrize("version, ok", [("SSM_Current", True), ("latest", False)])
def test_tccli_secret_version(tmp_path, version, ok):
    args = ["ssm", "GetSecretValue", "--cli-unfold-argument", "--SecretName", "gpufleet-dev-vllm-api-key",
            "--VersionId", version, "--region", "ap-guangzhou", "--use-cvm-role"]  # fmt: skip
    _, r = _cli(tmp_path, "tccli", args, TC, secret="gpufleet-dev-vllm-api-key")
    assert (r.returncode == 0) == ok, r.stderr
    if ok:
        assert json.loads(r.stdout)["SecretString"] == KEY


def test_a_secret_outside_the_policy_is_refused(tmp_path):
    args = ["ssm", "GetSecretValue", "--cli-unfold-argument", "--SecretName", "other-secret",
            "--VersionId", "SSM_Current", "--region", "ap-guangzhou", "--use-cvm-role"]  # fmt: skip
    _, r = _cli(tmp_path, "tccli", args, TC, secret="other-secret")
    assert r.returncode != 0 and "UnauthorizedOperation" in r.stderr


AL = "alicloud-cn-hangzhou-dev"
OSS = "oss://gpufleet-models-cn-hangzhou/qwen2.5-7b-instruct-awq.tar"


@pytest.mark.parametrize("role_ok", [True, False])
def test_ossutil_uses_the_instance_role(tmp_path, role_ok):
    role, _ = _policy(AL)
    given = role if role_ok else "other-role"
    args = ["cp", OSS, str(tmp_path / "out"), "--force", "--mode", "EcsRamRole", "--ecs-role-name", given,
            "-e", "oss-cn-hangzhou-internal.aliyuncs.com"]  # fmt: skip
    _, r = _cli(tmp_path, "ossutil", args, AL, source=OSS)
    assert (r.returncode == 0) == role_ok, r.stderr


def test_ossutil_outside_the_bucket_is_refused(tmp_path):
    role, _ = _policy(AL)
    other = "oss://someone-elses-bucket/x.tar"
    args = ["cp", other, str(tmp_path / "out"), "--force", "--mode", "EcsRamRole", "--ecs-role-name", role,
            "-e", "oss-cn-hangzhou-internal.aliyuncs.com"]  # fmt: skip
    _, r = _cli(tmp_path, "ossutil", args, AL, source=other)
    assert r.returncode != 0 and "AccessDenied" in r.stderr


@pytest.mark.parametrize("recipe", recipe_names())
def test_every_recipe_installs_the_tools_of_every_cloud_it_is_copied_to(recipe):
    r = load_recipe(recipe)
    for cloud in r.regions:
        missing = {t.command for t in profile(cloud).node_tools} - r.commands()
        assert not missing, f"{recipe} is copied to {cloud} but does not install {sorted(missing)}"
