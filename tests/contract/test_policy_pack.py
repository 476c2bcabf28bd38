"""The policy pack (gpufleet/policypack.py, served by policy/__main__.py): its validation functions, called on the recorded
inventories of the sweep.

A real `pulumi preview --policy-pack policy` needs the Pulumi CLI, which cannot be installed here; these tests call
the same functions the pack registers, with the arguments the engine would pass.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from pulumi_policy import PolicyResource, ResourceValidationArgs, ResourceValidationPolicy, StackValidationArgs

from gpufleet import policypack

from . import sweep

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def pack():
    return policypack


def _args(resource: dict) -> ResourceValidationArgs:
    return ResourceValidationArgs(resource["type"], resource["inputs"], f"urn:{resource['name']}", resource["name"], None, None)


def _run(policies, resource) -> list[str]:
    found: list[str] = []
    for policy in policies:
        if not isinstance(policy, ResourceValidationPolicy):
            continue
        policy.validate(_args(resource), lambda message, urn=None, name=policy.name: found.append(f"{name}: {message}"))
    return found


def test_pack_files_exist_and_name_the_policies(pack):
    manifest = yaml.safe_load((ROOT / "policy" / "PulumiPolicy.yaml").read_text())
    assert manifest["runtime"]["name"] == "python" and manifest["version"]
    assert "serve()" in (ROOT / "policy" / "__main__.py").read_text()
    names = [p.name for p in pack.policies()]
    assert names == ["alicloud-provider-contract", "tencentcloud-provider-contract", "names-in-scope", "no-placeholder-image"]


def test_recorded_inventories_pass_the_contract_policies(pack, monkeypatch):
    monkeypatch.setenv("GPUFLEET_NOW", "2026-12-01T00:00:00Z")
    contract_policies = [p for p in pack.policies() if p.name.endswith("provider-contract")]
    found = []
    for name, _, inv in sweep.inventories():
        for r in inv["resources"]:
            if r["custom"]:
                found += [f"{name}: {m}" for m in _run(contract_policies, r)]
    assert found == []


def test_pack_refuses_a_broken_rule_and_placeholder_images(pack, monkeypatch):
    monkeypatch.setenv("GPUFLEET_NOW", "2026-12-01T00:00:00Z")
    listener = {"type": "alicloud:slb/listener:Listener", "name": "l", "inputs": {"requestTimeout": 300, "protocol": "http"}}
    (message,) = _run(pack.policies(), listener)
    assert message.startswith("alicloud-provider-contract:") and "1-180" in message and "slb_listener.go" in message
    assert "fleet.load_balancer.request_timeout_s" in message
    images = []
    for _, _, inv in sweep.inventories():
        images += [r for r in inv["resources"] if pack.IMAGE_INPUT in r["inputs"]]
    assert images
    for r in images:  # the shipped lock file holds placeholders: a real deploy is refused until an image is built
        assert any(m.startswith("no-placeholder-image:") for m in _run(pack.policies(), r))
    built = {**images[0], "inputs": {**images[0]["inputs"], "imageId": "m-bp1abcdef0123456789"}}
    assert not [m for m in _run(pack.policies(), built) if m.startswith("no-placeholder-image:")]


def _stack_args(resources: list[dict]) -> StackValidationArgs:
    return StackValidationArgs(
        [
            PolicyResource(r["type"], r["inputs"], f"urn:{r['name']}", r["name"], None, None, None, [], {})
            for r in resources
            if r["custom"]
        ],
        None,
    )


def test_names_policy_passes_every_sweep_variant_and_refuses_a_long_or_repeated_name(pack):
    (names_policy,) = [p for p in pack.policies() if p.name == "names-in-scope"]
    found = []
    for name, _, inv in sweep.inventories():
        names_policy.validate(_stack_args(inv["resources"]), lambda m, urn=None, name=name: found.append(f"{name}: {m}"))
    assert found == []
    _, _, inv = sweep.inventories()[0]
    broken = [dict(r) for r in inv["resources"]]
    ram = [r for r in broken if r["type"] in ("alicloud:ram/role:Role", "tencentcloud:Cam/role:Role")]
    ram[0]["inputs"] = {**ram[0]["inputs"], "roleName" if "roleName" in ram[0]["inputs"] else "name": "r" * 200}
    groups = [r for r in broken if r["type"].endswith("scalingGroup:ScalingGroup")]
    twin = {**groups[0], "name": groups[0]["name"] + "-twin"}
    names_policy.validate(_stack_args([*broken, twin]), lambda m, urn=None: found.append(m))
    assert any("more than the" in m and "RoleName" in m for m in found), found
    assert any("is given to" in m and "-twin" in m for m in found), found
