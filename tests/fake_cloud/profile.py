"""Fake cloud: the facts cloud-neutral code reads, and what it cannot do."""

from __future__ import annotations

from pathlib import Path

from gpufleet.registry import Capability, CloudProfile

DATA = Path(__file__).resolve().parent / "data"

PROFILE = CloudProfile(
    name="fakecloud",
    role_kind="fake node role",
    disk_categories={"standard": {"category": "fk-hdd"}, "performance": {"category": "fk-ssd"}, "high": {"category": "fk-ssd"}},
    secret_cli='fkctl secret get "${API_KEY_SECRET}" --region "${GPUFLEET_REGION}" --role "${GPUFLEET_ROLE}"',
    object_scheme="fks",
    node_tools=("fkctl",),
    data_disk="/dev/vdb",
    catalog=DATA / "catalog.yaml",
    price_data=DATA,
    image_id_prefix="fk-img-",
    computed={"fakecloud:lb/balancer:Balancer": ("address",)},
)

CAPABILITIES: dict[Capability, str | None] = {
    Capability.GPU_METRIC_AUTOSCALING: "the fake autoscaler reads no metric at all",
    Capability.SUBSCRIPTION_IN_AUTOSCALING: "the fake cloud bills by the hour only",
    Capability.LAYER7_LISTENER: None,
    Capability.GPU_HARDWARE_ALARMS: "the fake cloud has no alarms",
}
