"""The images program (a project's images/program/) read from its stack file, previewed under the mock engine."""

import json
import runpy
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from gpufleet import scaffold
from gpufleet.errors import UserError
from gpufleet.images.pipeline import EXAMPLES, load_pipeline
from gpufleet.preview import run

EXAMPLE = EXAMPLES / "Pulumi.example-cuda13-vllm-alicloud.yaml"


def _edited(tmp_path: Path, **changes) -> Path:
    doc = yaml.safe_load(EXAMPLE.read_text())
    cfg = doc["config"]["gpufleet-images:pipeline"]
    for key, value in changes.items():
        target = cfg["builder"] if key in cfg["builder"] else cfg
        target[key] = value
    path = tmp_path / "Pulumi.edited.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def _problems(path: Path) -> str:
    with pytest.raises(UserError) as exc:
        load_pipeline(path)
    return "\n".join(str(p) for p in exc.value.problems)


def test_the_program_file_declares_the_build_phase(monkeypatch, tmp_path):
    stack = tmp_path / "Pulumi.mine.yaml"
    stack.write_text(EXAMPLE.read_text())
    main = tmp_path / "__main__.py"
    main.write_text(scaffold.IMAGES_PROGRAM)  # the program `gpufleet init` writes (the checkout's images/program/)
    inv = run(lambda: runpy.run_path(str(main)), stack="mine", config={})
    assert sorted(r["type"] for r in inv.resources) == [
        "alicloud:ecs/instance:Instance",
        "alicloud:ecs/securityGroup:SecurityGroup",
        "alicloud:ecs/securityGroupRule:SecurityGroupRule",
    ]
    assert "builder_instance_id" in inv.outputs


def _pipeline_json(path) -> subprocess.CompletedProcess:
    """`image pipeline -s PATH --json` in a process of its own (the images program under the mock engine)."""
    return subprocess.run(
        [sys.executable, "-m", "gpufleet.cli.image", "pipeline", "-s", str(path), "--json"],
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_done_phase_keeps_only_images(tmp_path):
    path = _edited(tmp_path, phase="done", manifest_sha256="ab" * 32, builder_instance_id="i-bp1recorded")
    r = _pipeline_json(path)
    assert r.returncode == 0, r.stderr
    assert '"alicloud:ecs/instance:Instance"' not in r.stdout and '"alicloud:ecs/imageCopy:ImageCopy"' in r.stdout


@pytest.mark.parametrize(
    "changes, expected",
    [
        ({"phase": "image"}, "manifest_sha256: phase image needs the sha256"),
        ({"phase": "done", "manifest_sha256": "ab" * 32}, "builder_instance_id: phase done needs"),
        ({"operator_cidr": "0.0.0.0/0"}, "wider than /16"),
        ({"operator_cidr": "my-laptop"}, "is not a CIDR"),
        ({"recipe": "cuda13-vlm"}, "did you mean 'cuda13-vllm'"),
        ({"region": "cn-shenzhen"}, "builder.region: recipe cuda13-vllm copies its image to alicloud"),
        ({"instance_type": "ecs.gn6v-c8g1.2xlarge"}, "which recipe cuda13-vllm does not serve"),
        ({"instance_type": "ecs.gn7i-c8g1.2xlarg"}, "did you mean 'ecs.gn7i-c8g1.2xlarge'"),
        ({"phase": "deploy"}, "phase:"),
        # an empty id was taken: the builder launched with no key pair (`image build` cannot log in), no VPC, no image
        ({"key_name": ""}, "builder.key_name: '' is not an id: write the cloud's id or name"),
        ({"vpc_id": ""}, "builder.vpc_id: '' is not an id"),
        ({"subnet_id": "vsw-a b"}, "builder.subnet_id: 'vsw-a b' is not an id"),
        ({"base_image_id": "m-x\n"}, "builder.base_image_id: 'm-x\\n' is not an id"),
        ({"cloud": "alicloudd"}, "builder.cloud: unknown cloud 'alicloudd' (did you mean 'alicloud'?)"),
        (
            {"zone": "cn-hangzhou-hh"},
            "builder.zone: 'cn-hangzhou-hh' is not a zone of cn-hangzhou (did you mean 'cn-hangzhou-h'?)",
        ),
        (
            {"zone": "cn-hangzhou-k", "instance_type": "ecs.gn7-c12g1.3xlarge"},
            "builder.zone: cn-hangzhou-k does not sell A100-40G (zones of cn-hangzhou that do: cn-hangzhou-h, cn-hangzhou-j)",
        ),
    ],
)
def test_bad_stack_files_name_the_field(tmp_path, changes, expected):
    assert expected in _problems(_edited(tmp_path, **changes))


def test_unknown_field_and_cli_exit_code(tmp_path):
    path = _edited(tmp_path, zone_id="x")
    assert "unknown field" in _problems(path)
    r = subprocess.run(
        [sys.executable, "-m", "gpufleet.cli.image", "pipeline", "-s", str(path)], capture_output=True, text=True, timeout=60
    )
    assert r.returncode == 2 and "unknown field" in r.stderr and "Traceback" not in r.stderr


@pytest.mark.parametrize("where", ["/nonexist/Pulumi.a.yaml", "Pulumi.a.yaml"])
def test_a_stack_file_path_that_does_not_exist_is_named_as_such(tmp_path, monkeypatch, where):
    monkeypatch.chdir(tmp_path)
    assert _problems(Path(where)) == (
        f"{where}: no such file: give the path of an images stack file, or the name of a stack of {EXAMPLES}/ "
        "(example-cuda13-vllm-alicloud)"
    )


def test_the_image_phase_outputs_the_manifest_digest_lock_record_compares(tmp_path):
    """The images carry the digest as a tag; the outputs now carry it too, so `image lock record --outputs` can tell a
    manifest of another build (review finding 12)."""
    path = _edited(tmp_path, phase="image", manifest_sha256="ab" * 32, builder_instance_id="i-bp1recorded")
    r = _pipeline_json(path)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["outputs"]["manifest_sha256"] == "ab" * 32
