#!/usr/bin/python3 -I
"""gpufleet node agent: the scaling signals, draining and the spot notice on a node (docs/scaling-node.md).

Standard library only; the image installs this file and its config (images/node.py: agent.json, rendered from
components/data/scaling_metrics.yaml, images/node_agent.yaml and the clouds' profiles) and three entry points:

- `metrics`: every period, read vLLM's /metrics on 127.0.0.1 and publish the queue, running and KV-cache signals as
  CloudMonitor custom metrics (CMS PutCustomMetric, signed with the instance RAM role's STS keys from the metadata
  service) with the dimension {<dimension>: $GPUFLEET_SCALING_GROUP} into group $GPUFLEET_METRICS_GROUP. A cloud
  without a custom-metric API (its profile says why) or a node without a group: says so once and exits 0.
- `drain`: make the gateway's health check fail (the load balancer stops sending), wait until the load balancer has
  noticed and vLLM's running + waiting requests are 0, or a bound; exit 0. Idempotent; `--cancel` undoes it.
- `spot-watch`: poll the instance metadata for the spot reclaim notice; on a notice, drain.
- `ready`: wait until vLLM answers /health, then end the scaling group's SCALE_OUT lifecycle wait for this instance
  (Alibaba ESS CompleteLifecycleAction, signed like the CloudMonitor calls), so the node joins as soon as it serves
  instead of at the hook's timeout. `drain --complete` ends a scale-in wait the same way once drained. A cloud without
  a lifecycle API in its profile (Tencent: AS adds the node itself), or a node with no pending wait: says so, exit 0.

Nothing here can stop vLLM: each runs in its own low-priority unit with no dependency on vllm.service, every call
has a timeout, errors are logged (never a key, token or signature) and retried on the next period.
"""

from __future__ import annotations

import argparse
import base64
import datetime
import hashlib
import hmac
import json
import math
import os
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid

CONFIG = "/usr/local/lib/gpufleet/agent.json"
# CloudMonitor PutCustomMetric (API version 2019-01-01; RAM action cms:PutCustomMetric, the node role's only CMS
# permission): https://help.aliyun.com/en/cms/cloudmonitor-1-0/developer-reference/api-cms-2019-01-01-putcustommetric
CMS_VERSION = "2019-01-01"
CMS_ACTION = "PutCustomMetric"
RAW = "0"  # MetricList.N.Type: 0 raw values, CloudMonitor aggregates them per period (same page)


class AgentError(Exception):
    """A failure of one call; the message never holds a key, token or signature."""


def log(message: str) -> None:
    print(f"gpufleet-agent: {message}", flush=True)


def die(message: str) -> SystemExit:
    """Bad configuration on the node: the message names the file and the fix; exit 2."""
    print(f"gpufleet-agent: {message}", file=sys.stderr, flush=True)
    return SystemExit(2)


# --- Prometheus text format ------------------------------------------------------------------------------------------


def _labels(text: str, i: int) -> tuple[dict[str, str], int]:
    """Parse `{a="x",b="y"}` from text[i] == '{'; returns the labels and the index after '}'."""
    labels: dict[str, str] = {}
    i += 1
    while True:
        while i < len(text) and text[i] in " ,":
            i += 1
        if i >= len(text):
            raise ValueError("unterminated label set")
        if text[i] == "}":
            return labels, i + 1
        eq = text.index("=", i)
        name = text[i:eq].strip()
        if text[eq + 1] != '"':
            raise ValueError(f"label {name}: value not quoted")
        j, value = eq + 2, []
        while text[j] != '"':
            if text[j] == "\\":
                j += 1
                value.append({"n": "\n", "\\": "\\", '"': '"'}.get(text[j], "\\" + text[j]))
            else:
                value.append(text[j])
            j += 1
        labels[name] = "".join(value)
        i = j + 1


def parse_prometheus(text: str) -> dict[str, list[tuple[dict[str, str], float]]]:
    """Samples by metric name: [(labels, value)] (Prometheus text exposition format 0.0.4; comments skipped)."""
    out: dict[str, list[tuple[dict[str, str], float]]] = {}
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        brace, space = line.find("{"), line.find(" ")
        if brace != -1 and (space == -1 or brace < space):
            name = line[:brace]
            labels, end = _labels(line, brace)
            rest = line[end:].split()
        else:
            name, labels, rest = line[:space], {}, line[space:].split()
        if not rest:
            raise ValueError(f"no value: {line[:80]!r}")
        out.setdefault(name, []).append((labels, float(rest[0])))
    return out


def signal_value(samples: dict, spec: dict) -> float | None:
    """One signal: the first of spec["vllm"] names present; counts are summed over label sets (engines), a fraction
    (unit percent) is averaged over them; times spec["scale"]. None when no name is present."""
    for name in spec["vllm"]:
        rows = [v for _, v in samples.get(name, []) if not math.isnan(v)]
        if rows:
            total = sum(rows) if spec["unit"] == "count" else sum(rows) / len(rows)
            return total * spec.get("scale", 1)
    return None


def http(url: str, *, timeout: float, method: str = "GET", data: bytes | None = None, headers: dict | None = None):
    """(status, body text); HTTP error statuses are returned, network errors raise AgentError."""
    req = urllib.request.Request(url, data=data, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return resp.status, resp.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode("utf-8", "replace")
    except (OSError, ValueError) as exc:
        raise AgentError(f"{method} {url.split('?')[0]}: {exc}") from None


def read_vllm(cfg: dict, env: dict) -> dict[str, float]:
    """The configured signals from vLLM's /metrics (127.0.0.1:GATEWAY_VLLM_PORT)."""
    url = f"http://127.0.0.1:{env['GATEWAY_VLLM_PORT']}/metrics"
    status, body = http(url, timeout=cfg["http_timeout_s"])
    if status != 200:
        raise AgentError(f"GET {url}: HTTP {status}")
    try:
        samples = parse_prometheus(body)
    except (ValueError, IndexError) as exc:
        raise AgentError(f"GET {url}: not Prometheus text: {exc}") from None
    values = {}
    for key, spec in cfg["metrics"].items():
        value = signal_value(samples, spec)
        if value is None:
            raise AgentError(f"GET {url}: none of {', '.join(spec['vllm'])} in the answer (vLLM still starting?)")
        values[key] = value
    return values


# --- instance metadata ----------------------------------------------------------------------------------------------


class Metadata:
    """The cloud's instance metadata service (the cloud's profile: instance_metadata), with the session token of a
    hardened mode when the cloud has one (asked again before it ends; without one the plain request is tried)."""

    def __init__(self, md: dict, timeout: float, token_ttl_s: int):
        self.md, self.timeout, self.ttl = md, timeout, token_ttl_s
        self._token, self._token_until = None, 0.0

    def _headers(self) -> dict:
        if not self.md.get("token_url"):
            return {}
        if self._token is None or time.monotonic() > self._token_until:
            try:
                status, body = http(
                    self.md["token_url"],
                    method="PUT",
                    timeout=self.timeout,
                    headers={self.md["token_ttl_header"]: str(self.ttl)},
                )
            except AgentError:
                status, body = 0, ""
            # a failed token request is not remembered: the next call asks again (a hardened service refuses GETs
            # without one, and a spot notice must not be missed for a token's lifetime)
            self._token = body.strip() if status == 200 and body.strip() else None
            self._token_until = time.monotonic() + self.ttl / 2 if self._token else 0.0
        return {self.md["token_header"]: self._token} if self._token else {}

    def get(self, path: str) -> tuple[int, str]:
        return http(self.md["url"] + path, timeout=self.timeout, headers=self._headers())


# --- Alibaba Cloud RPC signature and CloudMonitor -------------------------------------------------------------------


def percent_encode(value: str) -> str:
    """RFC 3986 encoding as Alibaba's RPC signature wants it: A-Z a-z 0-9 - _ . ~ kept, space %20, * %2A."""
    return urllib.parse.quote(value, safe="-_.~")


def rpc_string_to_sign(params: dict[str, str], method: str) -> str:
    query = "&".join(f"{percent_encode(k)}={percent_encode(v)}" for k, v in sorted(params.items()))
    return f"{method}&{percent_encode('/')}&{percent_encode(query)}"


def rpc_signature(params: dict[str, str], secret: str, method: str) -> str:
    """Alibaba Cloud RPC signature V1 (HMAC-SHA1, key = secret + "&"): "Signature mechanism",
    https://help.aliyun.com/en/document_detail/130769.html (worked example in tests/agent/test_signatures.py)."""
    digest = hmac.new((secret + "&").encode(), rpc_string_to_sign(params, method).encode(), hashlib.sha1).digest()
    return base64.b64encode(digest).decode()


class RoleCredentials:
    """The instance RAM role's STS keys from the metadata service, renewed before they expire."""

    def __init__(self, metadata: Metadata, role: str):
        self.metadata, self.role = metadata, role
        self._keys: dict | None = None
        self._until = 0.0

    def get(self) -> dict:
        if self._keys is None or time.time() > self._until:
            status, body = self.metadata.get(self.metadata.md["role_credentials"] + self.role)
            if status != 200:
                raise AgentError(f"role {self.role}: the metadata service answered HTTP {status} for its credentials")
            try:
                keys = json.loads(body)
                assert keys.get("Code", "Success") == "Success"
                self._keys = {k: keys[k] for k in ("AccessKeyId", "AccessKeySecret", "SecurityToken")}
                expires = datetime.datetime.strptime(keys["Expiration"], "%Y-%m-%dT%H:%M:%SZ")
                self._until = expires.replace(tzinfo=datetime.UTC).timestamp() - 300
            except (ValueError, KeyError, AssertionError, TypeError):
                raise AgentError(f"role {self.role}: the metadata service's credentials are not usable") from None
        return self._keys

    def forget(self) -> None:
        self._keys = None


def rpc_call(
    endpoint: str, keys: dict, version: str, action: str, args: dict[str, str], timeout: float, now: float | None = None
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
    status, text = http(
        endpoint, method="POST", data=body, timeout=timeout, headers={"Content-Type": "application/x-www-form-urlencoded"}
    )
    try:
        answer = json.loads(text)
    except ValueError:
        answer = {}
    return status, answer if isinstance(answer, dict) else {}


def put_custom_metric(endpoint: str, keys: dict, metrics: list[dict], timeout: float, now: float | None = None) -> str:
    """One signed PutCustomMetric call (POST, form body); returns the RequestId or raises AgentError."""
    args = {}
    for n, metric in enumerate(metrics, start=1):
        for field, value in metric.items():
            args[f"MetricList.{n}.{field}"] = value
    status, answer = rpc_call(endpoint, keys, CMS_VERSION, CMS_ACTION, args, timeout, now)
    if status != 200 or str(answer.get("Code")) != "200":
        code = answer.get("Code", f"HTTP {status}")
        raise AgentError(f"{CMS_ACTION}: {code}: {str(answer.get('Message', ''))[:200]}")
    return str(answer.get("RequestId", ""))


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


# --- configuration --------------------------------------------------------------------------------------------------


def parse_env(text: str) -> dict[str, str]:
    out = {}
    for line in text.splitlines():
        if line.strip() and not line.lstrip().startswith("#") and "=" in line:
            key, _, value = line.partition("=")
            out[key.strip()] = value.strip()
    return out


def load(config_path: str) -> tuple[dict, dict]:
    """The agent's config and the node's environment (the fleet's and the gateway's env files, then os.environ)."""
    try:
        with open(config_path, encoding="utf-8") as fh:
            cfg = json.load(fh)
    except (OSError, ValueError) as exc:
        raise die(f"{config_path}: {exc} (the image installs it: images/node.py)") from None
    env: dict[str, str] = {}
    for path in cfg["env_files"]:
        try:
            with open(path, encoding="utf-8") as fh:
                env.update(parse_env(fh.read()))
        except OSError as exc:
            raise die(f"{path}: {exc} (the fleet's user-data writes it)") from None
    env.update({k: v for k, v in os.environ.items() if k.startswith(("GPUFLEET_", "GATEWAY_"))})
    missing = [k for k in cfg["env_keys"] if k not in env]
    if missing:
        raise die(f"{', '.join(cfg['env_files'])}: {', '.join(missing)} missing (render the user-data again)")
    return cfg, env


def cloud(cfg: dict, env: dict) -> dict:
    name = env["GPUFLEET_CLOUD"]
    if name not in cfg["clouds"]:
        raise die(f"GPUFLEET_CLOUD={name!r}: not one of {', '.join(sorted(cfg['clouds']))}")
    return cfg["clouds"][name]


# --- metrics --------------------------------------------------------------------------------------------------------


def publish_once(cfg: dict, env: dict, creds: RoleCredentials, endpoint: str, deadline: float) -> bool:
    """Read vLLM and publish one point per signal, retrying with backoff until `deadline` (monotonic)."""
    try:
        values = read_vllm(cfg, env)
    except AgentError as exc:
        log(f"nothing published this period: {exc}")
        return False
    now, wait = time.time(), cfg["backoff_s"]
    for attempt in range(1, cfg["publish_attempts"] + 1):
        try:
            request_id = put_custom_metric(endpoint, creds.get(), metric_list(cfg, env, values, now), cfg["http_timeout_s"])
        except AgentError as exc:
            creds.forget()  # expired or revoked keys are fetched again on the next try
            last = attempt == cfg["publish_attempts"] or time.monotonic() + wait + cfg["http_timeout_s"] > deadline
            log(f"publish attempt {attempt} failed: {exc}" + ("; giving up this period" if last else f"; again in {wait}s"))
            if last:
                return False
            time.sleep(wait)
            wait *= 2
            continue
        shown = ", ".join(f"{cfg['metrics'][k]['name']}={v:g}" for k, v in values.items())
        log(f"published {shown} (group {env['GPUFLEET_METRICS_GROUP']}, request {request_id})")
        return True
    return False


def run_metrics(cfg: dict, env: dict, once: bool = False) -> int:
    c = cloud(cfg, env)
    if not c["metrics_api"]:
        log(f"not publishing on {env['GPUFLEET_CLOUD']}: {c['metrics_note']}")
        return 0
    if not env.get("GPUFLEET_METRICS_GROUP") or not env.get("GPUFLEET_SCALING_GROUP"):
        log("not publishing: GPUFLEET_METRICS_GROUP or GPUFLEET_SCALING_GROUP is empty (the fleet scales on another signal)")
        return 0
    endpoint = c["metrics_api"].format(region=env["GPUFLEET_REGION"])
    metadata = Metadata(c["metadata"], cfg["http_timeout_s"], cfg["metadata_token_ttl_s"])
    creds = RoleCredentials(metadata, env["GPUFLEET_ROLE"])
    log(f"publishing every {cfg['period_s']}s to {endpoint} as role {env['GPUFLEET_ROLE']}")
    while True:
        start = time.monotonic()
        ok = publish_once(cfg, env, creds, endpoint, start + cfg["period_s"])
        if once:
            return 0 if ok else 1
        time.sleep(max(0.0, cfg["period_s"] - (time.monotonic() - start)))


# --- drain ----------------------------------------------------------------------------------------------------------


def in_flight(cfg: dict, env: dict) -> float | None:
    """vLLM's running + waiting requests; None when vLLM does not answer."""
    try:
        values = read_vllm({**cfg, "metrics": {k: cfg["metrics"][k] for k in cfg["drain_signals"]}}, env)
    except AgentError:
        return None
    return sum(values.values())


def drain(cfg: dict, env: dict, timeout_s: float | None = None) -> int:
    flag = cfg["drain_flag"]
    wait_lb = int(env["GATEWAY_DRAIN_WAIT_S"])
    bound = timeout_s if timeout_s is not None else wait_lb + int(env["GATEWAY_READ_TIMEOUT_S"])
    start = time.monotonic()
    if not os.path.exists(flag):
        try:
            with open(flag, "w", encoding="utf-8") as fh:
                fh.write(f"draining since {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}\n")
        except OSError as exc:
            log(f"drain: cannot write {flag}: {exc}")
            return 1
        log(f"drain: the health check now fails ({flag}); the load balancer stops sending within {wait_lb}s")
    else:
        log(f"drain: already draining ({flag})")
    since = time.time() - os.path.getmtime(flag)
    time.sleep(max(0.0, min(wait_lb - since, bound)))
    while True:
        left = bound - (time.monotonic() - start)
        n = in_flight(cfg, env)
        if n is None:
            log("drain: vLLM does not answer: nothing in flight")
            return 0
        if n <= 0:
            log(f"drain: done after {time.monotonic() - start:.0f}s: no request running or waiting")
            return 0
        if left <= 0:
            log(f"drain: bound of {bound:.0f}s reached with {n:g} requests running or waiting; going anyway")
            return 0
        time.sleep(min(cfg["drain_poll_s"], max(left, 0.0)))


def cancel(cfg: dict) -> int:
    try:
        os.unlink(cfg["drain_flag"])
        log("drain cancelled: the health check passes again")
    except FileNotFoundError:
        log("not draining")
    return 0


# --- lifecycle waits (Alibaba ESS) -----------------------------------------------------------------------------------
# ESS API version 2022-02-22, the operations and fields of alibabacloud_ess20220222 1.13.3 (models/_<operation>_request
# .py and _response_body.py): DescribeScalingActivities (ScalingGroupId, StatusCode InProgress -> ScalingActivities[]
# .ScalingActivityId), DescribeLifecycleActions (ScalingActivityId, LifecycleActionStatus Pending -> LifecycleActions[]
# with InstanceIds, LifecycleHookId, LifecycleActionToken), CompleteLifecycleAction (LifecycleHookId,
# LifecycleActionToken, LifecycleActionResult CONTINUE). The node role may call them on its own group only
# (components/alicloud/role.py).
ESS_VERSION = "2022-02-22"


def _rows(answer: dict, key: str, inner: str) -> list[dict]:
    """A list field of an answer: `key: [...]` (2022-02-22) or `key: {inner: [...]}` (the RPC XML-style wrapping)."""
    value = answer.get(key)
    if isinstance(value, dict):
        value = value.get(inner)
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def ess(endpoint: str, creds: RoleCredentials, action: str, args: dict[str, str], timeout: float) -> dict:
    status, answer = rpc_call(endpoint, creds.get(), ESS_VERSION, action, args, timeout)
    if status != 200 or "Code" in answer:
        creds.forget()
        raise AgentError(f"{action}: {answer.get('Code', f'HTTP {status}')}: {str(answer.get('Message', ''))[:200]}")
    return answer


def pending_action(endpoint: str, creds: RoleCredentials, region: str, group: str, instance: str, timeout: float):
    """(hook id, token) of the lifecycle wait this instance is in, in an activity of its group in progress; or None."""
    activities = ess(
        endpoint,
        creds,
        "DescribeScalingActivities",
        {"RegionId": region, "ScalingGroupId": group, "StatusCode": "InProgress"},
        timeout,
    )
    for activity in _rows(activities, "ScalingActivities", "ScalingActivity"):
        actions = ess(
            endpoint,
            creds,
            "DescribeLifecycleActions",
            {
                "RegionId": region,
                "ScalingActivityId": str(activity.get("ScalingActivityId", "")),
                "LifecycleActionStatus": "Pending",
            },
            timeout,
        )
        for a in _rows(actions, "LifecycleActions", "LifecycleAction"):
            ids = a.get("InstanceIds")
            ids = ids.get("InstanceId", []) if isinstance(ids, dict) else ids or []
            if instance in ids and a.get("LifecycleHookId") and a.get("LifecycleActionToken"):
                return str(a["LifecycleHookId"]), str(a["LifecycleActionToken"])
    return None


def complete_wait(cfg: dict, env: dict, why: str) -> int:
    """End this instance's lifecycle wait with CONTINUE (retrying while ESS has not listed it yet); exit status."""
    c = cloud(cfg, env)
    if not c.get("lifecycle_api"):
        log(
            f"no lifecycle wait to end on {env['GPUFLEET_CLOUD']}: {c.get('lifecycle_note') or 'the cloud has no lifecycle API here'}"
        )
        return 0
    group = env.get("GPUFLEET_SCALING_GROUP")
    if not group:
        log("no lifecycle wait to end: GPUFLEET_SCALING_GROUP is empty")
        return 0
    endpoint = c["lifecycle_api"].format(region=env["GPUFLEET_REGION"])
    metadata = Metadata(c["metadata"], cfg["http_timeout_s"], cfg["metadata_token_ttl_s"])
    status, instance = metadata.get(c["metadata"]["instance_id"])
    if status != 200 or not instance.strip():
        log(f"lifecycle: the metadata service answered HTTP {status} for the instance id; the wait ends at its timeout")
        return 1
    instance = instance.strip()
    creds = RoleCredentials(metadata, env["GPUFLEET_ROLE"])
    for attempt in range(1, cfg["lifecycle_attempts"] + 1):
        try:
            found = pending_action(endpoint, creds, env["GPUFLEET_REGION"], group, instance, cfg["http_timeout_s"])
            if found is None:
                if attempt == cfg["lifecycle_attempts"]:
                    log(f"lifecycle: {instance} is in no pending wait of group {group} (attached, or the wait already ended)")
                    return 0
            else:
                hook, token = found
                answer = ess(
                    endpoint,
                    creds,
                    "CompleteLifecycleAction",
                    {
                        "RegionId": env["GPUFLEET_REGION"],
                        "LifecycleHookId": hook,
                        "LifecycleActionToken": token,
                        "LifecycleActionResult": "CONTINUE",
                    },
                    cfg["http_timeout_s"],
                )
                log(f"lifecycle: {why}; ended the wait of hook {hook} for {instance} (request {answer.get('RequestId', '')})")
                return 0
        except AgentError as exc:
            log(f"lifecycle attempt {attempt} failed: {exc}")
            if attempt == cfg["lifecycle_attempts"]:
                return 1
        time.sleep(cfg["lifecycle_retry_s"])
    return 1


def vllm_healthy(cfg: dict, env: dict) -> bool:
    try:
        status, _ = http(f"http://127.0.0.1:{env['GATEWAY_VLLM_PORT']}/health", timeout=cfg["http_timeout_s"])
    except AgentError:
        return False
    return status == 200


def ready(cfg: dict, env: dict, timeout_s: float | None = None) -> int:
    """Wait until vLLM serves, then end the SCALE_OUT wait. Past `timeout_s` (default: ESS's longest wait), give up:
    the hook's own timeout then lets the node join or not, as the hook says."""
    bound = cfg["ready_max_s"] if timeout_s is None else timeout_s
    start = time.monotonic()
    while not vllm_healthy(cfg, env):
        if time.monotonic() - start > bound:
            log(f"ready: vLLM did not answer /health within {bound:.0f}s; the lifecycle wait ends at its own timeout")
            return 1
        time.sleep(cfg["ready_poll_s"])
    return complete_wait(cfg, env, f"vLLM healthy after {time.monotonic() - start:.0f}s")


# --- spot notice ----------------------------------------------------------------------------------------------------


def spot_watch(cfg: dict, env: dict, max_polls: int | None = None) -> int:
    c = cloud(cfg, env)
    metadata = Metadata(c["metadata"], cfg["http_timeout_s"], cfg["metadata_token_ttl_s"])
    url = c["metadata"]["url"] + c["metadata"]["spot_notice"]
    log(f"watching {url} every {cfg['spot_poll_s']}s")
    last_error, polls = "", 0
    while max_polls is None or polls < max_polls:
        polls += 1
        try:
            status, body = metadata.get(c["metadata"]["spot_notice"])
            error = "" if status in (200, 404) else f"HTTP {status}"
        except AgentError as exc:
            status, body, error = 0, "", str(exc)
        if error != last_error:
            log(f"spot notice: {error}" if error else "spot notice: metadata answers again")
            last_error = error
        if status == 200 and body.strip():
            log(f"spot notice: the instance is reclaimed at {body.strip()[:40]}; draining")
            return drain(cfg, env)
        time.sleep(cfg["spot_poll_s"])
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="gpufleet-agent", description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", default=CONFIG)
    sub = parser.add_subparsers(dest="command", required=True)
    m = sub.add_parser("metrics", help="publish the scaling signals every period")
    m.add_argument("--once", action="store_true", help="one period, exit 0 when published")
    d = sub.add_parser("drain", help="stop taking requests and wait until none is in flight")
    d.add_argument("--timeout", type=float, default=None, help="seconds at most (default: the fleet's bound)")
    d.add_argument("--cancel", action="store_true", help="take requests again")
    d.add_argument("--complete", action="store_true", help="then end this instance's scale-in lifecycle wait")
    r = sub.add_parser("ready", help="end the scale-out lifecycle wait once vLLM is healthy")
    r.add_argument("--timeout", type=float, default=None, help="seconds at most to wait for vLLM")
    s = sub.add_parser("spot-watch", help="drain when the cloud announces the spot instance's reclaim")
    s.add_argument("--polls", type=int, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    cfg, env = load(args.config)
    if args.command == "metrics":
        return run_metrics(cfg, env, once=args.once)
    if args.command == "drain":
        if args.cancel:
            return cancel(cfg)
        status = drain(cfg, env, args.timeout)
        return complete_wait(cfg, env, "drained") if args.complete and status == 0 else status
    if args.command == "ready":
        return ready(cfg, env, args.timeout)
    return spot_watch(cfg, env, args.polls)


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        sys.exit(130)
