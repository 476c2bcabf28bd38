"""Per-cloud facts and the registry of cloud code, keyed by cloud name.

Each cloud registers two modules (REGISTRY):
- `program`: `declare(fleet, parent) -> dict[str, Output]` (the stack outputs, OUTPUTS), importing the provider;
- `checks`: `spec_problems(spec) -> [(field, message)]` and `notes(spec) -> [str]`, pure, run by stack validation.
What a cloud cannot do is data here (CAPABILITIES), shown by `gpufleet preview`, never an exception.
Adding a cloud = a PROFILES entry, a REGISTRY entry, a value per CAPABILITIES row, and its two modules;
tests/test_clouds.py fails when one is missing.
"""

from __future__ import annotations

import importlib
import importlib.util
from dataclasses import dataclass
from types import ModuleType

OUTPUTS = ("endpoint", "vpc_id", "scaling_group_id", "security_group_ids")


@dataclass(frozen=True)
class CloudProfile:
    name: str
    role_kind: str
    disk_categories: dict[str, dict]  # spec tier -> provider disk inputs
    secret_cli: str
    object_scheme: str  # model.source scheme of the cloud's object storage
    node_tools: tuple[str, ...]  # the cloud CLIs the node's boot scripts call; every image recipe installs them
    data_disk: str  # the data disk's device on the node (gpufleet-prepare formats it once and mounts it)
    example_bucket_suffix: str = ""  # what `region new` appends to its example bucket name


PROFILES = {
    "alicloud": CloudProfile(
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
    ),
    "tencentcloud": CloudProfile(
        name="tencentcloud",
        role_kind="CVM CAM role",
        disk_categories={
            "standard": {"category": "CLOUD_PREMIUM"},
            "performance": {"category": "CLOUD_SSD"},
            "high": {"category": "CLOUD_HSSD"},
        },
        # A secret created without a VersionId has the version SSM_Current; there is no "latest" alias
        # (SSM CreateSecret, VersionId: https://cloud.tencent.com/document/product/1105/40529, read 2026-12-03).
        secret_cli='tccli ssm GetSecretValue --cli-unfold-argument --SecretName "${API_KEY_SECRET}" --VersionId SSM_Current '
        '--region "${GPUFLEET_REGION}" --use-cvm-role | json_field SecretString',
        object_scheme="cos",
        node_tools=("coscli", "tccli"),
        # CVM cloud disks appear as /dev/vdb (CBS docs "Initializing Cloud Disks"); estimate for every GPU family.
        data_disk="/dev/vdb",
        # COS bucket names end in -<APPID> (https://cloud.tencent.com/document/product/436/13312); 1250000000 is
        # the APPID COS's own docs use in examples: replace it with yours.
        example_bucket_suffix="-1250000000",
    ),
}

# capability -> cloud -> None (supported) or the message preview shows.
CAPABILITIES: dict[str, dict[str, str | None]] = {
    "gpu_metric_autoscaling": {
        "alicloud": "ESS event-triggered tasks read no GPU metric; scaling rules use CPU utilisation, GPU load is alarmed by CloudMonitor",
        "tencentcloud": "AS scaling policies read no GPU metric; scaling uses CPU utilisation, GPU load is alarmed by Cloud Monitor",
    },
    "subscription_in_autoscaling": {
        "alicloud": "ESS creates only pay-as-you-go or spot instances; with monthly/yearly billing the min replicas are "
        "subscription ECS instances attached to the scaling group, and nodes above min are pay-as-you-go",
        "tencentcloud": "AS can start PREPAID nodes, but a node bought for a term and scaled in hours later is paid for the "
        "whole term; with monthly/yearly billing the min replicas are PREPAID CVMs attached to the group (protected from "
        "scale-in), and nodes above min are pay-as-you-go",
    },
    "layer7_listener": {
        "alicloud": None,
        "tencentcloud": "the CLB listener is TCP (layer 4) with an HTTP health check: health checks on an HTTP listener "
        "need a rule per URL, and the scaling group then needs the rule id",
    },
    "gpu_hardware_alarms": {
        "alicloud": "CloudMonitor has no ECC / retired-page GPU event alarm in this program; only utilisation and memory alarms",
        "tencentcloud": None,
    },
}

REGISTRY: dict[str, dict[str, str]] = {
    cloud: {"program": f"gpufleet.components.{cloud}.program", "checks": f"gpufleet.components.{cloud}.checks"}
    for cloud in ("alicloud", "tencentcloud")
}


def profile(cloud: str) -> CloudProfile:
    return PROFILES[cloud]


def has_program(cloud: str) -> bool:
    return importlib.util.find_spec(REGISTRY[cloud]["program"]) is not None


def program(cloud: str) -> ModuleType:
    return importlib.import_module(REGISTRY[cloud]["program"])


def _checks(cloud: str) -> ModuleType:
    return importlib.import_module(REGISTRY[cloud]["checks"])


def spec_problems(spec) -> list[tuple[str, str]]:
    """What the spec's cloud cannot declare as written (field path, message)."""
    return _checks(spec.cloud).spec_problems(spec)


def notes(cloud: str, spec=None) -> list[str]:
    """What `gpufleet preview` tells about the cloud (CAPABILITIES) and, given a spec, about this fleet on it."""
    out = [f"{cap}: {by_cloud[cloud]}" for cap, by_cloud in CAPABILITIES.items() if by_cloud.get(cloud)]
    return out + (_checks(cloud).notes(spec) if spec is not None else [])


def registry_problems(clouds: tuple[str, ...]) -> list[str]:
    """What a cloud of the catalog misses here: a profile, a registry entry, a CAPABILITIES value, its modules' functions."""
    out = []
    for cloud in clouds:
        if cloud not in PROFILES:
            out.append(f"{cloud}: no PROFILES entry")
        out += [
            f"{cloud}: CAPABILITIES[{cap!r}] has no value (None = supported, else the message)"
            for cap, by_cloud in CAPABILITIES.items()
            if cloud not in by_cloud
        ]
        if cloud not in REGISTRY:
            out.append(f"{cloud}: no REGISTRY entry")
            continue
        needed = {"program": ("declare",), "checks": ("spec_problems", "notes")}
        for role, functions in needed.items():
            try:
                module = importlib.import_module(REGISTRY[cloud][role])
            except ImportError as exc:
                out.append(f"{cloud}: {role} module {REGISTRY[cloud][role]} does not import ({exc})")
                continue
            out += [f"{cloud}: {module.__name__} has no {f}()" for f in functions if not callable(getattr(module, f, None))]
    return out
