"""The node-side half of images/gateway.py and the log limits, each checked by the tool that reads it:
the renderer run as on the node (files, modes, group, fail-closed), logrotate -d on the rotation file, journald's
own option list for the drop-in, systemd-analyze verify on the oneshot unit."""

from __future__ import annotations

import grp
import os
import stat
import subprocess
from pathlib import Path

import pytest
from conftest import KEY, values
from tools import require

from gpufleet.images import gateway, node
from gpufleet.images.recipes import load_recipe, recipe_names

TEMPLATES = gateway.TEMPLATES


def run_main(tmp_path: Path, env: str, key: str | None, *extra: str) -> tuple[int, Path]:
    """The renderer as the image's oneshot runs it; `key` is the key file as the prepare program writes it."""
    root = tmp_path / "root"
    (tmp_path / "gateway.env").write_text(env)
    if key is not None:
        (tmp_path / "api-key").write_text(key)
    code = gateway.main(
        ["--env", str(tmp_path / "gateway.env"), "--key-file", str(tmp_path / "api-key"), "--root", str(root), *extra]
    )
    return code, root


def test_node_renderer_writes_config_key_map_and_log_limits(tmp_path, capsys):
    code, root = run_main(tmp_path, gateway.env_text(values()), KEY)
    assert code == 0, capsys.readouterr().err
    key_map = root / gateway.KEY_MAP_FILE.lstrip("/")
    info = key_map.stat()
    assert stat.S_IMODE(info.st_mode) == 0o640 and info.st_uid == 0 and info.st_gid == grp.getgrnam("www-data").gr_gid
    assert "Bearer" in key_map.read_text()
    conf = (root / gateway.CONFIG_FILE.lstrip("/")).read_text()
    assert KEY not in conf and gateway.KEY_MAP_FILE in conf  # the key is only in the tmpfs map
    assert (root / gateway.JOURNALD_FILE.lstrip("/")).exists() and (root / gateway.LOGROTATE_FILE.lstrip("/")).exists()


def test_node_renderer_fails_closed_without_the_key(tmp_path, capsys):
    code, root = run_main(tmp_path, gateway.env_text(values()), None)
    assert code == 1
    assert "holds no API key" in capsys.readouterr().err
    code, root = run_main(tmp_path, gateway.env_text(values()), "")  # the prepare program's file for "no secret"
    assert code == 1 and "holds no API key" in capsys.readouterr().err
    assert not (root / gateway.CONFIG_FILE.lstrip("/")).exists()


@pytest.mark.parametrize(
    "key, value",
    [
        ("GATEWAY_SERVING_PORT", "8000;include /etc/shadow"),
        ("GATEWAY_TRUSTED_PROXIES", "0.0.0.0/0;allow all"),
        ("GATEWAY_HEALTH_PATH", "/health { return 200; }"),
        ("GATEWAY_REQUIRE_KEY", "no"),
    ],
)
def test_node_renderer_refuses_a_tampered_environment(tmp_path, key, value, capsys):
    env = gateway.env_map(values())
    env[key] = value
    code, root = run_main(tmp_path, "".join(f"{k}={v}\n" for k, v in env.items()), KEY)
    assert code == 1 and key in capsys.readouterr().err
    assert not (root / gateway.CONFIG_FILE.lstrip("/")).exists()


@pytest.mark.parametrize(
    "bad", ["short", 'sk-0123456789abcdef"; 1; "x', "sk-0123456789abcdef\n", "sk-0123456789 abcdef", "$sk-0123456789abcdef"]
)
def test_key_map_refuses_keys_nginx_would_read(bad):
    with pytest.raises(ValueError) as info:
        gateway.key_map_text([bad])
    assert bad not in str(info.value)  # the message never echoes the key


def test_key_rotation_rewrites_only_the_key_map(tmp_path):
    code, root = run_main(tmp_path, gateway.env_text(values()), KEY)
    conf = root / gateway.CONFIG_FILE.lstrip("/")
    before = conf.stat().st_mtime_ns
    code, root = run_main(tmp_path, gateway.env_text(values()), "sk-rotated-0123456789abcdef", "--key-only")
    assert code == 0 and conf.stat().st_mtime_ns == before
    assert "sk-rotated" in (root / gateway.KEY_MAP_FILE.lstrip("/")).read_text()


def test_logrotate_file_passes_logrotate_debug(tmp_path):
    logrotate = require("logrotate")
    log = tmp_path / "gateway-access.log"
    log.write_text("x\n")
    conf = tmp_path / "gpufleet-gateway"
    conf.write_text(gateway.render(values(), access_log=str(log), pid_file=str(tmp_path / "nginx.pid"))["logrotate"])
    result = subprocess.run(
        [logrotate, "-d", "-f", "-s", str(tmp_path / "state"), str(conf)], capture_output=True, text=True, timeout=30
    )
    out = result.stdout + result.stderr
    assert result.returncode == 0 and "error" not in out.lower(), out
    assert f"rotating pattern: {log}" in out and "14" in out
    conf.write_text(conf.read_text().replace("rotate ", "rotat "))  # the check can fail
    bad = subprocess.run([logrotate, "-d", "-s", str(tmp_path / "state"), str(conf)], capture_output=True, text=True)
    assert bad.returncode != 0 or "error" in (bad.stdout + bad.stderr).lower()


def test_journald_drop_in_uses_only_journald_options():
    reference = Path("/etc/systemd/journald.conf")
    if not reference.exists():
        pytest.skip("no /etc/systemd/journald.conf to read journald's options from")
    known = {line.lstrip("#").split("=", 1)[0] for line in reference.read_text().splitlines() if "=" in line}
    text = gateway.render(values())["journald"]
    used = {line.split("=", 1)[0] for line in text.splitlines() if "=" in line and not line.startswith("#")}
    assert used and used <= known, used - known
    assert "SystemMaxUse=2048M" in text and "MaxRetentionSec=14day" in text


def test_render_unit_passes_systemd_analyze_verify(tmp_path):
    analyze = require("systemd-analyze", "systemd")
    unit = tmp_path / "gpufleet-gateway-render.service"
    recipe = load_recipe(recipe_names()[0])
    unit.write_text(node.file(recipe, f"/etc/systemd/system/{recipe.layout.gateway_unit}").content)
    env = {**os.environ, "SYSTEMD_LOG_LEVEL": "warning"}
    result = subprocess.run([analyze, "verify", str(unit)], capture_output=True, text=True, env=env, timeout=60)
    assert result.returncode == 0 and "gpufleet-gateway-render" not in result.stderr, result.stderr
    unit.write_text(unit.read_text().replace("Type=oneshot", "Type=oneshot-please"))  # the check can fail
    bad = subprocess.run([analyze, "verify", str(unit)], capture_output=True, text=True, env=env, timeout=60)
    assert "oneshot-please" in bad.stderr


@pytest.mark.parametrize("stack", ["alicloud-cn-hangzhou-prod", "tencentcloud-ap-guangzhou-dev"])
def test_gateway_upstream_and_listen_ports_are_the_ones_vllm_and_the_load_balancer_use(stack):
    from gpufleet import validation
    from gpufleet.components import userdata

    fleet = validation.load_fleet(stack, Path(__file__).resolve().parents[2], sizing=False)
    v = gateway.values_from_fleet(fleet)
    argv = userdata.vllm_args(fleet)
    assert argv[argv.index("--host") + 1] == "127.0.0.1"
    assert int(argv[argv.index("--port") + 1]) == v.vllm_port
    conf = gateway.render(v)["nginx"]
    assert f"server 127.0.0.1:{v.vllm_port};" in conf
    assert f"listen {fleet.spec.serving.port};" in conf  # the port the load balancer's backends and health check use
    assert f"location = {fleet.spec.load_balancer.health_check.path} " in conf
