"""The fake cloud's image builder: builder instance (phases build/image) and the image (phases image/done)."""

from __future__ import annotations

import pulumi

from gpufleet.images.pipeline import tags


def declare(recipe, spec, phase, sha, builder_id) -> dict:
    t, name, out = tags(recipe, sha), f"gpufleet-image-{recipe.name}", {}
    instance_id = builder_id
    if phase in ("build", "image"):
        builder = pulumi.CustomResource(
            "fakecloud:compute/instance:Instance",
            f"{name}-builder",
            {"instanceType": spec.instance_type, "imageId": spec.base_image_id, "sshFrom": spec.operator_cidr, "tags": t},
        )
        instance_id = builder.id
        out["builder_instance_id"] = builder.id
    if phase in ("image", "done"):
        image = pulumi.CustomResource(
            "fakecloud:compute/image:Image", f"{name}-{spec.region}", {"instanceId": instance_id, "tags": t}
        )
        out[f"image:fakecloud:{spec.region}"] = image.id
    return out
