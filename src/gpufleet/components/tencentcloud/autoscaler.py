"""The Tencent path from vLLM's queue to AS (docs/scaling.md): a timer-triggered SCF function in the fleet's VPC reads
each node's /metrics/vllm on the gateway's metrics port and executes the AS scaling policies of the group.

Why a function: Cloud Monitor alarm policies can execute AS policies (trigger_tasks type AS), but only for cloud-product
metrics (CreateAlarmPolicy MonitorType: "MT_QCE=云产品监控" in the tencentcloud-sdk-go monitor/v20180724 models.go that
provider v1.82.42 vendors), and the custom-metric upload API PutMonitorData is not in that SDK any more (removed with
the vendor update of terraform-provider-tencentcloud commit 3bf6f4b4a, 2023-08-30); AS policies themselves take only
CPU / memory / LAN / WAN metrics (as/resource_tc_as_scaling_policy.go, SCALING_GROUP_METRIC_NAME).

The handler (components/tencentcloud/scaler/index.py, entry index.main_handler, standard library only) is zipped by
the folder's package.py into a file named after its content; the provider reads `zip_file` from disk when it creates or
updates the function, never in a preview, and expands `~` (scf/resource_tc_scf_function.go: homedir.Expand, from
HOME), so the path is the same on every machine. Only a deploy writes the file (code_file): a preview, gpufleet's offline one or `pulumi preview`, names
it and writes nothing outside the project. Runtime Python3.9:
provider v1.82.42 passes `runtime` through without a validator (the description still lists Python3.6, which the
vendored scf/v20180416 SDK names too), and Tencent's own provider examples create Python3.9 functions
(tencentcloud/services/scf/resource_tc_scf_trigger.md at 693fd5c, 2026-07-27). No public URL: the function has no
API gateway / http trigger, only the timer, and runs in the VPC with public network off.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Sequence
from pathlib import Path

import pulumi
import tencentcloud_iac_pulumi as tencentcloud
from msgspec import Struct

from gpufleet.components.tencentcloud import rules
from gpufleet.components.tencentcloud.role import attached_role
from gpufleet.components.tencentcloud.scaler import package
from gpufleet.errors import Problem, UserError
from gpufleet.files import write_atomic
from gpufleet.naming import Names
from gpufleet.stacks.loader import Fleet
from gpufleet.stacks.spec import Autoscaling

SCALER = Path(__file__).parent / "scaler"
HANDLER = "index.main_handler"
ZIP_DIR = "~/.cache/gpufleet/scf"  # `~` expanded by the provider (homedir.Expand)
METRICS_PATH = "/metrics/vllm"  # the gateway serves vLLM's metrics here on serving.gateway.metrics_port (images/gateway.py)


def scaler_zip() -> bytes:
    """The handler's code package, byte-for-byte the same on every run (the scaler folder's own package.py builds it:
    index.py and the signals it reads). A missing file raises: the package ships it, nothing falls back to empty."""
    return package.zip_bytes()


def zip_path(data: bytes) -> str:
    return f"{ZIP_DIR}/scaler-{hashlib.sha256(data).hexdigest()[:16]}.zip"


def code_file() -> str:
    """The path the function's `zip_file` names. The file is written only when the program deploys: a preview
    (gpufleet's offline one, `check`, the rollout commands, `pulumi preview`) never reads it, so it writes nothing
    into the user's cache (it did, and a HOME it could not write in was a traceback of every Tencent preview)."""
    data = scaler_zip()
    if pulumi.runtime.is_dry_run():
        return zip_path(data)
    return write_zip(data)


def write_zip(data: bytes | None = None) -> str:
    """Write the code package (once per content: a file holding other bytes is replaced) where zip_path says, and
    return that path. Atomic (files.write_atomic: a temporary file of its own, fsync'ed, renamed), so two runs at once
    or a kill never leave half a zip; a folder that cannot be made or written is a UserError naming it and the fix.
    The folder is always ~/.cache/gpufleet/scf (XDG_CACHE_HOME is not followed): the path is the function's input, and
    one that differs between operators would update the function on every deploy by another."""
    data = scaler_zip() if data is None else data
    path = zip_path(data)
    what = "where `pulumi up` writes the Tencent scaler's code package for the provider to read"
    fix = "run `pulumi up` with HOME set to a folder you can write in"
    home = os.environ.get("HOME") or os.path.expanduser("~")
    if not os.path.isabs(home):
        raise UserError([Problem("HOME", "", f"is not set: {ZIP_DIR} has no place ({what}); {fix}")])
    target = Path(home) / path.removeprefix("~/")
    try:
        if target.is_file() and target.read_bytes() == data:
            return path
        target.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UserError(
            [Problem("HOME", str(target.parent), f"cannot create or read this folder ({exc.strerror}), {what}: {fix}")]
        ) from None
    try:
        write_atomic(target, data, shown=str(target))
    except UserError as exc:
        raise UserError([Problem("HOME", str(target), f"{p.message} ({what}): {fix}") for p in exc.problems]) from None
    return path


class AutoscalerArgs(Struct, frozen=True):
    """What the SCF scaler uses (built by program.autoscaler_args): the group's scaling signal, where the function
    runs, and the scaling groups and policies it executes (scaling.py)."""

    names: Names
    region: str
    autoscaling: Autoscaling  # the metric and its thresholds
    metrics_port: int  # the gateway's, where the function reads /metrics/vllm
    vpc_id: pulumi.Input[str]
    subnet_id: pulumi.Input[str]  # the first zone's
    group_ids: Sequence[pulumi.Output[str]]  # the serving group's AS groups (with spot: the spot group and its base)
    out_policy_id: pulumi.Input[str]
    in_policy_id: pulumi.Input[str]
    tags: dict[str, str]


def environment(args: AutoscalerArgs) -> dict:
    """The function's environment (the handler reads exactly these); ids may be pulumi Outputs."""
    a = args.autoscaling
    metric = a.metric
    return {
        "GPUFLEET_REGION": args.region,
        "GPUFLEET_SCALING_GROUP": list(args.group_ids),  # joined with "," by the component
        "GPUFLEET_SCALE_OUT_POLICY": args.out_policy_id,
        "GPUFLEET_SCALE_IN_POLICY": args.in_policy_id,
        "GPUFLEET_METRIC": metric,
        "GPUFLEET_SCALE_OUT_ABOVE": f"{getattr(a, metric).scale_out_above:g}",
        "GPUFLEET_SCALE_IN_BELOW": f"{getattr(a, metric).scale_in_below:g}",
        "GPUFLEET_METRICS_PORT": str(args.metrics_port),
        "GPUFLEET_METRICS_PATH": METRICS_PATH,
    }


def function_args() -> dict:
    """Everything of the function that is not an id: runtime, handler, size, the one-minute timer, no public net."""
    return {
        "runtime": rules.SCF_RUNTIME,
        "handler": HANDLER,
        "mem_size": rules.SCF_MEM_MB,
        "timeout": rules.SCF_TIMEOUT_S,
        "enable_public_net": False,
        "triggers": [{"name": "every-minute", "type": "timer", "trigger_desc": rules.SCF_EVERY_MINUTE}],
    }


def group_resource(region: str, uin: str, group_id: str) -> str:
    """A scaling group as CAM names it for Auto Scaling: qcs::as:$region:$account:auto-scaling-group/$autoScalingGroupId,
    $account being uin/<owner uin> (CAM "Auto Scaling" resource-level authorization page,
    https://www.tencentcloud.com/document/product/598/57063, read 2026-12-04). The old `autoscalinggroup/<id>` named no
    resource CAM knows: every call of the scaler was denied."""
    return f"qcs::as:{region}:uin/{uin}:auto-scaling-group/{group_id}"


# What the scaler calls (components/tencentcloud/scaler/index.py: api.call(service, action, ...)) -> its resource:
# "groups" = this fleet's scaling groups only; "*" = CVM's DescribeInstances, which takes no resource-level scope.
SCALER_CALLS = {
    ("as", "DescribeAutoScalingInstances"): "groups",
    ("as", "ExecuteScalingPolicy"): "groups",
    ("cvm", "DescribeInstances"): "*",
}


def policy_document(region: str, group_ids: list, uin: str = "*") -> dict:
    """The function's CAM role: exactly the calls the scaler makes (SCALER_CALLS), on exactly this fleet's groups in
    this account (`uin`: the owner's, read with tencentcloud.user.get_info at deploy time)."""
    groups = [group_resource(region, uin, g) for g in group_ids]
    return {
        "version": "2.0",
        "statement": [
            {"effect": "allow", "action": [f"name/{svc}:{action}"], "resource": groups if where == "groups" else ["*"]}
            for (svc, action), where in SCALER_CALLS.items()
        ],
    }


def trust_document() -> dict:
    return {
        "version": "2.0",
        "statement": [{"action": "name/sts:AssumeRole", "effect": "allow", "principal": {"service": ["scf.qcloud.com"]}}],
    }


def reaction_s(fleet: Fleet) -> int:
    """Worst case from a queue building to the policy's execution: one timer period (the handler acts on the reading
    it takes; the cooldown of the executed policy keeps it from acting again too soon)."""
    return rules.SCF_TIMER_PERIOD_S


class Autoscaler(pulumi.ComponentResource):
    """The SCF scaler: its CAM role, the function in the fleet's first subnet and its one-minute timer."""

    def __init__(self, name: str, args: AutoscalerArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpufleet:tencentcloud:Autoscaler", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        physical, tags, region = args.names, args.tags, args.region
        group_ids = list(args.group_ids)
        uin = tencentcloud.user.get_info_output(opts=pulumi.InvokeOutputOptions(parent=self)).owner_uin
        role_name = physical(name)
        attached = attached_role(
            f"{name}-role",
            role_name,
            physical(f"{name}-role"),
            trust_document(),
            pulumi.Output.all(uin, *group_ids).apply(lambda v: json.dumps(policy_document(region, list(v[1:]), v[0]))),
            (
                "gpufleet SCF scaler: executes this fleet's AS policies",
                "gpufleet SCF scaler: execute the fleet's scaling policies, read its nodes",
            ),
            tags,
            child,
        )
        env = environment(args)
        env["GPUFLEET_SCALING_GROUP"] = pulumi.Output.all(*group_ids).apply(lambda ids: ",".join(ids))
        self.function = tencentcloud.scf.Function(
            f"{name}-fn",
            name=physical(name),
            # CreateFunction Description: letters, digits, space, comma, newline, period and Chinese only (rules.py)
            description="gpufleet scaler. Scales the AS group on the vLLM queue or KV cache read from the nodes.",
            zip_file=code_file(),
            role=role_name,
            vpc_id=args.vpc_id,
            subnet_id=args.subnet_id,
            environment=env,
            tags=tags,
            opts=pulumi.ResourceOptions(parent=self, depends_on=[attached]),
            **function_args(),
        )
        self.register_outputs({"function": self.function.name})
