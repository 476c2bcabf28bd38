"""Usage files follow a stack by the `gpufleet:usage` key of its stack file (a path from the project folder), so a
copied or renamed stack keeps its usage; without the key and without cost/usage/<name>.yaml a note says the defaults
are used; a wrong key is `file: config.gpufleet:usage: message` with the fix, exit 2."""

import os
import subprocess
import sys
from decimal import Decimal
from pathlib import Path

import pytest
import yaml

from gpufleet.cli.options import resolve_stack
from gpufleet.cost import usage
from gpufleet.errors import UserError

ROOT = Path(__file__).resolve().parents[2]
PROD = ROOT / "stacks" / "Pulumi.alicloud-cn-hangzhou-prod.yaml"
PROD_USAGE = yaml.safe_load((ROOT / "cost" / "usage" / "alicloud-cn-hangzhou-prod.yaml").read_text())
DEFAULTS = yaml.safe_load((ROOT / "src" / "gpufleet" / "cost" / "data" / "usage-defaults.yaml").read_text())


def copy_of_prod(tmp_path, name: str, key=...) -> str:
    """The prod stack file copied under a new name outside stacks/, with its usage key as given (... = as shipped)."""
    doc = yaml.safe_load(PROD.read_text())
    if key is None:
        doc["config"].pop("gpufleet:usage", None)
    elif key is not ...:
        doc["config"]["gpufleet:usage"] = key
    f = tmp_path / f"Pulumi.{name}.yaml"
    f.write_text(yaml.safe_dump(doc, sort_keys=False))
    return str(f)


def test_the_shipped_prod_stack_names_its_usage_file():
    assert yaml.safe_load(PROD.read_text())["config"]["gpufleet:usage"] == "cost/usage/alicloud-cn-hangzhou-prod.yaml"


def test_a_copied_stack_keeps_its_usage_by_the_key(tmp_path):
    name = resolve_stack(copy_of_prod(tmp_path, "alicloud-cn-hangzhou-copy"))
    u = usage.load(name)
    assert u.files == ("cost/usage/alicloud-cn-hangzhou-prod.yaml",) and u.notes == ()
    assert DEFAULTS["lb_egress_gb"] is None  # unknown unless a usage file says
    assert u.lb_egress_gb == Decimal(str(PROD_USAGE["lb_egress_gb"]))


def test_without_the_key_and_without_a_file_a_note_says_defaults_are_used(tmp_path):
    name = resolve_stack(copy_of_prod(tmp_path, "alicloud-cn-hangzhou-nokey", key=None))
    u = usage.load(name)
    assert u.files == () and u.lb_egress_gb is None
    (note,) = u.notes
    assert "no `gpufleet:usage` key" in note and "cost/usage/alicloud-cn-hangzhou-nokey.yaml" in note and "defaults" in note
    r = subprocess.run(
        [
            sys.executable,
            "-c",
            "from gpufleet.cli import main; main()",
            "cost",
            "estimate",
            "-s",
            str(tmp_path / f"Pulumi.{name}.yaml"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "COLUMNS": "300"},
    )
    # the terminal wraps the note (the temporary path is long): read it with the line breaks undone
    assert r.returncode == 0 and note in " ".join(r.stdout.split()), r.stderr
    # the file named by the stack's name still applies without the key (the stacks of the project keep working)
    assert usage.load("alicloud-cn-hangzhou-prod").files == ("cost/usage/alicloud-cn-hangzhou-prod.yaml",)


@pytest.mark.parametrize(
    ("key", "message"),
    [
        ("cost/usage/nope.yaml", "no such file cost/usage/nope.yaml"),
        ("/etc/usage.yaml", "is an absolute path"),
        (12, "expected a file path, got 12"),
        ("a" * 300 + ".yaml", "no such file aaa"),  # longer than a file name can be: was an OSError traceback
        # outside the project (read, as an absolute path is not), and a folder (said to be no such file)
        ("cost/../../etc/hostname", "cost/../../etc/hostname leads out of the project folder"),
        ("cost/usage", "cost/usage is a folder, not a file"),
    ],
)
def test_a_wrong_key_names_the_file_the_field_and_the_fix(tmp_path, key, message):
    name = resolve_stack(copy_of_prod(tmp_path, "alicloud-cn-hangzhou-bad", key=key))
    with pytest.raises(UserError) as exc:
        usage.load(name)
    text = str(exc.value)
    assert f"Pulumi.{name}.yaml: config.gpufleet:usage: " in text and message in text
    assert "gpufleet:usage: cost/usage/alicloud-cn-hangzhou-bad.yaml" in text  # the fix


def test_a_bad_usage_file_named_by_the_key_is_reported_as_file_field_fix(tmp_path, monkeypatch):
    project = tmp_path / "project"
    (project / "stacks").mkdir(parents=True)
    (project / "Pulumi.yaml").write_text("name: gpufleet\n")
    (project / "my-usage.yaml").write_text("lb_egres_gb: 10\nnat_cu_hours: -1\n")
    monkeypatch.setenv("GPUFLEET_PROJECT", str(project))
    name = resolve_stack(copy_of_prod(tmp_path, "alicloud-cn-hangzhou-x", key="my-usage.yaml"))
    with pytest.raises(UserError) as exc:
        usage.load(name)
    text = str(exc.value)
    assert "my-usage.yaml: lb_egres_gb: unknown usage key (did you mean 'lb_egress_gb'?)" in text
    assert "my-usage.yaml: nat_cu_hours: must be a number >= 0" in text
