"""The image pipeline under Pulumi's mock engine (gpufleet.preview.run records what it declares)."""

import pytest

from gpufleet.images.pipeline import BuilderSpec, declare
from gpufleet.images.recipes import load_recipe
from gpufleet.preview import run

ALI = BuilderSpec(
    "alicloud",
    "cn-hangzhou",
    "cn-hangzhou-h",
    "ecs.gn7i-c8g1.2xlarge",
    "vpc-test",
    "vsw-test",
    "m-base",
    "198.51.100.7/32",
    100,
    "builder-key",
)
TC = BuilderSpec(
    "tencentcloud",
    "ap-guangzhou",
    "ap-guangzhou-3",
    "GN7.2XLARGE32",
    "vpc-test",
    "subnet-test",
    "img-base",
    "198.51.100.7/32",
    100,
    "skey-test",
)


def _inv(spec, phase):
    recipe = load_recipe("cuda13-vllm")
    return run(
        lambda: declare(recipe, spec, phase, manifest_sha256="ab" * 32, builder_instance_id="i-recorded"),
        stack="images",
        config={},
    )


def _types(inv):
    return sorted(r["type"] for r in inv.resources)


def test_alicloud_phases():
    build = _inv(ALI, "build")
    assert _types(build) == [
        "alicloud:ecs/instance:Instance",
        "alicloud:ecs/securityGroup:SecurityGroup",
        "alicloud:ecs/securityGroupRule:SecurityGroupRule",
    ]
    rule = build.of_type("alicloud:ecs/securityGroupRule:SecurityGroupRule")[0]["inputs"]
    assert rule["cidrIp"] == "198.51.100.7/32" and rule["portRange"] == "22/22"
    image = _inv(ALI, "image")
    copies = image.of_type("alicloud:ecs/imageCopy:ImageCopy")
    assert sorted(c["name"].rsplit("-", 2)[-2] + "-" + c["name"].rsplit("-", 1)[-1] for c in copies) == [
        "cn-beijing",
        "cn-shanghai",
    ]
    img = image.of_type("alicloud:ecs/image:Image")[0]["inputs"]
    assert img["tags"]["gpufleet:vllm"] == "0.33.0" and img["tags"]["gpufleet:driver"] == "580.95.05"
    assert all(c["inputs"]["tags"]["gpufleet:manifest-sha256"] == "ab" * 32 for c in copies)
    done = _inv(ALI, "done")
    assert not done.of_type("alicloud:ecs/instance:Instance") and not done.of_type("alicloud:ecs/securityGroup:SecurityGroup")
    assert done.of_type("alicloud:ecs/image:Image")[0]["inputs"]["instanceId"] == "i-recorded"


def test_tencentcloud_phases():
    image = _inv(TC, "image")
    types = set(_types(image))
    assert any(t.endswith("Instance") and "Image" in t for t in types), types
    sync = [r for r in image.resources if "SyncImage" in r["type"]][0]["inputs"]
    assert sorted(sync["destinationRegions"]) == ["ap-beijing", "ap-shanghai"]
    rule = [r for r in image.resources if "groupRuleSet" in r["type"]][0]["inputs"]
    assert [(i["cidrBlock"], i["port"], i["protocol"]) for i in rule["ingresses"]] == [("198.51.100.7/32", "22", "TCP")]
    done = _inv(TC, "done")
    assert sorted(r["type"].split(":")[1] for r in done.resources) == ["Cvm/syncImage", "Image/instance"], _types(done)


def test_wide_operator_cidr_is_refused():
    import msgspec

    with pytest.raises(ValueError, match="operator only"):
        declare(load_recipe("cuda13-vllm"), msgspec.structs.replace(ALI, operator_cidr="0.0.0.0/0"), "build")


@pytest.mark.parametrize(
    "cidr, said",
    [
        ("::/16", "is IPv6: the builder's SSH rule takes an IPv4 CIDR"),  # was accepted: 2^112 addresses
        ("2001:db8::1/128", "is IPv6"),
        ("198.51.100.7/24", "has host bits set: use 198.51.100.0/24 or 198.51.100.7/32"),  # was "is not a CIDR"
    ],
)
def test_an_ipv6_or_host_bits_operator_cidr_is_named_as_such(cidr, said):
    from gpufleet.images.pipeline import cidr_problem

    assert said in (cidr_problem(cidr) or "")
    assert cidr_problem("198.51.100.7/32") is None and cidr_problem("198.51.100.0/24") is None
