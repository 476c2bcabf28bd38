"""Per-cloud facts and the registry of cloud programs, keyed by cloud name.

A cloud program is a module with `declare(fleet, parent) -> dict[str, Output]` (the stack outputs).
What a cloud cannot do is data here (CAPABILITIES), shown by `gpufleet preview`, never an exception.
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

    def secret_command(self, role_name: str) -> str:
        return self.secret_cli.replace("{role}", role_name)


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
        "--mode EcsRamRole --ram-role-name {role} | jq -r .SecretData",
    ),
    "tencentcloud": CloudProfile(
        name="tencentcloud",
        role_kind="CVM CAM role",
        disk_categories={
            "standard": {"category": "CLOUD_PREMIUM"},
            "performance": {"category": "CLOUD_SSD"},
            "high": {"category": "CLOUD_HSSD"},
        },
        secret_cli='tccli ssm GetSecretValue --SecretName "${API_KEY_SECRET}" --VersionId latest '
        '--region "${GPUFLEET_REGION}" --use-cvm-role | jq -r .SecretString',
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
        "tencentcloud": None,
    },
    "gpu_hardware_alarms": {
        "alicloud": "CloudMonitor has no ECC / retired-page GPU event alarm in this program; only utilisation and memory alarms",
        "tencentcloud": None,
    },
}

_MODULES = {"alicloud": "gpufleet.components.alicloud.program", "tencentcloud": "gpufleet.components.tencentcloud.program"}


def profile(cloud: str) -> CloudProfile:
    return PROFILES[cloud]


def has_program(cloud: str) -> bool:
    return importlib.util.find_spec(_MODULES[cloud]) is not None


def program(cloud: str) -> ModuleType:
    return importlib.import_module(_MODULES[cloud])


def notes(cloud: str) -> list[str]:
    return [f"{cap}: {by_cloud[cloud]}" for cap, by_cloud in CAPABILITIES.items() if by_cloud.get(cloud)]
