"""Tencent Cloud's profile: the facts cloud-neutral code reads, and what the cloud cannot do (preview notes)."""

from __future__ import annotations

from pathlib import Path

from gpufleet.registry import Capability, CloudProfile, InstanceMetadata, NodeTool

PROFILE = CloudProfile(
    name="tencentcloud",
    vendor="Tencent",
    provider_package="tencentcloud-iac-pulumi",
    # CVM InquiryPriceRunInstances (prices.py): one endpoint for every region; it prices an instance type with an image
    price_endpoint="cvm.tencentcloudapi.com",
    price_credentials=("TENCENTCLOUD_SECRET_ID", "TENCENTCLOUD_SECRET_KEY"),
    # tencentcloud-iac-pulumi 0.2.3's config (tencentcloud_iac_pulumi/config/vars.py, outputs.py): the keys that hold a
    # credential, each with the environment variable its docstring names. The MFA codes (assumeRole.tokenCode,
    # mfaCertification.tokenCode) are one-time codes, stale once written, and are not listed. tests/test_clouds.py
    # reads the package's config for the keys named like a credential.
    provider_credentials={
        "secretId": "the environment variable TENCENTCLOUD_SECRET_ID",
        "secretKey": "the environment variable TENCENTCLOUD_SECRET_KEY",
        "securityToken": "the environment variable TENCENTCLOUD_SECURITY_TOKEN",
        "assumeRoleWithSaml.samlAssertion": "the environment variable TENCENTCLOUD_ASSUME_ROLE_SAML_ASSERTION",
        "assumeRoleWithWebIdentity.webIdentityToken": "the environment variable TENCENTCLOUD_ASSUME_ROLE_WEB_IDENTITY_TOKEN",
    },
    prices_take_image=True,
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
    fetch_command="""
# coscli reads credentials only from a config file: CvmRole mode asks the metadata service for the role's
# temporary keys. The bucket entry gives coscli its region (endpoint cos.<region>.myqcloud.com), which a
# CVM in the same region reaches over the internal network (COS docs, "CVM内网访问COS").
cos_config="$(mktemp --suffix=.yaml)"
trap 'rm -f "${cos_config}"' EXIT
bucket="${MODEL_SOURCE#cos://}"
bucket="${bucket%%/*}"
cat > "${cos_config}" <<COSCFG
cos:
  base:
    mode: CvmRole
    cvmrolename: ${GPUFLEET_ROLE}
    protocol: https
  buckets:
    - name: ${bucket}
      alias: ${bucket}
      region: ${GPUFLEET_REGION}
COSCFG
coscli --config-path "${cos_config}" cp "${MODEL_SOURCE}" "${archive}"
""",
    # coscli: a release binary, mirrored into the recipes' tool_mirror (its sha256 filled in before `image build`);
    # tccli: Tencent's CLI is a PyPI package (tencentcloud-cli), version read from PyPI on 2026-12-03.
    node_tools=(NodeTool("coscli"), NodeTool("tccli", package="tccli", version="3.1.118.1")),
    # CVM cloud disks appear as /dev/vdb (CBS docs "Initializing Cloud Disks"); estimate for every GPU family.
    data_disk="/dev/vdb",
    # COS bucket names end in -<APPID> (https://cloud.tencent.com/document/product/436/13312); 1250000000 is
    # the APPID COS's own docs use in examples: replace it with yours.
    example_bucket_suffix="-1250000000",
    # alarms notify a Cloud Monitor notification template (checks.contact_group_problem): an example id of that form,
    # as the shipped Tencent stacks have; a name such as defaults.yaml's llm-oncall would be declared notifying nobody
    example_contact_group="notice-{env}-llmoncall",
    catalog=Path(__file__).resolve().parents[2] / "stacks" / "data" / "tencentcloud.yaml",
    image_id_prefix="img-",
    price_data=Path(__file__).resolve().parents[2] / "cost" / "data",
    # outputs the provider computes that the program reads; the mock engine fills them with a named placeholder
    # CVM instance metadata: the spot reclaim notice, 404 until scheduled ("Querying the Reclamation Status of a
    # Spot Instance", https://www.tencentcloud.com/document/product/213/32487, read 2026-12-03). No session token.
    instance_metadata=InstanceMetadata(
        url="http://metadata.tencentyun.com/latest/meta-data/", spot_notice="spot/termination-time"
    ),
    node_metrics_note="Cloud Monitor's custom-metric reporting API (PutMonitorData) was removed on 2023-08-11; the "
    "scaler function (components/tencentcloud/scaler/) reads each node's /metrics/vllm instead",
    node_lifecycle_note="AS puts a new node behind the CLB itself and health-checks it after lb_health_check_grace_period; "
    "the only lifecycle hook (scale-in) runs the drain through TAT, which ends its wait",
    computed={
        "tencentcloud:Clb/instance:Instance": ("clbVips[]",),  # [] marks a list output
        "tencentcloud:Eip/instance:Instance": ("publicIp",),
        "tencentcloud:Clb/listener:Listener": ("listenerId",),
        # invokes: the owner uin in the scaler's CAM resources (autoscaler.py)
        "tencentcloud:User/getInfo:getInfo": ("ownerUin",),
    },
)

CAPABILITIES: dict[Capability, str | None] = {
    Capability.GPU_METRIC_AUTOSCALING: "AS scaling policies read no GPU or custom metric; with autoscaling.metric queue or "
    "kv_cache an SCF function reads vLLM's metrics from the nodes each minute and executes the AS policies (docs/scaling.md)",
    Capability.SUBSCRIPTION_IN_AUTOSCALING: "AS can start PREPAID nodes, but a node bought for a term and scaled in hours "
    "later is paid for the whole term; with monthly/yearly billing the min replicas are PREPAID CVMs attached to the group "
    "(protected from scale-in), and nodes above min are pay-as-you-go",
    Capability.LAYER7_LISTENER: "the CLB listener is TCP (layer 4) with an HTTP health check: health checks on an HTTP "
    "listener need a rule per URL, and the scaling group then needs the rule id",
    Capability.GPU_HARDWARE_ALARMS: None,
}
