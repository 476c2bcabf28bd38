"""gpufleet scaler for Tencent Cloud: a timer-triggered SCF function that scales the fleet on vLLM's own signals.

Cloud Monitor cannot hold a custom metric any more (PutMonitorData was removed 2023-08-11, docs/research/
scaling-paths.md 2.2), so this function reads the signal where it is: each in-service node's /metrics/vllm on the
gateway's VPC-only metrics port. One run:

1. AS DescribeAutoScalingInstances for each group in GPUFLEET_SCALING_GROUP: the IN_SERVICE instances;
2. CVM DescribeInstances: their private IPs;
3. GET http://<ip>:GPUFLEET_METRICS_PORT GPUFLEET_METRICS_PATH on every node at once, each with a short timeout;
   the node's value of GPUFLEET_METRIC (queue: waiting requests, summed over engines; kv_cache: KV-cache usage in
   percent, averaged over engines), names and scale from signals.json (rendered from
   images/data/scaling_metrics.yaml by package.py);
4. the average over the nodes that answered: above GPUFLEET_SCALE_OUT_ABOVE -> AS ExecuteScalingPolicy
   GPUFLEET_SCALE_OUT_POLICY; below GPUFLEET_SCALE_IN_BELOW -> GPUFLEET_SCALE_IN_POLICY, only when every node
   answered; both with HonorCooldown, so the group's cooldown paces repeated runs.

A node that does not answer is left out of the average, not counted as saturated: a node that is still loading its
weights or is failing its health check takes no traffic, so its load is not the fleet's load; counting it saturated
would add nodes for every broken or booting node (a crash loop would scale to max), counting it idle would hide real
load. Because its state is unknown, no scale-in happens while any node is unreachable, and nothing happens when no
node answers.

Standard library only (the zip holds this file and signals.json). Requests are signed with TC3-HMAC-SHA256 using the
execution role's temporary keys, which SCF puts in TENCENTCLOUD_SECRETID / TENCENTCLOUD_SECRETKEY /
TENCENTCLOUD_SESSIONTOKEN (SCF "Environment Variables", https://www.tencentcloud.com/document/product/583/32748).
"""

from __future__ import annotations

import concurrent.futures
import datetime
import hashlib
import hmac
import json
import math
import os
import time
import urllib.error
import urllib.request

# Where requests go; the Host header and the signature name <service>.<domain> (tests point the URL at a stand-in).
ENDPOINT = "https://{host}/"
# API 3.0's public domain; GPUFLEET_API_DOMAIN=internal.tencentcloudapi.com selects the internal one (a function in
# the VPC without public access; the SDKs know <service>.internal.tencentcloudapi.com, not checked on a live account).
DOMAIN = "tencentcloudapi.com"
VERSIONS = {"as": "2018-04-19", "cvm": "2017-03-12"}  # API versions of AS and CVM (API 3.0)
CONTENT_TYPE = "application/json; charset=utf-8"
IN_SERVICE = "IN_SERVICE"  # AutoScalingInstance.LifeCycleState of a serving node
PAGE = 100  # DescribeAutoScalingInstances Limit / DescribeInstances InstanceIds: at most 100 per call
SIGNALS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "signals.json")


class ScalerError(Exception):
    """A failed call or bad configuration; the message never holds a key, token or signature."""


def log(message: str) -> None:
    print(f"gpufleet-scaler: {message}", flush=True)


# --- TC3-HMAC-SHA256 ------------------------------------------------------------------------------------------------


def _hmac(key: bytes, msg: str) -> bytes:
    return hmac.new(key, msg.encode("utf-8"), hashlib.sha256).digest()


def canonical_request(host: str, payload: str, content_type: str = CONTENT_TYPE) -> str:
    hashed = hashlib.sha256(payload.encode("utf-8")).hexdigest()
    return f"POST\n/\n\ncontent-type:{content_type}\nhost:{host}\n\ncontent-type;host\n{hashed}"


def string_to_sign(service: str, timestamp: int, canonical: str) -> str:
    date = datetime.datetime.fromtimestamp(timestamp, datetime.timezone.utc).strftime("%Y-%m-%d")  # noqa: UP017 (SCF runs Python 3.9)
    hashed = hashlib.sha256(canonical.encode("utf-8")).hexdigest()
    return f"TC3-HMAC-SHA256\n{timestamp}\n{date}/{service}/tc3_request\n{hashed}"


def signature(secret_key: str, service: str, timestamp: int, to_sign: str) -> str:
    """TencentCloud API signature v3 (https://www.tencentcloud.com/document/api/213/33224; the worked example is
    reproduced in tests/scaler/test_scaler_signature.py)."""
    date = datetime.datetime.fromtimestamp(timestamp, datetime.timezone.utc).strftime("%Y-%m-%d")  # noqa: UP017 (SCF runs Python 3.9)
    key = _hmac(_hmac(_hmac(("TC3" + secret_key).encode("utf-8"), date), service), "tc3_request")
    return hmac.new(key, to_sign.encode("utf-8"), hashlib.sha256).hexdigest()


def authorization(secret_id: str, secret_key: str, service: str, host: str, payload: str, timestamp: int) -> str:
    to_sign = string_to_sign(service, timestamp, canonical_request(host, payload))
    date = to_sign.split("\n")[2].split("/")[0]
    return (
        f"TC3-HMAC-SHA256 Credential={secret_id}/{date}/{service}/tc3_request, SignedHeaders=content-type;host, "
        f"Signature={signature(secret_key, service, timestamp, to_sign)}"
    )


class Api:
    """Signed TencentCloud API 3.0 calls (POST, JSON) with the execution role's temporary keys."""

    def __init__(self, env: dict, region: str, timeout: float, domain: str = DOMAIN):
        try:
            self.secret_id, self.secret_key = env["TENCENTCLOUD_SECRETID"], env["TENCENTCLOUD_SECRETKEY"]
        except KeyError:
            raise ScalerError("no TENCENTCLOUD_SECRETID / TENCENTCLOUD_SECRETKEY: give the function an execution role") from None
        self.token = env.get("TENCENTCLOUD_SESSIONTOKEN", "")
        self.region, self.timeout, self.domain = region, timeout, domain

    def call(self, service: str, action: str, params: dict) -> dict:
        host = f"{service}.{self.domain}"
        payload = json.dumps(params, separators=(",", ":"))
        now = int(time.time())
        headers = {
            "Authorization": authorization(self.secret_id, self.secret_key, service, host, payload, now),
            "Content-Type": CONTENT_TYPE,
            "Host": host,
            "X-TC-Action": action,
            "X-TC-Timestamp": str(now),
            "X-TC-Version": VERSIONS[service],
            "X-TC-Region": self.region,
        }
        if self.token:
            headers["X-TC-Token"] = self.token
        req = urllib.request.Request(ENDPOINT.format(host=host), data=payload.encode(), headers=headers, method="POST")
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                answer = json.loads(resp.read().decode("utf-8"))
        except (OSError, ValueError) as exc:
            raise ScalerError(f"{service} {action}: {exc}") from None
        response = answer.get("Response", {})
        if "Error" in response:
            err = response["Error"]
            raise ScalerError(f"{service} {action}: {err.get('Code')}: {str(err.get('Message', ''))[:200]}")
        return response


# --- the fleet's nodes ----------------------------------------------------------------------------------------------


def in_service(api: Api, groups: list[str]) -> list[str]:
    """Instance ids of the groups' IN_SERVICE nodes (DescribeAutoScalingInstances, filter auto-scaling-group-id)."""
    ids: list[str] = []
    for group in groups:
        offset = 0
        while True:
            params = {"Filters": [{"Name": "auto-scaling-group-id", "Values": [group]}], "Offset": offset, "Limit": PAGE}
            resp = api.call("as", "DescribeAutoScalingInstances", params)
            rows = resp.get("AutoScalingInstanceSet") or []
            ids += [r["InstanceId"] for r in rows if r.get("LifeCycleState") == IN_SERVICE]
            offset += len(rows)
            if not rows or offset >= int(resp.get("TotalCount", 0)):
                break
    return ids


def private_ips(api: Api, ids: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for i in range(0, len(ids), PAGE):
        chunk = ids[i : i + PAGE]
        resp = api.call("cvm", "DescribeInstances", {"InstanceIds": chunk, "Limit": len(chunk)})
        for inst in resp.get("InstanceSet") or []:
            if inst.get("PrivateIpAddresses"):
                out[inst["InstanceId"]] = inst["PrivateIpAddresses"][0]
    return out


def parse_prometheus(text: str) -> dict[str, list[float]]:
    """Sample values by metric name (Prometheus text format; labels are not needed here, quoted values may hold
    spaces and braces)."""
    out: dict[str, list[float]] = {}
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if "{" in line.split(" ", 1)[0]:
            name = line[: line.index("{")]
            i, quoted = line.index("{"), False
            while True:  # the closing brace outside a quoted label value
                i += 1
                if line[i] == "\\" and quoted:
                    i += 1
                elif line[i] == '"':
                    quoted = not quoted
                elif line[i] == "}" and not quoted:
                    break
            rest = line[i + 1 :].split()
        else:
            name, _, tail = line.partition(" ")
            rest = tail.split()
        out.setdefault(name, []).append(float(rest[0]))
    return out


def node_value(text: str, signal: dict) -> float | None:
    samples = parse_prometheus(text)
    for name in signal["vllm"]:
        values = [v for v in samples.get(name, []) if not math.isnan(v)]
        if values:
            total = sum(values) if signal["unit"] == "count" else sum(values) / len(values)
            return total * signal.get("scale", 1)
    return None


def read_node(ip: str, port: str, path: str, timeout: float, signal: dict) -> float | None:
    try:
        with urllib.request.urlopen(f"http://{ip}:{port}{path}", timeout=timeout) as resp:
            return node_value(resp.read().decode("utf-8", "replace"), signal)
    except (OSError, ValueError, IndexError):
        return None


# --- the decision ---------------------------------------------------------------------------------------------------


def decide(values: dict[str, float | None], out_above: float, in_below: float) -> tuple[str, str]:
    """("out" | "in" | "hold", why) from each node's value (None: did not answer)."""
    answered = [v for v in values.values() if v is not None]
    missing = [k for k, v in values.items() if v is None]
    if not values:
        return "hold", "no node in service"
    if not answered:
        return "hold", f"no node answered ({len(missing)} in service)"
    avg = sum(answered) / len(answered)
    seen = f"average {avg:g} over {len(answered)} node(s)" + (f", {len(missing)} not answering" if missing else "")
    if avg > out_above:
        return "out", f"{seen} > {out_above:g}"
    if avg < in_below:
        if missing:
            return "hold", f"{seen} < {in_below:g}, but no scale-in while a node does not answer"
        return "in", f"{seen} < {in_below:g}"
    return "hold", f"{seen} within [{in_below:g}, {out_above:g}]"


def settings(env: dict) -> dict:
    names = (
        "GPUFLEET_REGION",
        "GPUFLEET_SCALING_GROUP",
        "GPUFLEET_SCALE_OUT_POLICY",
        "GPUFLEET_SCALE_IN_POLICY",
        "GPUFLEET_METRIC",
        "GPUFLEET_SCALE_OUT_ABOVE",
        "GPUFLEET_SCALE_IN_BELOW",
        "GPUFLEET_METRICS_PORT",
        "GPUFLEET_METRICS_PATH",
    )
    missing = [n for n in names if not env.get(n)]
    if missing:
        raise ScalerError(f"function environment: {', '.join(missing)} not set (the program declares them)")
    with open(SIGNALS, encoding="utf-8") as fh:
        signals = json.load(fh)
    if env["GPUFLEET_METRIC"] not in signals["metrics"]:
        raise ScalerError(f"GPUFLEET_METRIC={env['GPUFLEET_METRIC']!r}: one of {', '.join(sorted(signals['metrics']))}")
    try:
        out_above, in_below = float(env["GPUFLEET_SCALE_OUT_ABOVE"]), float(env["GPUFLEET_SCALE_IN_BELOW"])
    except ValueError:
        raise ScalerError("GPUFLEET_SCALE_OUT_ABOVE / GPUFLEET_SCALE_IN_BELOW must be numbers") from None
    if not in_below < out_above:
        raise ScalerError("GPUFLEET_SCALE_IN_BELOW must be below GPUFLEET_SCALE_OUT_ABOVE")
    return {
        "region": env["GPUFLEET_REGION"],
        "groups": [g for g in env["GPUFLEET_SCALING_GROUP"].split(",") if g],
        "policies": {"out": env["GPUFLEET_SCALE_OUT_POLICY"], "in": env["GPUFLEET_SCALE_IN_POLICY"]},
        "signal": signals["metrics"][env["GPUFLEET_METRIC"]],
        "metric": env["GPUFLEET_METRIC"],
        "out_above": out_above,
        "in_below": in_below,
        "port": env["GPUFLEET_METRICS_PORT"],
        "path": env["GPUFLEET_METRICS_PATH"],
        "timeout": float(signals["http_timeout_s"]),
        "domain": env.get("GPUFLEET_API_DOMAIN") or DOMAIN,
    }


def run(env: dict) -> dict:
    s = settings(env)
    api = Api(env, s["region"], s["timeout"], s["domain"])
    ids = in_service(api, s["groups"])
    ips = private_ips(api, ids)
    values: dict[str, float | None] = dict.fromkeys(ids)
    if ips:
        with concurrent.futures.ThreadPoolExecutor(max_workers=min(32, len(ips))) as pool:
            futures = {i: pool.submit(read_node, ip, s["port"], s["path"], s["timeout"], s["signal"]) for i, ip in ips.items()}
            values.update({i: f.result() for i, f in futures.items()})
    action, why = decide(values, s["out_above"], s["in_below"])
    result = {"metric": s["metric"], "nodes": values, "action": action, "why": why}
    log(f"{s['metric']}: {why} -> {action}")
    if action in ("out", "in"):
        policy = s["policies"][action]
        try:
            resp = api.call("as", "ExecuteScalingPolicy", {"AutoScalingPolicyId": policy, "HonorCooldown": True})
            result["activity"] = resp.get("ActivityId", "")
            log(f"executed {policy}: activity {result['activity']}")
        except ScalerError as exc:  # e.g. in cooldown, at the group's max/min, an activity in progress: next run
            result["action"], result["error"] = "hold", str(exc)
            log(f"not executed: {exc}")
    return result


def main_handler(event, context):
    """SCF entry (timer trigger): one decision; the result is the function's return value (shown in its logs)."""
    try:
        return run(dict(os.environ))
    except ScalerError as exc:
        log(f"error: {exc}")
        return {"action": "hold", "error": str(exc)}
