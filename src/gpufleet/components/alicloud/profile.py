"""Alibaba Cloud's profile: the facts cloud-neutral code reads, and what the cloud cannot do (preview notes)."""

from __future__ import annotations

from pathlib import Path

from gpufleet.registry import Capability, CloudProfile, InstanceMetadata, NodeTool

PROFILE = CloudProfile(
    name="alicloud",
    vendor="Alibaba",
    provider_package="pulumi-alicloud",
    # ECS DescribePrice / DescribeSpotPriceHistory (prices.py): the region's ECS endpoint, the SDK's credentials
    price_endpoint="ecs.{region}.aliyuncs.com",
    price_credentials=("ALIBABA_CLOUD_ACCESS_KEY_ID", "ALIBABA_CLOUD_ACCESS_KEY_SECRET"),
    # pulumi-alicloud 4.0.0's config (pulumi_alicloud/config/vars.py, outputs.py AssumeRoleWithOidc): the keys that hold
    # a credential. The provider (the bridged terraform-provider-alicloud, alicloud/provider.go: access_key, secret_key,
    # security_token, read 2026-12-07) also reads each from the environment (ALICLOUD_ACCESS_KEY / _SECRET_KEY / _SECURITY_TOKEN, or the
    # names below); the OIDC token also from the file assumeRoleWithOidc.oidcTokenFile names. tests/test_clouds.py
    # reads the package's config for the keys named like a credential.
    provider_credentials={
        "accessKey": "the environment variable ALIBABA_CLOUD_ACCESS_KEY_ID",
        "secretKey": "the environment variable ALIBABA_CLOUD_ACCESS_KEY_SECRET",
        "securityToken": "the environment variable ALIBABA_CLOUD_SECURITY_TOKEN",
        "assumeRoleWithOidc.oidcToken": "a file named by alicloud:assumeRoleWithOidc.oidcTokenFile",
    },
    role_kind="ECS RAM role",
    disk_categories={
        "standard": {"category": "cloud_essd", "performance_level": "PL0"},
        "performance": {"category": "cloud_essd", "performance_level": "PL1"},
        "high": {"category": "cloud_essd", "performance_level": "PL2"},
    },
    secret_cli='aliyun kms GetSecretValue --SecretName "${API_KEY_SECRET}" --region "${GPUFLEET_REGION}" '
    '--mode EcsRamRole --ram-role-name "${GPUFLEET_ROLE}" | json_field SecretData',
    object_scheme="oss",
    fetch_command="""
# The in-region internal endpoint: no public traffic fee for tens of GB, and no NAT in the path.
ossutil cp "${MODEL_SOURCE}" "${archive}" --force --mode EcsRamRole --ecs-role-name "${GPUFLEET_ROLE}" \\
  -e "oss-${GPUFLEET_REGION}-internal.aliyuncs.com"
""",
    # Release binaries (aliyun-cli as a .tgz holding one binary): mirror each into the recipes' tool_mirror and fill in
    # its sha256; `image build` refuses the recipe until then.
    node_tools=(NodeTool("ossutil"), NodeTool("aliyun", name="aliyun-cli")),
    # virtio-blk names the second disk vdb (ECS docs "Initialize a data disk on Linux"); NVMe-based
    # families (e.g. ebmgn7) name it /dev/nvme1n1: estimate, not checked on a GPU family.
    data_disk="/dev/vdb",
    catalog=Path(__file__).resolve().parents[2] / "stacks" / "data" / "alicloud.yaml",
    image_id_prefix="m-",
    price_data=Path(__file__).resolve().parents[2] / "cost" / "data",
    # outputs the provider computes that the program reads; the mock engine fills them with a named placeholder
    # ECS instance metadata (read 2026-12-03): hardened mode's session token (PUT latest/api/token), the spot
    # reclaim notice (404 until scheduled, then a UTC time; "Detect and respond to spot instance interruption
    # events", https://www.alibabacloud.com/help/en/ecs/user-guide/best-practices-for-preemptible-instances/) and the
    # RAM role's STS keys ("Obtain a temporary authorization token",
    # https://www.alibabacloud.com/help/en/ecs/user-guide/obtain-a-temporary-authorization-token).
    instance_metadata=InstanceMetadata(
        url="http://100.100.100.200/latest/meta-data/",
        spot_notice="instance/spot/termination-time",
        token_url="http://100.100.100.200/latest/api/token",
        token_ttl_header="X-aliyun-ecs-metadata-token-ttl-seconds",
        token_header="X-aliyun-ecs-metadata-token",
        role_credentials="ram/security-credentials/",
        instance_id="instance-id",
    ),
    # CloudMonitor's VPC endpoint (no NAT in the path), CloudMonitor "Endpoints",
    # https://alibabacloud.com/help/en/cms/developer-reference/request-methods (read 2026-12-03).
    node_metrics_api="https://cms-vpc.{region}.aliyuncs.com/",
    # ESS, where the node ends its SCALE_OUT wait (CompleteLifecycleAction): the endpoint alibabacloud_ess20220222
    # 1.13.3 (client.py _endpoint_map) names for the catalog's regions cn-hangzhou, cn-shanghai and cn-beijing; other
    # regions of that map have ess.<region>.aliyuncs.com. Public: the node reaches it through the NAT gateway.
    node_lifecycle_api="https://ess.aliyuncs.com/",
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
