"""Tencent Cloud's image builder as Pulumi resources (the phases are explained in gpufleet.images.pipeline):
a temporary security group (SSH from the operator CIDR) and CVM builder, the image, one SyncImage to the
recipe's other regions.
"""

from __future__ import annotations

from gpufleet.images.pipeline import tags


def declare(recipe, spec, phase, sha, builder_id) -> dict:
    # deferred: the Tencent provider (tens of ms): only the image pipeline needs it
    import tencentcloud_iac_pulumi.cvm as tc_cvm
    import tencentcloud_iac_pulumi.image as tc_image
    import tencentcloud_iac_pulumi.instance as tc_instance
    import tencentcloud_iac_pulumi.security as tc_security

    t = tags(recipe, sha)
    name = f"gpufleet-image-{recipe.name}"
    out: dict = {}
    instance_id = builder_id
    if phase in ("build", "image"):
        sg = tc_security.Group(
            f"{name}-builder-sg",
            name=f"{name}-builder",
            description="temporary: SSH to the image builder from the operator only",
            tags=t,
        )
        tc_security.GroupRuleSet(
            f"{name}-builder-ssh",
            security_group_id=sg.id,
            ingresses=[
                tc_security.GroupRuleSetIngressArgs(
                    action="ACCEPT",
                    cidr_block=spec.operator_cidr,
                    protocol="TCP",
                    port="22",
                    description="SSH from the operator only",
                )
            ],
            egresses=[
                tc_security.GroupRuleSetEgressArgs(
                    action="ACCEPT", cidr_block="0.0.0.0/0", protocol="ALL", port="ALL", description="builder downloads packages"
                )
            ],
        )
        builder = tc_instance.Instance(
            f"{name}-builder",
            instance_type=spec.instance_type,
            image_id=spec.base_image_id,
            availability_zone=spec.zone,
            vpc_id=spec.vpc_id,
            subnet_id=spec.subnet_id,
            orderly_security_groups=[sg.id],
            system_disk_size=spec.system_disk_gib,
            key_ids=[spec.key_name],
            allocate_public_ip=True,
            internet_max_bandwidth_out=10,
            instance_name=f"{name}-builder",
            tags=t,
        )
        instance_id = builder.id
        out["builder_public_ip"] = builder.public_ip
        out["builder_instance_id"] = builder.id
    if phase in ("image", "done"):
        image = tc_image.Instance(
            f"{name}-{spec.region}",
            instance_id=instance_id,
            image_name=f"{name}-{(sha or 'unbuilt')[:12]}",
            image_description=f"gpufleet golden image {recipe.name}",
            tags=t,
        )
        out[f"image:tencentcloud:{spec.region}"] = image.id
        others = [r for r in recipe.regions.get("tencentcloud", []) if r != spec.region]
        if others:
            sync = tc_cvm.SyncImage(f"{name}-sync", image_id=image.id, destination_regions=others, image_set_required=True)
            out["image:tencentcloud:synced"] = sync.id
    return out
