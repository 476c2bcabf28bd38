"""Meta test: a third cloud is one package (tests/fake_cloud/) plus one registry line.

The fake cloud is registered for this module only; preview, cost estimate, catalog derivation, the policy tests
of tests/test_policy.py and `region new` then run for it with no edit anywhere else.
"""

import inspect
import json
import shutil
from pathlib import Path

import pytest

from gpufleet import registry, validation
from gpufleet.cli import main
from gpufleet.cost import catalog, derive

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
