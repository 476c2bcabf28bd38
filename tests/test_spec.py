"""Spec validation: bad stack files give every problem at once, as `file: path: message`, and exit 2."""

import copy
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from gpufleet import validation
from gpufleet.errors import UserError
from gpufleet.stacks import loader

ROOT = Path(__file__).resolve().parents[1]
PROD = "alicloud-cn-hangzhou-prod"


def prod_raw() -> dict:
    _, config = loader.read_stack_config(PROD, ROOT)
    return copy.deepcopy(config[loader.CONFIG_KEY])


def problems(raw: dict) -> list[str]:
    with pytest.raises(UserError) as info:
        validation.validate(raw, stack="x", file="stacks/Pulumi.x.yaml")
    return [str(p) for p in info.value.problems]


def edit(**changes):
    raw = prod_raw()
    for dotted, value in changes.items():
        node = raw
        *parents, leaf = dotted.split("__")
        for key in parents:
            node = node[key]
        node[leaf] = value
    return raw


@pytest.mark.parametrize("stack", loader.stack_names(ROOT))
def test_shipped_stacks_validate(stack):
    fleet = validation.load_fleet(stack, ROOT)
    assert fleet.instance_type.gpu == fleet.spec.gpu.kind


@pytest.mark.parametrize(
    "changes, expected",
    [
        ({"gpu__kind": "A1O"}, "stacks/Pulumi.x.yaml: fleet.gpu.kind: unknown GPU kind 'A1O' (did you mean 'A10'?)"),
        ({"region": "cn-hangzou"}, "fleet.region: unknown alicloud region 'cn-hangzou' (did you mean 'cn-hangzhou'?)"),
        (
            {"zones": ["cn-hangzhou-h", "cn-hangzhou-jj"]},
            "fleet.zones.1: 'cn-hangzhou-jj' is not a zone of cn-hangzhou (did you mean 'cn-hangzhou-j'?)",
        ),
        ({"zones": ["cn-hangzhou-h"]}, "fleet.zones: prod needs at least 2 zones"),
        ({"replicas": {"min": 1, "max": 4}}, "fleet.replicas.min: prod needs at least 2 (is 1)"),
        ({"replicas": {"min": 5, "max": 4}}, "fleet.replicas: min (5) is above max (4)"),
        ({"cloud": "aws"}, "fleet.cloud: unknown cloud 'aws'"),
        ({"billing": {"model": "weekly"}}, "fleet.billing.model: Input should be"),
        ({"billing": {"model": "payg", "spot_price_limit": 3.0}}, "spot_price_limit applies only with model: spot"),
        ({"model__sha256": "abc"}, "fleet.model.sha256: must be 64 lowercase hex"),
        ({"model__source": "s3://bucket/x.tar"}, "fleet.model.source: must be an oss://, cos:// or https:// URL"),
        (
            {"model__source": "https://models.example.com:99999/x.tar"},
            "fleet.model.source: 'https://models.example.com:99999/x.tar': port 99999 is outside 1-65535",
        ),
        (
            {"model__source": "https://10.0.0.999/x.tar"},
            "fleet.model.source: 'https://10.0.0.999/x.tar': its host '10.0.0.999' is",
        ),
        ({"model__source": "https://a..b/x.tar"}, "its host 'a..b' is not an IP address or a host name"),
        # a stack file is committed and its problems go to CI logs: what holds a credential is not repeated
        (
            {"model__source": "https://user:SEKRET123D@models.example.com/q.tar"},
            "fleet.model.source: has credentials in it (user:password@)",
        ),
        (
            {"model__source": "https://models.example.com/q.tar?X-Amz-Signature=SEKRET123E"},
            "('https://models.example.com/q.tar?***' is not)",
        ),
        # a leading space (quoted YAML) or one slash hid it: the error quoted the URL, password and all (finding 2)
        (
            {"model__source": " https://user:SEKRET123D@models.example.com/q.tar"},
            "fleet.model.source: has credentials in it (user:password@)",
        ),
        (
            {"model__source": "https:/user:SEKRET123D@models.example.com/q.tar"},
            "fleet.model.source: has credentials in it (user:password@)",
        ),
        # one string of CLI flags where a mapping goes: named as text, not quoted back (finding 4)
        (
            {"serving__extra_args": "--hf-token hf_SEKRET123A"},
            "fleet.serving.extra_args: Input should be a mapping (its fields indented under the key), got text",
        ),
        (
            {"serving__extra_args": {"hf-overrides": "SEKRET123$C"}},
            "fleet.serving.extra_args: hf-overrides: its value holds '$', which is not allowed",
        ),
        ({"network__ssh_cidrs": ["0.0.0.0/0"]}, "opens SSH to the whole internet"),
        ({"network__ssh_cidrs": ["1.2.3.4/32"] * 2}, "fleet.network.ssh_cidrs: lists 1.2.3.4/32 twice: name each network once"),
        ({"load_balancer__allowed_cidrs": ["0.0.0.0/0"] * 2}, "fleet.load_balancer.allowed_cidrs: lists 0.0.0.0/0 twice"),
        ({"network__vpc_cidr": "8.8.0.0/16"}, "is not a private range"),
        ({"serving__portt": 8000}, "fleet.serving.portt: unknown field"),
        ({"gpu__count": 3}, "fleet.gpu.count: alicloud has no A10 instance with 3 GPUs; available counts: 1, 2, 4, 8"),
        ({"gpu__instance_type": "ecs.gn6i-c4g1.xlarge"}, "fleet.gpu.instance_type: ecs.gn6i-c4g1.xlarge has 1x T4, not 1x A10"),
        ({"image__recipe": "nope"}, "fleet.image.recipe:"),
        ({"gpu__instance_type": ""}, "fleet.gpu.instance_type: is empty: remove it for the smallest size"),
        ({"model__catalog": ""}, "fleet.model.catalog: is empty: remove it to size the model by its name"),
        ({"load_balancer__health_check": {"path": "health"}}, "fleet.load_balancer.health_check.path: must start with /"),
        ({"autoscaling__scale_in_below": 90}, "scale_in_below must be lower than scale_out_above"),
        # a rule in words, not a raw pattern; a trailing or doubled hyphen made names like a--cn-hangzhou-prod-...
        ({"name": "a-"}, "fleet.name: 'a-' is not a fleet name: 2-21 lowercase letters, digits and single -, starting"),
        ({"name": "a--b"}, "fleet.name: 'a--b' is not a fleet name"),
        ({"name_base": "Llm-prod"}, "fleet.name_base: 'Llm-prod' is not a name base"),
    ],
)
def test_bad_input_names_file_field_and_fix(changes, expected):
    found = problems(edit(**changes))
    assert any(expected in p for p in found), found
    assert not any("SEKRET123" in p for p in found), found


@pytest.mark.parametrize(
    "changes, expected",
    [  # the models are strict: what YAML reads as another type is refused, not coerced (true was read as min: 1)
        ({"replicas": {"min": True, "max": 4}}, "fleet.replicas.min: Input should be a valid integer, got true; write a whole"),
        ({"serving__port": "8000"}, "fleet.serving.port: Input should be a valid integer, got text '8000'"),
        ({"serving__max_num_seqs": 32.0}, "fleet.serving.max_num_seqs: Input should be a valid integer, got 32.0"),
        ({"serving__gpu_memory_utilization": "0.9"}, "fleet.serving.gpu_memory_utilization: Input should be a valid number"),
        ({"name": 7}, "fleet.name: Input should be a valid string, got 7; write text (quote it"),
        # `spot_price_limit: 1e6` unquoted: YAML 1.1 reads it as text; "write a number without quotes" was no fix
        (
            {"billing__spot_price_limit": "1e6"},
            "got text '1e6'; YAML reads 1e6 as text, not a number (its floats need a dot and a signed exponent): write 1000000",
        ),
        ({"disks__system__size_gib": "1.0e2"}, "got text '1.0e2'; YAML reads 1.0e2 as text, not a number (its floats"),
    ],
)
def test_a_value_of_another_type_is_refused_saying_what_was_given(changes, expected):
    found = problems(edit(**changes))
    assert any(expected in p for p in found), found


def test_a_key_that_is_not_text_is_named_with_the_fix():
    raw = prod_raw()
    raw[1] = "x"  # YAML `1: x`
    assert problems(raw) == [
        "stacks/Pulumi.x.yaml: fleet.1: the key 1 is not text: field names are text; remove it or check its spelling"
    ]


def test_a_quoted_date_is_still_a_date():
    raw = edit(autoscaling__schedule_window_start="2026-01-05")
    fleet = validation.validate(raw, stack=PROD, file="f.yaml")
    assert str(fleet.spec.autoscaling.schedule_window_start) == "2026-01-05"


@pytest.mark.parametrize("day, days", [("9999-12-31", 364), ("9995-01-01", 3650)])
def test_a_schedule_window_past_the_calendar_is_refused(day, days):
    """Its dates cannot be written: preview printed an OverflowError traceback (exit 1)."""
    found = problems(edit(autoscaling__schedule_window_start=day, autoscaling__schedule_window_days=days))
    assert any(f"fleet.autoscaling: schedule_window_start {day} leaves no room" in p for p in found), found


def test_all_errors_reported_at_once():
    raw = edit(gpu__kind="A1O", region="cn-hangzou")
    raw["serving"]["portt"] = 1
    raw["model"]["sha256"] = "x"
    found = problems(raw)
    assert len(found) >= 4, found


def test_zone_that_does_not_sell_the_gpu():
    raw = edit(zones=["cn-hangzhou-h", "cn-hangzhou-k"])
    raw["gpu"]["kind"] = "A100-80G"
    assert any("fleet.zones.1: cn-hangzhou-k does not sell A100-80G" in p for p in problems(raw))


def _write_project(tmp_path: Path, text: str) -> Path:
    (tmp_path / "stacks").mkdir()
    (tmp_path / "Pulumi.yaml").write_text((ROOT / "Pulumi.yaml").read_text())
    (tmp_path / "stacks" / "Pulumi.alicloud-cn-hangzhou-bad.yaml").write_text(text)
    return tmp_path


def test_cli_broken_stack_exits_2_without_traceback(tmp_path):
    raw = edit(gpu__kind="A1O")
    raw["replicas"] = {"min": 1, "max": 1}
    project = _write_project(tmp_path, yaml.safe_dump({"config": {loader.CONFIG_KEY: raw}}))
    run = subprocess.run(
        [
            sys.executable,
            "-c",
            "from gpufleet.cli import main; main()",
            "preview",
            "--stack",
            "alicloud-cn-hangzhou-bad",
            "--json",
        ],
        capture_output=True,
        text=True,
        env={"GPUFLEET_PROJECT": str(project), "PATH": "/usr/bin:/bin", "COLUMNS": "300"},
    )
    assert run.returncode == 2
    assert "Traceback" not in run.stderr
    assert (
        "stacks/Pulumi.alicloud-cn-hangzhou-bad.yaml: fleet.gpu.kind: unknown GPU kind 'A1O' (did you mean 'A10'?)" in run.stderr
    )
    assert run.stdout == ""


def test_cli_invalid_yaml(tmp_path):
    project = _write_project(tmp_path, "config:\n  gpufleet:fleet: [unclosed\n")
    run = subprocess.run(
        [sys.executable, "-c", "from gpufleet.cli import main; main()", "preview", "--stack", "alicloud-cn-hangzhou-bad"],
        capture_output=True,
        text=True,
        env={"GPUFLEET_PROJECT": str(project), "PATH": "/usr/bin:/bin", "COLUMNS": "300"},
    )
    assert (
        run.returncode == 2
        and "stacks/Pulumi.alicloud-cn-hangzhou-bad.yaml:3:1: not valid YAML:" in run.stderr
        and "Traceback" not in run.stderr
    )


def test_unknown_stack_suggests_a_name():
    with pytest.raises(UserError) as info:
        validation.load_fleet("alicloud-cn-hangzhou-prd", ROOT)
    assert "did you mean 'alicloud-cn-hangzhou-prod'" in str(info.value)


def test_an_unregistered_cloud_is_a_clear_error():
    raw = edit(cloud="azure")
    with pytest.raises(UserError) as info:
        validation.validate(raw, stack="x", file="stacks/Pulumi.x.yaml")
    assert "fleet.cloud: unknown cloud 'azure'" in str(info.value)


def test_preview_runs_after_an_asyncio_run_in_the_same_process():
    # asyncio.run() leaves the main thread without a current loop; the SDK asks for one (the load test does this)
    import asyncio

    from gpufleet.preview import preview_stack

    asyncio.run(asyncio.sleep(0))
    assert preview_stack("alicloud-cn-hangzhou-dev").resources


def test_a_current_folder_that_was_removed_is_a_message_not_a_traceback(tmp_path):
    """The shell's folder deleted under it (getcwd fails): the console script says so and exits 2."""
    gone = tmp_path / "gone"
    gone.mkdir()
    script = (
        f"import os, sys; os.chdir({str(gone)!r}); os.rmdir({str(gone)!r}); sys.argv = ['gpufleet', 'preview', '--stack', 'x']; "
        "from gpufleet.cli import main; main()"
    )
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, env={"PATH": "/usr/bin:/bin"})
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    assert "current folder: no longer exists: cd into the project folder, or set GPUFLEET_PROJECT" in " ".join(r.stderr.split())


def test_a_data_disk_too_small_for_the_archive_and_the_unpacked_weights_is_refused():
    """Llama-3.1-70B's checkpoint is 131.4 GiB (bf16): the archive and its unpacked copy need 2 x that + 10 %."""
    changes = {"model__name": "meta-llama/Llama-3.1-70B-Instruct", "gpu": {"kind": "A100-80G", "count": 4}}
    found = problems(edit(serving__tensor_parallel_size=4, **changes))
    assert any(
        p.startswith("stacks/Pulumi.x.yaml: fleet.disks.data.size_gib: 200 GiB is too small for meta-llama/Llama-3.1-70B")
        and "about 131.4 GiB" in p
        and "set disks.data.size_gib to at least 290" in p
        for p in found
    ), found
    validation.validate(
        edit(serving__tensor_parallel_size=4, disks__data__size_gib=290, **changes), stack="x", file="stacks/Pulumi.x.yaml"
    )


def test_the_data_disk_check_sizes_a_quantized_checkpoint_named_through_its_catalogued_base():
    """A stack serving Qwen2.5-32B-Instruct-AWQ sized as Qwen2.5-32B-Instruct (the dev stacks' pattern): the archive
    is the AWQ checkpoint, about 18 GiB, not the 61 GiB of the bf16 base; 100 GiB holds it twice (was refused)."""
    changes = {
        "model__name": "Qwen/Qwen2.5-32B-Instruct-AWQ",
        "model__catalog": "Qwen/Qwen2.5-32B-Instruct",
        "serving__quantization": "awq",
        "serving__dtype": "float16",
        "gpu": {"kind": "A100-80G", "count": 1},
    }
    validation.validate(edit(disks__data__size_gib=100, **changes), stack="x", file="stacks/Pulumi.x.yaml")
    (found,) = [p for p in problems(edit(disks__data__size_gib=30, **changes)) if "disks.data.size_gib" in p]
    assert "about 18." in found and "at least 4" in found, found
