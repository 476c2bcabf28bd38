"""Alibaba Cloud's part of the node agent: the RPC signer, CloudMonitor custom metrics and ESS lifecycle waits.

Runs on the node, beside images/node_agent.py: standard library only, importing nothing of gpufleet (the image installs
this file as clouds/alicloud.py next to the agent, images/node.py; the agent loads it when GPUFLEET_CLOUD=alicloud).
The agent passes itself as `agent` (its http(), AgentError, Metadata and log()); this module holds only what is
Alibaba's: the signature, the role's STS keys as the metadata service gives them, the CMS and ESS calls.

- publisher(agent, cfg, env, cloud) -> an object with target, publish(values, now) -> request id, reset()
- lifecycle(agent, cfg, env, cloud, metadata) -> an object with pending(instance, group) -> (hook, token) or None and
  complete(found) -> request id
"""

from __future__ import annotations

import base64
import datetime
import hashlib
import hmac
import json
import time
import urllib.parse
import uuid

# CloudMonitor PutCustomMetric (API version 2019-01-01; RAM action cms:PutCustomMetric, the node role's only CMS
# permission): https://help.aliyun.com/en/cms/cloudmonitor-1-0/developer-reference/api-cms-2019-01-01-putcustommetric
CMS_VERSION = "2019-01-01"
CMS_ACTION = "PutCustomMetric"
RAW = "0"  # MetricList.N.Type: 0 raw values, CloudMonitor aggregates them per period (same page)
# ESS API version 2022-02-22, the operations and fields of alibabacloud_ess20220222 1.13.3 (models/_<operation>_request
# .py and _response_body.py): DescribeScalingActivities (ScalingGroupId, StatusCode InProgress -> ScalingActivities[]
# .ScalingActivityId), DescribeLifecycleActions (ScalingActivityId, LifecycleActionStatus Pending -> LifecycleActions[]
# with InstanceIds, LifecycleHookId, LifecycleActionToken), CompleteLifecycleAction (LifecycleHookId,
# LifecycleActionToken, LifecycleActionResult CONTINUE). The node role may call them on its own group only
# (components/alicloud/role.py).
ESS_VERSION = "2022-02-22"


# --- Alibaba Cloud RPC signature -------------------------------------------------------------------------------------


def percent_encode(value: str) -> str:
    """RFC 3986 encoding as Alibaba's RPC signature wants it: A-Z a-z 0-9 - _ . ~ kept, space %20, * %2A."""
    return urllib.parse.quote(value, safe="-_.~")


def rpc_string_to_sign(params: dict[str, str], method: str) -> str:
    query = "&".join(f"{percent_encode(k)}={percent_encode(v)}" for k, v in sorted(params.items()))
    return f"{method}&{percent_encode('/')}&{percent_encode(query)}"


def rpc_signature(params: dict[str, str], secret: str, method: str) -> str:
    """Alibaba Cloud RPC signature V1 (HMAC-SHA1, key = secret + "&"): "Signature mechanism",
    https://help.aliyun.com/en/document_detail/130769.html (worked example in tests/agent/test_agent_signatures.py)."""
    digest = hmac.new((secret + "&").encode(), rpc_string_to_sign(params, method).encode(), hashlib.sha1).digest()
    return base64.b64encode(digest).decode()


class RoleCredentials:
    """The instance RAM role's STS keys from the metadata service, renewed before they expire."""

    def __init__(self, agent, metadata, role: str):
        self.agent, self.metadata, self.role = agent, metadata, role
        self._keys: dict | None = None
        self._until = 0.0

    def get(self) -> dict:
        if self._keys is None or time.time() > self._until:
            status, body = self.metadata.get(self.metadata.md["role_credentials"] + self.role)
            if status != 200:
                raise self.agent.AgentError(f"role {self.role}: the metadata service answered HTTP {status} for its credentials")
            try:
                keys = json.loads(body)
                assert keys.get("Code", "Success") == "Success"
                self._keys = {k: keys[k] for k in ("AccessKeyId", "AccessKeySecret", "SecurityToken")}
                expires = datetime.datetime.strptime(keys["Expiration"], "%Y-%m-%dT%H:%M:%SZ")
                self._until = expires.replace(tzinfo=datetime.UTC).timestamp() - 300
            except (ValueError, KeyError, AssertionError, TypeError):
                raise self.agent.AgentError(f"role {self.role}: the metadata service's credentials are not usable") from None
        return self._keys

    def forget(self) -> None:
        self._keys = None


def rpc_call(
    agent, endpoint: str, keys: dict, version: str, action: str, args: dict[str, str], timeout: float, now: float | None = None
) -> tuple[int, dict]:
    """One signed Alibaba Cloud RPC call (POST, form body) with the role's STS keys: (HTTP status, the JSON answer)."""
    now = time.time() if now is None else now
    params = {
        "Action": action,
        "Version": version,
        "Format": "JSON",
        "AccessKeyId": keys["AccessKeyId"],
        "SecurityToken": keys["SecurityToken"],
        "SignatureMethod": "HMAC-SHA1",
        "SignatureVersion": "1.0",
        "SignatureNonce": str(uuid.uuid4()),
        "Timestamp": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now)),
        **args,
    }
    params["Signature"] = rpc_signature(params, keys["AccessKeySecret"], "POST")
    body = urllib.parse.urlencode(params, quote_via=urllib.parse.quote).encode()
    status, text = agent.http(
        endpoint, method="POST", data=body, timeout=timeout, headers={"Content-Type": "application/x-www-form-urlencoded"}
    )
    try:
        answer = json.loads(text)
    except ValueError:
        answer = {}
    return status, answer if isinstance(answer, dict) else {}


# --- CloudMonitor custom metrics -------------------------------------------------------------------------------------


def metric_list(cfg: dict, env: dict, values: dict[str, float], now: float) -> list[dict]:
    dims = json.dumps({cfg["dimension"]: env["GPUFLEET_SCALING_GROUP"]}, separators=(",", ":"))
    return [
        {
            "MetricName": cfg["metrics"][key]["name"],
            "GroupId": env["GPUFLEET_METRICS_GROUP"],
            "Dimensions": dims,
            "Type": RAW,
            "Period": str(cfg["period_s"]),
            "Time": str(int(now * 1000)),
            "Values": json.dumps({"value": round(value, 4)}, separators=(",", ":")),
        }
        for key, value in values.items()
    ]


def put_custom_metric(agent, endpoint: str, keys: dict, metrics: list[dict], timeout: float, now: float | None = None) -> str:
    """One signed PutCustomMetric call (POST, form body); returns the RequestId or raises AgentError."""
    args = {}
    for n, metric in enumerate(metrics, start=1):
        for field, value in metric.items():
            args[f"MetricList.{n}.{field}"] = value
    status, answer = rpc_call(agent, endpoint, keys, CMS_VERSION, CMS_ACTION, args, timeout, now)
    if status != 200 or str(answer.get("Code")) != "200":
        code = answer.get("Code", f"HTTP {status}")
        raise agent.AgentError(f"{CMS_ACTION}: {code}: {str(answer.get('Message', ''))[:200]}")
    return str(answer.get("RequestId", ""))


class Publisher:
    """CloudMonitor custom metrics into group $GPUFLEET_METRICS_GROUP, signed with the instance role's STS keys."""

    def __init__(self, agent, cfg: dict, env: dict, cloud: dict):
        self.agent, self.cfg, self.env = agent, cfg, env
        self.endpoint = cloud["metrics_api"].format(region=env["GPUFLEET_REGION"])
        metadata = agent.Metadata(cloud["metadata"], cfg["http_timeout_s"], cfg["metadata_token_ttl_s"])
        self.creds = RoleCredentials(agent, metadata, env["GPUFLEET_ROLE"])
        self.target = f"{self.endpoint} as role {env['GPUFLEET_ROLE']}"
        self.where = f"group {env['GPUFLEET_METRICS_GROUP']}"

    def publish(self, values: dict[str, float], now: float) -> str:
        metrics = metric_list(self.cfg, self.env, values, now)
        return put_custom_metric(self.agent, self.endpoint, self.creds.get(), metrics, self.cfg["http_timeout_s"])

    def reset(self) -> None:
        self.creds.forget()  # expired or revoked keys are fetched again on the next try


def publisher(agent, cfg: dict, env: dict, cloud: dict) -> Publisher:
    return Publisher(agent, cfg, env, cloud)


# --- ESS lifecycle waits ----------------------------------------------------------------------------------------------


def _rows(answer: dict, key: str, inner: str) -> list[dict]:
    """A list field of an answer: `key: [...]` (2022-02-22) or `key: {inner: [...]}` (the RPC XML-style wrapping)."""
    value = answer.get(key)
    if isinstance(value, dict):
        value = value.get(inner)
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


class Lifecycle:
    """ESS: find this instance's pending lifecycle wait in its group's activities in progress, end it with CONTINUE (or ABANDON)."""

    def __init__(self, agent, cfg: dict, env: dict, cloud: dict, metadata):
        self.agent, self.timeout, self.region = agent, cfg["http_timeout_s"], env["GPUFLEET_REGION"]
        self.endpoint = cloud["lifecycle_api"].format(region=self.region)
        self.creds = RoleCredentials(agent, metadata, env["GPUFLEET_ROLE"])

    def call(self, action: str, args: dict[str, str]) -> dict:
        status, answer = rpc_call(self.agent, self.endpoint, self.creds.get(), ESS_VERSION, action, args, self.timeout)
        if status != 200 or "Code" in answer:
            self.creds.forget()
            raise self.agent.AgentError(
                f"{action}: {answer.get('Code', f'HTTP {status}')}: {str(answer.get('Message', ''))[:200]}"
            )
        return answer

    def pending(self, instance: str, group: str) -> tuple[str, str] | None:
        """(hook id, token) of the lifecycle wait this instance is in, in an activity of its group in progress; or None."""
        activities = self.call(
            "DescribeScalingActivities", {"RegionId": self.region, "ScalingGroupId": group, "StatusCode": "InProgress"}
        )
        for activity in _rows(activities, "ScalingActivities", "ScalingActivity"):
            actions = self.call(
                "DescribeLifecycleActions",
                {
                    "RegionId": self.region,
                    "ScalingActivityId": str(activity.get("ScalingActivityId", "")),
                    "LifecycleActionStatus": "Pending",
                },
            )
            for a in _rows(actions, "LifecycleActions", "LifecycleAction"):
                ids = a.get("InstanceIds")
                ids = ids.get("InstanceId", []) if isinstance(ids, dict) else ids or []
                if instance in ids and a.get("LifecycleHookId") and a.get("LifecycleActionToken"):
                    return str(a["LifecycleHookId"]), str(a["LifecycleActionToken"])
        return None

    def complete(self, found: tuple[str, str], result: str = "CONTINUE") -> str:
        """CompleteLifecycleAction with `result`: CONTINUE adds the instance to the group; on a scale-out, ABANDON ends
        the activity and releases the created ECS instance at once (ESS API 2022-02-22 CompleteLifecycleAction,
        LifecycleActionResult: CONTINUE, ABANDON or ROLLBACK, the last the same as ABANDON on a scale-out;
        help.aliyun.com/zh/auto-scaling/developer-reference/api-ess-2022-02-22-completelifecycleaction)."""
        if result not in ("CONTINUE", "ABANDON"):
            raise self.agent.AgentError(f"CompleteLifecycleAction: LifecycleActionResult {result!r} is not CONTINUE or ABANDON")
        hook, token = found
        answer = self.call(
            "CompleteLifecycleAction",
            {
                "RegionId": self.region,
                "LifecycleHookId": hook,
                "LifecycleActionToken": token,
                "LifecycleActionResult": result,
            },
        )
        return str(answer.get("RequestId", ""))


def lifecycle(agent, cfg: dict, env: dict, cloud: dict, metadata) -> Lifecycle:
    return Lifecycle(agent, cfg, env, cloud, metadata)
