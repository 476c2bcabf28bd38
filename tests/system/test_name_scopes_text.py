"""components/<cloud>/name_scopes.yaml (what `gpufleet check` and the policy pack hold names to) against the vendors' own
text: each name's uniqueness scope and length as the member it becomes (api_map.yaml) states them, read by speclib.

The coverage check already holds api_map.yaml's `scope:` to a member that states one; this holds name_scopes.yaml to
the same text, and api_map.yaml to name_scopes.yaml where the text states none (then name_scopes.yaml gives its
`scope_basis`: RAM/CAM are global, an SCF function is addressed by region and namespace, ...). Review C1: the SLB ACL
name said `none` ("no text in the SDK") where CreateAccessControlList AclName says "must be unique within each
region"; C2: api_map.yaml said ESS ScalingRuleName `account` ("unique under the same account within a region") and
Tencent LifecycleHookName `group` (no uniqueness stated).
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from gpufleet import contract, namescope

from . import coverage, speclib

CLOUDS = [c for c in ("alicloud", "tencentcloud") if coverage._has_map(c)]


def _scopes(cloud: str) -> list[dict]:
    path = Path(contract.rules_module(cloud).__file__).parent / "name_scopes.yaml"
    return [n for n in yaml.safe_load(path.read_text())["names"] if "scope" in n]


def _stated(cloud: str, entry: coverage.Entry) -> tuple[str | None, list[float]]:
    member = speclib.member(coverage.api_map(cloud)["spec"]["reader"], entry.ref)
    limits = speclib.extract(member.document, member.type)
    unique = [lim.scope for lim in limits if lim.kind == "unique"]
    return (unique[0] if unique else None), [lim.high for lim in limits if lim.kind == "length" and lim.high]


@pytest.mark.parametrize("cloud", CLOUDS)
def test_name_scopes_say_what_the_vendor_text_says(cloud):
    mapped = coverage.entries(cloud)
    wrong, checked = [], 0
    for n in _scopes(cloud):
        entry = mapped.get((n["type"], contract.snake(n["input"])))
        if entry is None or entry.ref is None:
            continue  # no API member (e.g. an uploaded certificate's name): nothing to read
        checked += 1
        stated, lengths = _stated(cloud, entry)
        where = f"{n['type']} {n['input']} ({entry.ref})"
        if stated is not None and n["scope"] != stated:
            wrong.append(f"{where}: name_scopes.yaml says {n['scope']}, the text says unique in {stated}")
        if stated is None and n["scope"] != "none" and not n.get("scope_basis"):
            wrong.append(f"{where}: name_scopes.yaml says {n['scope']}, the text states no uniqueness and no scope_basis")
        if (entry.scope or "none") != n["scope"]:
            wrong.append(f"{where}: api_map.yaml says {entry.scope or 'none'}, name_scopes.yaml {n['scope']}")
        if lengths and n.get("max") not in lengths:
            wrong.append(f"{where}: name_scopes.yaml max {n.get('max')}, the text states {lengths}")
    assert wrong == []
    assert checked >= 15


def test_the_reviewed_scopes_are_read_from_the_text():
    acl = coverage.entries("alicloud")[("alicloud:slb/acl:Acl", "name")]
    assert _stated("alicloud", acl) == ("region", [80.0])
    rule = coverage.entries("alicloud")[("alicloud:ess/scalingRule:ScalingRule", "scaling_rule_name")]
    assert "unique under the same account within a region" in speclib.member("alibaba-sdk", rule.ref).document
    assert _stated("alicloud", rule)[0] == "region" == rule.scope
    hook = coverage.entries("tencentcloud")[("tencentcloud:As/lifecycleHook:LifecycleHook", "lifecycle_hook_name")]
    assert _stated("tencentcloud", hook)[0] is None and hook.scope is None


def _acl(name: str) -> dict:
    return {"type": "alicloud:slb/acl:Acl", "name": "acl", "inputs": {"name": name}, "custom": True}


def test_an_acl_name_clashes_within_a_region_only():
    def names(stack: str, region: str) -> list[namescope.Name]:
        found, unknown = namescope.names_of([_acl("llm-prod-clients")], stack, "alicloud", region)
        assert unknown == []
        return found

    same = namescope.clashes(names("a", "cn-hangzhou") + names("b", "cn-hangzhou"))
    assert [(c.rule.scope, c.stacks) for c in same] == [("region", ("a", "b"))]
    assert namescope.clashes(names("a", "cn-hangzhou") + names("b", "cn-shanghai")) == []
