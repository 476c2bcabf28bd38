"""Alibaba Cloud's profile: the facts cloud-neutral code reads, and what the cloud cannot do (preview notes)."""

from __future__ import annotations

from pathlib import Path

from gpufleet.components.registry import Capability, CloudProfile

PROFILE = CloudProfile(
    name="alicloud",
    role_kind="ECS RAM role",
    disk_categories={
        "standard": {"category": "cloud_essd", "performance_level": "PL0"},
        "performance": {"category": "cloud_essd", "performance_level": "PL1"},
        "high": {"category": "cloud_essd", "performance_level": "PL2"},
    },
    secret_cli='aliyun kms GetSecretValue --SecretName "${API_KEY_SECRET}" --region "${GPUFLEET_REGION}" '
    '--mode EcsRamRole --ram-role-name "${GPUFLEET_ROLE}" | json_field SecretData',
    object_scheme="oss",
    node_tools=("ossutil", "aliyun"),
    # virtio-blk names the second disk vdb (ECS docs "Initialize a data disk on Linux"); NVMe-based
    # families (e.g. ebmgn7) name it /dev/nvme1n1: estimate, not checked on a GPU family.
    data_disk="/dev/vdb",
    catalog=Path(__file__).resolve().parents[2] / "stacks" / "data" / "alicloud.yaml",
    image_id_prefix="m-",
    price_data=Path(__file__).resolve().parents[2] / "cost" / "data",
    # outputs the provider computes that the program reads; the mock engine fills them with a named placeholder
    computed={
        "alicloud:slb/applicationLoadBalancer:ApplicationLoadBalancer": ("address",),
        "alicloud:ecs/eipAddress:EipAddress": ("ipAddress",),
        "alicloud:vpc/natGateway:NatGateway": ("snatTableIds",),
        "alicloud:ess/scalingRule:ScalingRule": ("ari",),
        # invokes: the account id in the drain hook's OOS template ARN (scaling.py)
        "alicloud:index/getCallerIdentity:getCallerIdentity": ("accountId",),
    },
)

CAPABILITIES: dict[Capability, str | None] = {
    Capability.GPU_METRIC_AUTOSCALING: "ESS event-triggered tasks read no GPU metric; they scale on vLLM's queue or KV cache, "
    "which the nodes publish as CloudMonitor custom metrics (autoscaling.metric, docs/scaling.md)",
    Capability.SUBSCRIPTION_IN_AUTOSCALING: "ESS creates only pay-as-you-go or spot instances; with monthly/yearly billing "
    "the min replicas are subscription ECS instances attached to the scaling group, and nodes above min are pay-as-you-go",
    Capability.LAYER7_LISTENER: None,
    Capability.GPU_HARDWARE_ALARMS: "CloudMonitor has no ECC / retired-page GPU event alarm in this program; only "
    "utilisation and memory alarms",
}
