"""The node's CAM role: read the model bucket and the one API-key secret, nothing else (no metrics: the SCF scaler
reads each node's /metrics/vllm, components/tencentcloud/autoscaler.py).

Resource names follow CAM's six-part form qcs::<service>:<region>:<account>:<resource>; a COS bucket is
named <bucket>-<appid>, and its resource is qcs::cos:<region>:uid/<appid>:<bucket>-<appid>/<key>.
"""

from __future__ import annotations

import json
import re

import pulumi
import tencentcloud_iac_pulumi as tencentcloud
from msgspec import Struct

from gpufleet.naming import Names


def _cos_resource(source: str, region: str) -> str:
    bucket = source[len("cos://") :].split("/", 1)[0]
    appid = m.group(1) if (m := re.search(r"-(\d+)$", bucket)) else "*"
    return f"qcs::cos:{region}:uid/{appid}:{bucket}/*"


class NodeRoleArgs(Struct, frozen=True):
    """What the node role uses (built by program.role_args): of a rollout, both groups' models and secrets."""

    names: Names
    region: str
    model_sources: tuple[str, ...]  # each serving group's model source
    api_key_secrets: tuple[str, ...]  # each serving group's API-key secret name (those that have one)
    tags: dict[str, str]


def policy_document(args: NodeRoleArgs) -> dict:
    """The node role's policy: read the model's archive and the API-key secret, of the fleet and of a rollout's
    candidate group (both groups' nodes take this role)."""
    region = args.region
    objects: list[str] = []
    buckets: list[str] = []
    secrets: list[str] = []
    for source in args.model_sources:
        if source.startswith("cos://"):
            obj = _cos_resource(source, region)
            objects += [] if obj in objects else [obj]
            # `coscli cp` asks HeadBucket before it copies (tencentyun/coscli cmd/cp.go); its CAM resource is the
            # bucket itself (qcs::cos:<region>:uid/<appid>:<bucket>/), not an object under it.
            bucket = obj.removesuffix("*")
            buckets += [] if bucket in buckets else [bucket]
    for name in args.api_key_secrets:
        if name:
            secret = f"qcs::ssm:{region}:uin/*:secret/creatorUin/*/{name}"
            secrets += [] if secret in secrets else [secret]
    statements = []
    if objects:
        statements.append({"effect": "allow", "action": ["name/cos:GetObject", "name/cos:HeadObject"], "resource": objects})
        statements.append({"effect": "allow", "action": ["name/cos:HeadBucket"], "resource": buckets})
    if secrets:
        statements.append({"effect": "allow", "action": ["name/ssm:GetSecretValue"], "resource": secrets})
    # no monitor:PutMonitorData: the node publishes nothing on Tencent (the API was removed; the SCF scaler reads
    # /metrics/vllm instead, components/tencentcloud/autoscaler.py), so the role does not carry the permission
    return {"version": "2.0", "statement": statements}


def trust_document() -> dict:
    return {
        "version": "2.0",
        "statement": [{"action": "name/sts:AssumeRole", "effect": "allow", "principal": {"service": ["cvm.qcloud.com"]}}],
    }


def attached_role(
    name: str,
    role_name: str,
    policy_name: str,
    trust: dict,
    policy,
    descriptions: tuple[str, str],
    tags: dict,
    opts: pulumi.ResourceOptions,
) -> tencentcloud.cam.RolePolicyAttachment:
    """A CAM role with one policy of its own attached (`name` names the three resources; role_name and policy_name are
    the account-wide CAM names; `policy` is the policy document as JSON text or an Output of it; descriptions: the
    role's, the policy's)."""
    role = tencentcloud.cam.Role(
        name, name=role_name, document=json.dumps(trust), console_login=False, description=descriptions[0], tags=tags, opts=opts
    )
    policy_res = tencentcloud.cam.Policy(name, name=policy_name, document=policy, description=descriptions[1], opts=opts)
    return tencentcloud.cam.RolePolicyAttachment(name, role_id=role.id, policy_id=policy_res.id, opts=opts)


class NodeRole(pulumi.ComponentResource):
    def __init__(self, name: str, args: NodeRoleArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpufleet:tencentcloud:NodeRole", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        self.role_name = args.names(f"{args.names.prefix}-node")
        attached_role(
            f"{name}-node",
            self.role_name,
            args.names(f"{name}-node"),
            trust_document(),
            json.dumps(policy_document(args)),
            ("gpufleet GPU node", "gpufleet GPU node: model bucket, API-key secret"),
            args.tags,
            child,
        )
        self.register_outputs({})
