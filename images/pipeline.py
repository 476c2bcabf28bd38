"""The image pipeline as Pulumi resources: builder instance + temporary security group (SSH from the
operator CIDR only), the image made from the builder, its copies to the recipe's other regions, all
tagged with the recipe's pins.

It runs in three phases of one images stack, so that Pulumi itself removes the builder:
- "build":   builder + security group (then `gpufleet image build --host <builder ip> ...` runs the steps);
- "image":   the same + the image from the builder + the copies (after a successful build);
- "done":    only the image and the copies: the builder and its security group are deleted by Pulumi.
In "done" the image keeps the builder's instance id as recorded in "image" (`builder_instance_id`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Optional

import pulumi

Phase = Literal["build", "image", "done"]


@dataclass(frozen=True)
class BuilderSpec:
    """Where the builder runs; every value comes from the images stack config, none is chosen here."""

    cloud: str
    region: str
    zone: str
    instance_type: str
    vpc_id: str
    subnet_id: str
    base_image_id: str  # the recipe's base_image pattern resolved to an id (DescribeImages) by the caller
    operator_cidr: str
    system_disk_gib: int
    key_name: str


def tags(recipe, manifest_sha256: Optional[str]) -> dict[str, str]:
    out = {"gpufleet:recipe": recipe.name, **{f"gpufleet:{k}": v for k, v in sorted(recipe.pins.items())}}
    if manifest_sha256:
        out["gpufleet:manifest-sha256"] = manifest_sha256
    return out


def _check_cidr(cidr: str) -> None:
    import ipaddress

    net = ipaddress.ip_network(cidr)
    if net.prefixlen < 16:
        raise ValueError(f"operator_cidr {cidr} is wider than /16; SSH to the builder is for the operator only")


def declare(recipe, spec: BuilderSpec, phase: Phase, manifest_sha256: Optional[str] = None,
            builder_instance_id: Optional[str] = None) -> dict[str, pulumi.Output]:
    _check_cidr(spec.operator_cidr)
    return (_alicloud if spec.cloud == "alicloud" else _tencentcloud)(recipe, spec, phase, manifest_sha256, builder_instance_id)


def _alicloud(recipe, spec, phase, sha, builder_id):
    import pulumi_alicloud as alicloud

    t = tags(recipe, sha)
    name = f"gpufleet-image-{recipe.name}"
    out: dict = {}
    instance_id = builder_id
    if phase in ("build", "image"):
        sg = alicloud.ecs.SecurityGroup(f"{name}-builder-sg", vpc_id=spec.vpc_id, security_group_name=f"{name}-builder",
                                        description="temporary: SSH to the image builder from the operator only", tags=t)
        alicloud.ecs.SecurityGroupRule(f"{name}-builder-ssh", security_group_id=sg.id, type="ingress", ip_protocol="tcp",
                                       port_range="22/22", cidr_ip=spec.operator_cidr, policy="accept", nic_type="intranet")
        builder = alicloud.ecs.Instance(
            f"{name}-builder", instance_type=spec.instance_type, image_id=spec.base_image_id, availability_zone=spec.zone,
            vswitch_id=spec.subnet_id, security_groups=[sg.id], system_disk_size=spec.system_disk_gib, key_name=spec.key_name,
            internet_max_bandwidth_out=10, instance_name=f"{name}-builder", tags=t,
        )
        instance_id = builder.id
        out["builder_public_ip"] = builder.public_ip
        out["builder_instance_id"] = builder.id
    if phase in ("image", "done"):
        image = alicloud.ecs.Image(f"{name}-{spec.region}", instance_id=instance_id, image_name=f"{name}-{(sha or 'unbuilt')[:12]}",
                                   description=f"gpufleet golden image {recipe.name}", tags=t)
        out[f"image:alicloud:{spec.region}"] = image.id
        for region in recipe.regions.get("alicloud", []):
            if region == spec.region:
                continue
            provider = alicloud.Provider(f"{name}-provider-{region}", region=region)
            copy = alicloud.ecs.ImageCopy(f"{name}-{region}", source_image_id=image.id, source_region_id=spec.region,
                                          image_name=f"{name}-{(sha or 'unbuilt')[:12]}", tags=t,
                                          opts=pulumi.ResourceOptions(provider=provider))
            out[f"image:alicloud:{region}"] = copy.id
    return out


def _tencentcloud(recipe, spec, phase, sha, builder_id):
    import tencentcloud_iac_pulumi.cvm as tc_cvm
    import tencentcloud_iac_pulumi.image as tc_image
    import tencentcloud_iac_pulumi.instance as tc_instance
    import tencentcloud_iac_pulumi.security as tc_security

    t = tags(recipe, sha)
    name = f"gpufleet-image-{recipe.name}"
    out: dict = {}
    instance_id = builder_id
    if phase in ("build", "image"):
        sg = tc_security.Group(f"{name}-builder-sg", name=f"{name}-builder", description="temporary: SSH to the image builder from the operator only", tags=t)
        tc_security.GroupRuleSet(
            f"{name}-builder-ssh", security_group_id=sg.id,
            ingresses=[tc_security.GroupRuleSetIngressArgs(action="ACCEPT", cidr_block=spec.operator_cidr, protocol="TCP", port="22",
                                                           description="SSH from the operator only")],
            egresses=[tc_security.GroupRuleSetEgressArgs(action="ACCEPT", cidr_block="0.0.0.0/0", protocol="ALL", port="ALL",
                                                         description="builder downloads packages")],
        )
        builder = tc_instance.Instance(
            f"{name}-builder", instance_type=spec.instance_type, image_id=spec.base_image_id, availability_zone=spec.zone,
            vpc_id=spec.vpc_id, subnet_id=spec.subnet_id, orderly_security_groups=[sg.id], system_disk_size=spec.system_disk_gib,
            key_ids=[spec.key_name], allocate_public_ip=True, internet_max_bandwidth_out=10, instance_name=f"{name}-builder", tags=t,
        )
        instance_id = builder.id
        out["builder_public_ip"] = builder.public_ip
        out["builder_instance_id"] = builder.id
    if phase in ("image", "done"):
        image = tc_image.Instance(f"{name}-{spec.region}", instance_id=instance_id, image_name=f"{name}-{(sha or 'unbuilt')[:12]}",
                                  image_description=f"gpufleet golden image {recipe.name}", tags=t)
        out[f"image:tencentcloud:{spec.region}"] = image.id
        others = [r for r in recipe.regions.get("tencentcloud", []) if r != spec.region]
        if others:
            sync = tc_cvm.SyncImage(f"{name}-sync", image_id=image.id, destination_regions=others, image_set_required=True)
            out["image:tencentcloud:synced"] = sync.id
    return out
