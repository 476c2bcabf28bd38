"""Fake cloud: the facts cloud-neutral code reads, and what it cannot do."""

from __future__ import annotations

from pathlib import Path

from gpufleet.registry import Capability, CloudProfile, InstanceMetadata, NodeTool

DATA = Path(__file__).resolve().parent / "data"

PROFILE = CloudProfile(
    name="fakecloud",
    role_kind="fake node role",
    disk_categories={"standard": {"category": "fk-hdd"}, "performance": {"category": "fk-ssd"}, "high": {"category": "fk-ssd"}},
    secret_cli='fkctl secret get "${API_KEY_SECRET}" --region "${GPUFLEET_REGION}" --role "${GPUFLEET_ROLE}"',
    object_scheme="fks",
    # the fake object store's CLI, with the node role's keys (rendered into gpufleet-prepare's fetch case)
    fetch_command="""
fkctl object get "${MODEL_SOURCE}" --output "${archive}" --role "${GPUFLEET_ROLE}" --region "${GPUFLEET_REGION}"
""",
    node_tools=(NodeTool("fkctl"),),
    data_disk="/dev/vdb",
    catalog=DATA / "catalog.yaml",
    price_data=DATA,
    image_id_prefix="fk-img-",
    computed={"fakecloud:lb/balancer:Balancer": ("address",)},
    instance_metadata=InstanceMetadata(
        url="http://169.254.0.23/fake/meta-data/", spot_notice="spot/notice", role_credentials="role-keys/"
    ),
    # custom metrics published by the node (node_agent.py in this package, shipped beside the node agent)
    node_metrics_api="https://metrics.{region}.fakecloud.example/v1/points",
    node_lifecycle_note="the fake group adds a node once its health check passes",
)

CAPABILITIES: dict[Capability, str | None] = {
    Capability.GPU_METRIC_AUTOSCALING: "the fake autoscaler reads no metric at all",
    Capability.SUBSCRIPTION_IN_AUTOSCALING: "the fake cloud bills by the hour only",
    Capability.LAYER7_LISTENER: None,
    Capability.GPU_HARDWARE_ALARMS: "the fake cloud has no alarms",
}
