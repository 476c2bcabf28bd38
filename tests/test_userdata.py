"""The rendered user-data checked by the tools that consume it: cloud-init schema, shellcheck, systemd-analyze."""

import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from gpufleet.components import userdata
from gpufleet.stacks import loader

ROOT = Path(__file__).resolve().parents[1]
STACKS = loader.stack_names(ROOT)


def rendered(stack):
    return userdata.render(loader.load_fleet(stack, ROOT), "llm-node")


@pytest.mark.parametrize("stack", STACKS)
def test_cloud_init_parses_and_has_the_unit(stack):
    text = rendered(stack)
    assert text.startswith("#cloud-config\n")
    doc = yaml.safe_load(text)
    paths = {f["path"]: f for f in doc["write_files"]}
    assert set(paths) >= {
        "/etc/systemd/system/vllm.service",
        "/usr/local/sbin/gpufleet-fetch-model",
        "/usr/local/sbin/gpufleet-fetch-secret",
    }
    assert all(isinstance(f["permissions"], str) for f in doc["write_files"])
    unit = paths["/etc/systemd/system/vllm.service"]["content"]
    assert "Restart=always" in unit and "ExecStartPre=/usr/local/sbin/gpufleet-fetch-model" in unit
    fleet = loader.load_fleet(stack, ROOT)
    assert f"--max-model-len {fleet.spec.serving.max_model_len}" in unit
    assert fleet.spec.model.sha256 in paths["/etc/gpufleet/fleet.env"]["content"]


@pytest.mark.skipif(not shutil.which("cloud-init"), reason="Debian cloud-init not installed")
@pytest.mark.parametrize("stack", STACKS)
def test_cloud_init_schema(stack, tmp_path):
    f = tmp_path / "user-data"
    f.write_text(rendered(stack))
    run = subprocess.run(["cloud-init", "schema", "--config-file", str(f)], capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr


def _shellcheck():
    return shutil.which("shellcheck")


@pytest.mark.skipif(not _shellcheck(), reason="shellcheck not installed")
@pytest.mark.parametrize("stack", STACKS)
@pytest.mark.parametrize("script", ["fetch-model", "fetch-secret"])
def test_embedded_scripts_pass_shellcheck(stack, script, tmp_path):
    scripts = userdata.render_scripts(loader.load_fleet(stack, ROOT), "llm-node")
    f = tmp_path / script
    f.write_text(scripts[script])
    run = subprocess.run([_shellcheck(), "-S", "style", str(f)], capture_output=True, text=True)
    assert run.returncode == 0, run.stdout


@pytest.mark.skipif(not shutil.which("systemd-analyze"), reason="systemd-analyze not installed")
@pytest.mark.parametrize("stack", STACKS)
def test_unit_passes_systemd_analyze(stack, tmp_path):
    scripts = userdata.render_scripts(loader.load_fleet(stack, ROOT), "llm-node")
    unit = tmp_path / "vllm.service"
    # Point the unit at stand-in executables so that verify checks the unit, not this machine's packages.
    text = scripts["vllm.service"]
    for exe in ("/usr/local/sbin/gpufleet-fetch-model", "/usr/local/sbin/gpufleet-fetch-secret"):
        text = text.replace(exe, "/bin/true")
    text = text.replace("ExecStart='vllm'", "ExecStart=/bin/true").replace("ExecStart=vllm", "ExecStart=/bin/true")
    unit.write_text(text)
    run = subprocess.run(["systemd-analyze", "verify", str(unit)], capture_output=True, text=True)
    errors = [l for l in (run.stdout + run.stderr).splitlines() if "vllm.service" in l]
    assert not errors, errors


def test_vllm_args_come_from_the_spec():
    fleet = loader.load_fleet("alicloud-cn-hangzhou-dev", ROOT)
    args = userdata.vllm_args(fleet)
    assert args[args.index("--quantization") + 1] == "awq"
    assert args[args.index("--port") + 1] == str(fleet.spec.serving.gateway.vllm_port)
    assert args[args.index("--host") + 1] == "127.0.0.1"
