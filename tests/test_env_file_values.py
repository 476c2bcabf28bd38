"""A spec value written to the node's environment files is refused by spec validation when systemd's EnvironmentFile=
check would refuse it (components/userdata.py): exit 2 naming the field, never the ValueError traceback the render
raised inside the Pulumi program (`~` in a health-check path or an https:// model source passed the spec before).
"""

import copy
import os
import string
import subprocess
import sys
from pathlib import Path

import pytest

from gpufleet import validation
from gpufleet.components import userdata
from gpufleet.errors import UserError
from gpufleet.stacks import loader

ROOT = Path(__file__).resolve().parents[1]
STACKS = {"alicloud": "alicloud-cn-hangzhou-prod", "tencentcloud": "tencentcloud-ap-guangzhou-prod"}


def _preview(stack: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "GPUFLEET_NOW": "2026-12-01T00:00:00Z", "COLUMNS": "400"}
    gpufleet = Path(sys.executable).with_name("gpufleet")
    return subprocess.run([str(gpufleet), "preview", "--stack", stack], capture_output=True, text=True, env=env, timeout=180)


@pytest.mark.parametrize("cloud", sorted(STACKS))
def test_a_tilde_in_the_health_check_path_is_refused_by_the_cli(project, cloud):
    path = project / "stacks" / f"Pulumi.{STACKS[cloud]}.yaml"
    text = path.read_text()
    assert "    load_balancer:\n" in text
    if "path: /health," in text:
        text = text.replace("path: /health,", "path: /health~z,")
    else:
        text = text.replace("    load_balancer:\n", "    load_balancer:\n      health_check: {path: /health~z}\n")
    path.write_text(text)
    result = _preview(STACKS[cloud])
    out = result.stdout + result.stderr
    assert result.returncode == 2, out
    assert f"stacks/Pulumi.{STACKS[cloud]}.yaml: fleet.load_balancer.health_check.path:" in out
    assert "'~' is not one of them" in out and "EnvironmentFile=" in out
    assert "Traceback" not in out and "ValueError" not in out


def test_a_tilde_in_an_https_model_source_is_refused_by_the_cli(project):
    stack = STACKS["tencentcloud"]
    path = project / "stacks" / f"Pulumi.{stack}.yaml"
    text = path.read_text()
    old = "source: cos://gpufleet-models-ap-guangzhou-1250000000/qwen2.5-7b-instruct.tar"
    assert old in text
    path.write_text(text.replace(old, "source: https://models.example.com/~team/qwen2.5-7b-instruct.tar"))
    result = _preview(stack)
    out = result.stdout + result.stderr
    assert result.returncode == 2, out
    assert f"stacks/Pulumi.{stack}.yaml: fleet.model.source:" in out and "holds '~'" in out
    assert "Traceback" not in out and "ValueError" not in out


def _raw(cloud: str) -> dict:
    _, config = loader.read_stack_config(STACKS[cloud], ROOT)
    return copy.deepcopy(config[loader.CONFIG_KEY])


def _renders_or_is_refused(raw: dict, field: str) -> bool:
    """True when the spec refuses the value naming `field`; False when it passes and the user-data renders."""
    try:
        fleet = validation.validate(raw, stack="x", file="stacks/Pulumi.x.yaml", sizing=False)
    except UserError as e:
        assert any(f"fleet.{field}:" in str(p) for p in e.problems), [str(p) for p in e.problems]
        return True
    userdata.render(fleet, "role", "group", "sg-1")  # raises ValueError if the environment file check refuses a value
    return False


@pytest.mark.parametrize("cloud", sorted(STACKS))
def test_every_printable_character_in_a_health_check_path_is_refused_or_rendered(cloud):
    refused = []
    for c in string.printable.strip():
        raw = _raw(cloud)
        raw["load_balancer"].setdefault("health_check", {})["path"] = f"/health{c}z"
        if _renders_or_is_refused(raw, "load_balancer.health_check.path"):
            refused.append(c)
    assert "~" in refused and "/" not in refused and "-" not in refused


def test_every_printable_character_in_an_https_source_is_refused_or_rendered():
    refused = []
    for c in string.printable.strip():
        raw = _raw("tencentcloud")
        raw["model"]["source"] = f"https://models.example.com/a{c}b.tar"
        if _renders_or_is_refused(raw, "model.source"):
            refused.append(c)
    assert "~" in refused and "=" not in refused and "." not in refused


def test_a_health_check_path_message_names_what_is_wrong_with_it():
    """A path of allowed characters that is only too long is told its length and the limit (201: '/' and 200 more, the
    spec's pattern), not the character rule it meets; two refused characters read 'are not'."""
    from pydantic import ValidationError

    from gpufleet.stacks.spec import HealthCheck

    assert HealthCheck(path="/" + "a" * 200).path == "/" + "a" * 200
    for path, says in (
        ("/" + "a" * 201, "is 202 characters: write a path of at most 201"),
        ("/a=b?c", "('=' '?' are not of them:"),
        ("/a~", "('~' is not one of them:"),
    ):
        with pytest.raises(ValidationError) as exc:
            HealthCheck(path=path)
        assert says in str(exc.value), str(exc.value)
