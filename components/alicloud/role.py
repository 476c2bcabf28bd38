"""The node's RAM role: read the model bucket and the one API-key secret, nothing else."""

from __future__ import annotations

import json

import pulumi
import pulumi_alicloud as alicloud
from gpufleet.stacks.loader import Fleet


def policy_document(fleet: Fleet) -> dict:
    statements = []
    source = fleet.spec.model.source
    if source.startswith("oss://"):
        bucket = source[len("oss://") :].split("/", 1)[0]
        statements.append({"Effect": "Allow", "Action": ["oss:GetObject"], "Resource": [f"acs:oss:*:*:{bucket}/*"]})
    if fleet.spec.serving.api_key_secret:
        statements.append(
            {
                "Effect": "Allow",
                "Action": ["kms:GetSecretValue"],
                "Resource": [f"acs:kms:{fleet.spec.region}:*:secret/{fleet.spec.serving.api_key_secret}"],
            }
        )
    statements.append({"Effect": "Allow", "Action": ["cms:PutCustomMetric"], "Resource": ["*"]})
    return {"Version": "1", "Statement": statements}


def trust_document() -> dict:
    return {
        "Version": "1",
        "Statement": [{"Action": "sts:AssumeRole", "Effect": "Allow", "Principal": {"Service": ["ecs.aliyuncs.com"]}}],
    }


class NodeRole(pulumi.ComponentResource):
    def __init__(self, name: str, fleet: Fleet, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpufleet:alicloud:NodeRole", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        self.role_name = f"{fleet.prefix}-node"
        role = alicloud.ram.Role(
            f"{name}-node",
            role_name=self.role_name,
            assume_role_policy_document=json.dumps(trust_document()),
            description="gpufleet GPU node",
            opts=child,
        )
        policy = alicloud.ram.Policy(
            f"{name}-node", policy_name=f"{name}-node", policy_document=json.dumps(policy_document(fleet)), opts=child
        )
        alicloud.ram.RolePolicyAttachment(
            f"{name}-node", role_name=role.role_name, policy_name=policy.policy_name, policy_type="Custom", opts=child
        )
        self.register_outputs({})
