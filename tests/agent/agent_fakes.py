"""Local stand-ins the node agent talks to, each a real HTTP server on 127.0.0.1 that fails like the real service on a
wrong call: vLLM's /metrics (the pinned versions' names), the instance metadata service (hardened-mode token, the
RAM role's STS keys, the spot notice) and CloudMonitor's PutCustomMetric (signature, STS token, parameters as the
API reference lists them)."""

from __future__ import annotations

import json
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from gpufleet.components.alicloud import node_agent as alicloud_node

# Exposition as the pinned vLLMs write it (names from components/data/metric_names.yaml): 0.33.0 labels each gauge
# with engine and model_name; 0.10.0 on V100 runs the V0 engine, whose KV gauge is vllm:gpu_cache_usage_perc.
VLLM_0_33 = """# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{{engine="0",model_name="qwen"}} {running}
vllm:num_requests_running{{engine="1",model_name="qwen"}} 0.0
# HELP vllm:num_requests_waiting Number of requests waiting to be processed.
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{{engine="0",model_name="qwen"}} {waiting}
vllm:num_requests_waiting{{engine="1",model_name="qwen"}} {waiting}
# HELP vllm:kv_cache_usage_perc KV-cache usage. 1 means 100 percent usage.
# TYPE vllm:kv_cache_usage_perc gauge
vllm:kv_cache_usage_perc{{engine="0",model_name="qwen"}} {kv}
vllm:kv_cache_usage_perc{{engine="1",model_name="qwen"}} {kv}
# HELP vllm:prompt_tokens_total Number of prefill tokens processed.
# TYPE vllm:prompt_tokens_total counter
vllm:prompt_tokens_total{{engine="0",model_name="qwen"}} 1234.0
vllm:prompt_tokens_created{{engine="0",model_name="qwen"}} 1.7e+09
vllm:e2e_request_latency_seconds_bucket{{engine="0",le="+Inf",model_name="qwen \\"7b\\", awq"}} 3.0
"""
VLLM_0_10 = """# HELP vllm:num_requests_running Number of requests currently running on GPU.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{{model_name="qwen"}} {running}
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{{model_name="qwen"}} {waiting}
# TYPE vllm:gpu_cache_usage_perc gauge
vllm:gpu_cache_usage_perc{{model_name="qwen"}} {kv}
vllm:num_preemptions_total{{model_name="qwen"}} 0.0
"""


class Server:
    """A ThreadingHTTPServer on 127.0.0.1 with a handler class; stopped by close()."""

    def __init__(self, handler: type[BaseHTTPRequestHandler]):
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.httpd.owner = self  # type: ignore[attr-defined]
        self.port = self.httpd.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


class Quiet(BaseHTTPRequestHandler):
    def log_message(self, *a):
        pass

    def reply(self, code: int, body: str = "", ctype: str = "text/plain") -> None:
        data = body.encode()
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        try:
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (its timeout) before a slow answer

    @property
    def owner(self):
        return self.server.owner  # type: ignore[attr-defined]


class FakeVllm(Server):
    """GET /metrics in the chosen version's names; `running`, `waiting`, `kv` settable; `up=False` refuses. GET /health:
    200 once `healthy` (vLLM answers 200 there when its engine is up), 503 before. `delay`: seconds /metrics takes
    to answer (a loaded vLLM's busy event loop)."""

    def __init__(self, version: str = "0.33.0", running: float = 2, waiting: float = 3, kv: float = 0.25):
        self.template = {"0.33.0": VLLM_0_33, "0.10.0": VLLM_0_10}[version]
        self.running, self.waiting, self.kv, self.up, self.healthy = running, waiting, kv, True, True
        self.health_asked, self.delay = 0, 0.0

        class H(Quiet):
            def do_GET(self):
                o = self.owner
                if self.path == "/metrics" and o.delay:
                    time.sleep(o.delay)
                if self.path == "/health":
                    o.health_asked += 1
                    return self.reply(200 if o.up and o.healthy else 503, "")
                if self.path != "/metrics" or not o.up:
                    return self.reply(404 if o.up else 503, "not found")
                self.reply(200, o.template.format(running=float(o.running), waiting=float(o.waiting), kv=float(o.kv)))

        super().__init__(H)


class FakeMetadata(Server):
    """ECS-style metadata: PUT /latest/api/token; with `hardened`, GETs without a valid token get 403. The role's
    STS keys at /latest/meta-data/ram/security-credentials/<role>; the spot notice 404 until `notice` is set."""

    TOKEN_TTL = "X-aliyun-ecs-metadata-token-ttl-seconds"
    TOKEN = "X-aliyun-ecs-metadata-token"

    def __init__(
        self,
        role: str,
        hardened: bool = True,
        notice_path: str = "/latest/meta-data/instance/spot/termination-time",
        instance_id: str = "i-bp1node0001",
    ):
        self.role, self.hardened, self.notice_path, self.instance_id = role, hardened, notice_path, instance_id
        self.notice = ""
        self.token_failures = 0  # the next token requests that fail (a metadata service restarting)
        self.tokens: set[str] = set()
        self.issued = 0
        self.keys = {
            "AccessKeyId": "STS.test-id",
            "AccessKeySecret": "test-secret-never-logged",
            "SecurityToken": "tok-never-logged",
        }
        self.calls: list[str] = []

        class H(Quiet):
            def do_PUT(self):
                o = self.owner
                o.calls.append(f"PUT {self.path}")
                ttl = self.headers.get(o.TOKEN_TTL, "")
                if o.token_failures:
                    o.token_failures -= 1
                    return self.reply(500, "internal error")
                if self.path != "/latest/api/token" or not ttl.isdigit() or not 1 <= int(ttl) <= 21600:
                    return self.reply(400, "bad token request")
                token = f"tk-{len(o.tokens)}"
                o.tokens.add(token)
                self.reply(200, token)

            def do_GET(self):
                o = self.owner
                o.calls.append(f"GET {self.path}")
                if o.hardened and self.headers.get(o.TOKEN) not in o.tokens:
                    return self.reply(403, "Forbidden")
                if self.path == f"/latest/meta-data/ram/security-credentials/{o.role}":
                    o.issued += 1
                    expires = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + 3600))
                    return self.reply(200, json.dumps({**o.keys, "Expiration": expires, "Code": "Success"}))
                if self.path == o.notice_path and o.notice:
                    return self.reply(200, o.notice)
                if self.path == "/latest/meta-data/instance-id":
                    return self.reply(200, o.instance_id)
                self.reply(404, "Not Found")

        super().__init__(H)


class FakeCms(Server):
    """POST / PutCustomMetric (CMS 2019-01-01). Checks what CloudMonitor checks: the RPC signature with the STS secret,
    the STS token, a fresh timestamp and a new nonce, and each MetricList.N entry as the API reference describes it
    (required fields, N <= 21, Type 0/1, Period 60/300, Dimensions and Values JSON). `fail` answers errors first."""

    REQUIRED = ("MetricName", "GroupId", "Dimensions", "Type", "Values")

    def __init__(self, keys: dict, fail: list[tuple[int, str]] | None = None):
        self.keys = keys
        self.fail = list(fail or [])
        self.accepted: list[dict] = []
        self.rejected: list[str] = []
        self.nonces: set[str] = set()

        class H(Quiet):
            def do_POST(self):
                o = self.owner
                body = self.rfile.read(int(self.headers.get("Content-Length", "0"))).decode()
                params = dict(urllib.parse.parse_qsl(body, keep_blank_values=True))
                problem = o.check(params, self.headers.get("Content-Type", ""))
                if problem:
                    o.rejected.append(problem)
                    return self.reply(400, json.dumps({"Code": problem.split(":")[0], "Message": problem}), "application/json")
                if o.fail:
                    code, text = o.fail.pop(0)
                    return self.reply(code, json.dumps({"Code": text, "Message": "injected"}), "application/json")
                o.accepted.append(params)
                self.reply(200, json.dumps({"Code": "200", "Message": "success", "RequestId": "req-1"}), "application/json")

        super().__init__(H)

    def check(self, p: dict, ctype: str) -> str:
        if not ctype.startswith("application/x-www-form-urlencoded"):
            return f"InvalidContentType: {ctype}"
        signature = p.pop("Signature", "")
        want = alicloud_node.rpc_signature(p, self.keys["AccessKeySecret"], "POST")
        if signature != want:
            return "SignatureDoesNotMatch: the signature does not match"
        if p.get("AccessKeyId") != self.keys["AccessKeyId"] or p.get("SecurityToken") != self.keys["SecurityToken"]:
            return "InvalidSecurityToken: wrong STS key or token"
        if (p.get("Action"), p.get("Version"), p.get("SignatureMethod"), p.get("SignatureVersion")) != (
            "PutCustomMetric",
            "2019-01-01",
            "HMAC-SHA1",
            "1.0",
        ):
            return "InvalidAction: " + p.get("Action", "")
        stamp = time.mktime(time.strptime(p.get("Timestamp", "1970-01-01T00:00:00Z"), "%Y-%m-%dT%H:%M:%SZ")) - time.timezone
        if abs(stamp - time.time()) > 900:
            return "InvalidTimeStamp.Expired: " + p.get("Timestamp", "")
        if p.get("SignatureNonce") in self.nonces:
            return "SignatureNonceUsed: nonce used twice"
        self.nonces.add(p.get("SignatureNonce", ""))
        ns = sorted({int(k.split(".")[1]) for k in p if k.startswith("MetricList.")})
        if not ns or ns != list(range(1, len(ns) + 1)) or len(ns) > 21:
            return f"InvalidParameter: MetricList indexes {ns}"
        for n in ns:
            m = {k.split(".", 2)[2]: v for k, v in p.items() if k.startswith(f"MetricList.{n}.")}
            missing = [f for f in self.REQUIRED if not m.get(f)]
            if missing:
                return f"MissingParameter: MetricList.{n}.{missing[0]}"
            if m["Type"] not in ("0", "1") or m.get("Period", "60") not in ("60", "300"):
                return f"InvalidParameter: MetricList.{n}.Type/Period"
            try:
                dims, values = json.loads(m["Dimensions"]), json.loads(m["Values"])
            except ValueError:
                return f"InvalidParameter: MetricList.{n} Dimensions/Values not JSON"
            if not isinstance(dims, dict) or not dims or "value" not in values:
                return f"InvalidParameter: MetricList.{n} Dimensions/Values"
        return ""

    def points(self) -> list[dict]:
        out = []
        for params in self.accepted:
            for n in sorted({int(k.split(".")[1]) for k in params if k.startswith("MetricList.")}):
                m = {k.split(".", 2)[2]: v for k, v in params.items() if k.startswith(f"MetricList.{n}.")}
                out.append(m)
        return out
