"""A stand-in for Alibaba Cloud Auto Scaling (ESS, API 2022-02-22) as the node agent calls it to end a lifecycle wait:
DescribeScalingActivities, DescribeLifecycleActions and CompleteLifecycleAction over POST form bodies.

It fails like ESS on a wrong call: it checks the RPC signature with its own implementation of "Signature mechanism"
(HMAC-SHA1 of the canonical query, key = secret + "&"; reproduced against the documented example in
test_lifecycle.py, not the agent's code), the STS key and token, a fresh timestamp, a new nonce, the version, the
required parameters of each operation (alibabacloud_ess20220222 1.13.3 models), and the node role's RAM policy (the
statements the program declares, components/alicloud/role.py): an action or group the policy does not allow is
answered Forbidden.RAM.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
import urllib.parse

from agent_fakes import Quiet, Server


def _enc(value: str) -> str:
    return urllib.parse.quote(value, safe="-_.~")


def signature(params: dict[str, str], secret: str, method: str = "POST") -> str:
    canonical = "&".join(f"{_enc(k)}={_enc(v)}" for k, v in sorted(params.items()))
    text = f"{method}&{_enc('/')}&{_enc(canonical)}"
    return base64.b64encode(hmac.new(f"{secret}&".encode(), text.encode(), hashlib.sha1).digest()).decode()


REQUIRED = {
    "DescribeScalingActivities": ("RegionId", "ScalingGroupId"),
    "DescribeLifecycleActions": ("RegionId", "ScalingActivityId"),
    "CompleteLifecycleAction": ("RegionId", "LifecycleHookId", "LifecycleActionToken"),
}
RESULTS = ("CONTINUE", "ABANDON", "ROLLBACK")


class FakeEss(Server):
    """`activities`: {activity id: group id} in progress; `actions`: [{activity, hook, token, instances, group}]
    pending. `policy`: the node role's RAM statements, with the group's ARN as the program renders it."""

    def __init__(self, keys: dict, region: str, policy: list[dict]):
        self.keys, self.region, self.policy = keys, region, policy
        self.activities: dict[str, str] = {}
        self.actions: list[dict] = []
        self.completed: list[dict] = []
        self.rejected: list[str] = []
        self.calls: list[str] = []
        self.nonces: set[str] = set()

        class H(Quiet):
            def do_POST(self):
                o = self.owner
                body = self.rfile.read(int(self.headers.get("Content-Length", "0"))).decode()
                params = dict(urllib.parse.parse_qsl(body, keep_blank_values=True))
                code, answer = o.handle(params, self.headers.get("Content-Type", ""))
                if code != 200:
                    o.rejected.append(answer["Code"])
                self.reply(code, json.dumps({**answer, "RequestId": f"req-{len(o.calls)}"}), "application/json")

        super().__init__(H)

    def arn(self, group: str) -> str:
        return f"acs:ess:{self.region}:*:scalinggroup/{group}"

    def allowed(self, action: str, group: str | None) -> bool:
        for s in self.policy:
            if s["Effect"] == "Allow" and f"ess:{action}" in s["Action"]:
                if "*" in s["Resource"] or (group is not None and self.arn(group) in s["Resource"]):
                    return True
        return False

    def handle(self, p: dict, ctype: str) -> tuple[int, dict]:
        if not ctype.startswith("application/x-www-form-urlencoded"):
            return 400, {"Code": "InvalidContentType", "Message": ctype}
        sig = p.pop("Signature", "")
        if sig != signature(p, self.keys["AccessKeySecret"]):
            return 400, {"Code": "SignatureDoesNotMatch", "Message": "the signature does not match"}
        if p.get("AccessKeyId") != self.keys["AccessKeyId"] or p.get("SecurityToken") != self.keys["SecurityToken"]:
            return 400, {"Code": "InvalidSecurityToken.Mismatch", "Message": "wrong STS key or token"}
        if (p.get("Version"), p.get("SignatureMethod"), p.get("SignatureVersion"), p.get("Format")) != (
            "2022-02-22",
            "HMAC-SHA1",
            "1.0",
            "JSON",
        ):
            return 400, {"Code": "InvalidVersion", "Message": p.get("Version", "")}
        stamp = time.mktime(time.strptime(p.get("Timestamp", "1970-01-01T00:00:00Z"), "%Y-%m-%dT%H:%M:%SZ")) - time.timezone
        if abs(stamp - time.time()) > 900:
            return 400, {"Code": "InvalidTimeStamp.Expired", "Message": p.get("Timestamp", "")}
        if p.get("SignatureNonce", "") in self.nonces:
            return 400, {"Code": "SignatureNonceUsed", "Message": "nonce used twice"}
        self.nonces.add(p.get("SignatureNonce", ""))
        action = p.get("Action", "")
        self.calls.append(action)
        if action not in REQUIRED:
            return 404, {"Code": "InvalidAction.NotFound", "Message": action}
        missing = [k for k in REQUIRED[action] if not p.get(k)]
        if missing:
            return 400, {"Code": f"MissingParameter.{missing[0]}", "Message": missing[0]}
        if p["RegionId"] != self.region:
            return 400, {"Code": "InvalidRegionId", "Message": p["RegionId"]}
        return getattr(self, action)(p)

    def DescribeScalingActivities(self, p):
        group = p["ScalingGroupId"]
        if not self.allowed("DescribeScalingActivities", group):
            return 403, {"Code": "Forbidden.RAM", "Message": f"DescribeScalingActivities on {group}"}
        status = p.get("StatusCode")
        rows = [{"ScalingActivityId": a, "ScalingGroupId": g, "StatusCode": "InProgress"} for a, g in self.activities.items()]
        rows = [r for r in rows if r["ScalingGroupId"] == group and (status is None or r["StatusCode"] == status)]
        return 200, {"ScalingActivities": rows, "TotalCount": len(rows)}

    def DescribeLifecycleActions(self, p):
        if not self.allowed("DescribeLifecycleActions", None):
            return 403, {"Code": "Forbidden.RAM", "Message": "DescribeLifecycleActions"}
        rows = [
            {
                "LifecycleHookId": a["hook"],
                "LifecycleActionToken": a["token"],
                "InstanceIds": a["instances"],
                "LifecycleActionStatus": a.get("status", "Pending"),
                "LifecycleActionResult": "CONTINUE",
            }
            for a in self.actions
            if a["activity"] == p["ScalingActivityId"]
        ]
        wanted = p.get("LifecycleActionStatus")
        rows = [r for r in rows if wanted is None or r["LifecycleActionStatus"] == wanted]
        return 200, {"LifecycleActions": rows, "TotalCount": len(rows)}

    def CompleteLifecycleAction(self, p):
        match = [a for a in self.actions if a["hook"] == p["LifecycleHookId"] and a["token"] == p["LifecycleActionToken"]]
        if not match or match[0].get("status", "Pending") != "Pending":
            return 404, {"Code": "InvalidLifecycleActionToken.NotExist", "Message": "no such pending action"}
        if not self.allowed("CompleteLifecycleAction", match[0]["group"]):
            return 403, {"Code": "Forbidden.RAM", "Message": f"CompleteLifecycleAction on {match[0]['group']}"}
        if p.get("LifecycleActionResult", "CONTINUE") not in RESULTS:
            return 400, {"Code": "InvalidParameter.LifecycleActionResult", "Message": p["LifecycleActionResult"]}
        match[0]["status"] = "Completed"
        self.completed.append({**match[0], "result": p.get("LifecycleActionResult"), "at": time.monotonic()})
        return 200, {}
