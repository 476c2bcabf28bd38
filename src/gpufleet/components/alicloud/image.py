"""Alibaba Cloud's image builder as Pulumi resources (the phases are explained in gpufleet.images.pipeline):
a temporary security group (SSH from the operator CIDR) and ECS builder, the ECS image, ImageCopy per other region.
"""

from __future__ import annotations

import pulumi

from gpufleet.images.pipeline import tags


def declare(recipe, spec, phase, sha, builder_id) -> dict:
    # deferred: the Pulumi SDK and providers (~100 ms): only the program and the image pipeline need them
    import pulumi_alicloud as alicloud

    t = tags(recipe, sha)
    name = f"gpufleet-image-{recipe.name}"
    out: dict = {}
    instance_id = builder_id
    if phase in ("build", "image"):
        sg = alicloud.ecs.SecurityGroup(
            f"{name}-builder-sg",
            vpc_id=spec.vpc_id,
            security_group_name=f"{name}-builder",
            description="temporary: SSH to the image builder from the operator only",
            tags=t,
        )
        alicloud.ecs.SecurityGroupRule(
            f"{name}-builder-ssh",
            security_group_id=sg.id,
            type="ingress",
            ip_protocol="tcp",
            port_range="22/22",
            cidr_ip=spec.operator_cidr,
            policy="accept",
            nic_type="intranet",
        )
        builder = alicloud.ecs.Instance(
            f"{name}-builder",
            instance_type=spec.instance_type,
            image_id=spec.base_image_id,
            availability_zone=spec.zone,
            vswitch_id=spec.subnet_id,
            security_groups=[sg.id],
            system_disk_size=spec.system_disk_gib,
            key_name=spec.key_name,
            internet_max_bandwidth_out=10,
            instance_name=f"{name}-builder",
            tags=t,
        )
        instance_id = builder.id
        out["builder_public_ip"] = builder.public_ip
        out["builder_instance_id"] = builder.id
    if phase in ("image", "done"):
        image = alicloud.ecs.Image(
            f"{name}-{spec.region}",
            instance_id=instance_id,
            image_name=f"{name}-{(sha or 'unbuilt')[:12]}",
            description=f"gpufleet golden image {recipe.name}",
            tags=t,
        )
        out[f"image:alicloud:{spec.region}"] = image.id
        for region in recipe.regions.get("alicloud", []):
            if region == spec.region:
                continue
            provider = alicloud.Provider(f"{name}-provider-{region}", region=region)
            copy = alicloud.ecs.ImageCopy(
                f"{name}-{region}",
                source_image_id=image.id,
                source_region_id=spec.region,
                image_name=f"{name}-{(sha or 'unbuilt')[:12]}",
                tags=t,
                opts=pulumi.ResourceOptions(provider=provider),
            )
            out[f"image:alicloud:{region}"] = copy.id
    return out
