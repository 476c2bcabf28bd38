"""The node's RAM role: read the model bucket and the one API-key secret, publish its vLLM metrics, end its own
lifecycle wait on its scaling group; nothing else (docs/clouds.md lists what the shipped stacks grant)."""

from __future__ import annotations

import json

import pulumi
import pulumi_alicloud as alicloud
from msgspec import Struct

from gpufleet.naming import Names


class NodeRoleArgs(Struct, frozen=True):
    """What the node role uses (built by program.role_args): of a rollout, both groups' models and secrets."""

    names: Names
    region: str
    model_sources: tuple[str, ...]  # each serving group's model source
    api_key_secrets: tuple[str, ...]  # each serving group's API-key secret name (those that have one)
    lifecycle_wait: bool  # the groups' new nodes wait for `gpufleet-agent ready` (a health-check grace period)
    tags: dict[str, str]


def policy_document(args: NodeRoleArgs, group_id=None) -> dict:
    """The node role's policy. group_id: the serving group's id, or a list of them (a rollout's two groups: the node
    role is the fleet's, the candidate's nodes read its model and secret and end their own group's waits)."""
    statements: list[dict[str, str | list[str] | list[pulumi.Output[str]]]] = []  # resources may be Outputs
    buckets = []
    for source in args.model_sources:
        if source.startswith("oss://"):
            bucket = source[len("oss://") :].split("/", 1)[0]
            if f"acs:oss:*:*:{bucket}/*" not in buckets:
                buckets.append(f"acs:oss:*:*:{bucket}/*")
    if buckets:
        statements.append({"Effect": "Allow", "Action": ["oss:GetObject"], "Resource": buckets})
    secrets = []
    for secret in args.api_key_secrets:
        if secret:
            arn = f"acs:kms:{args.region}:*:secret/{secret}"
            if arn not in secrets:
                secrets.append(arn)
    if secrets:
        statements.append({"Effect": "Allow", "Action": ["kms:GetSecretValue"], "Resource": secrets})
    statements.append({"Effect": "Allow", "Action": ["cms:PutCustomMetric"], "Resource": ["*"]})
    ids = [] if group_id is None else group_id if isinstance(group_id, list) else [group_id]
    if ids and args.lifecycle_wait:
        # the node ends its loading wait (ESS lifecycle hook, scaling.py) once vLLM serves: `gpufleet-agent ready`
        # (images/node_agent.py) finds its pending action in its group's activities and completes it, on this group
        # only (ARN acs:ess:{region}:{account}:scalinggroup/{id}, Auto Scaling RAM authorization reference).
        # DescribeLifecycleActions names only an activity id, no group: Resource * (read-only; the token it returns
        # completes nothing without CompleteLifecycleAction, which is scoped to the group).
        groups = [pulumi.Output.concat("acs:ess:", args.region, ":*:scalinggroup/", g) for g in ids]
        statements.append(
            {
                "Effect": "Allow",
                "Action": ["ess:DescribeScalingActivities", "ess:CompleteLifecycleAction"],
                "Resource": groups,
            }
        )
        statements.append({"Effect": "Allow", "Action": ["ess:DescribeLifecycleActions"], "Resource": ["*"]})
    return {"Version": "1", "Statement": statements}


def trust_document() -> dict:
    return {
        "Version": "1",
        "Statement": [{"Action": "sts:AssumeRole", "Effect": "Allow", "Principal": {"Service": ["ecs.aliyuncs.com"]}}],
    }


class NodeRole(pulumi.ComponentResource):
    def __init__(self, name: str, args: NodeRoleArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpufleet:alicloud:NodeRole", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        self.role_name = args.names(f"{args.names.prefix}-node")
        self._role = alicloud.ram.Role(
            f"{name}-node",
            role_name=self.role_name,
            assume_role_policy_document=json.dumps(trust_document()),
            description="gpufleet GPU node",
            tags=args.tags,
            opts=child,
        )
        self._name, self._args = name, args
        self.register_outputs({})

    def attach_policy(self, group_id) -> None:
        """The node's policy, declared once the scaling group exists (its id scopes the lifecycle permission)."""
        child = pulumi.ResourceOptions(parent=self)
        policy = alicloud.ram.Policy(
            f"{self._name}-node",
            policy_name=self._args.names(f"{self._name}-node"),
            policy_document=pulumi.Output.json_dumps(policy_document(self._args, group_id)),
            tags=self._args.tags,
            opts=child,
        )
        alicloud.ram.RolePolicyAttachment(
            f"{self._name}-node", role_name=self._role.role_name, policy_name=policy.policy_name, policy_type="Custom", opts=child
        )
