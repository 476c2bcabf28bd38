"""A local stand-in for the TencentCloud API (AS and CVM) that checks each request like the real one: the TC3 signature
recomputed from what arrived (Host, Content-Type, body, X-TC-Timestamp), the credential scope's date and service, the
session token, the action's API version; answers DescribeAutoScalingInstances (filter auto-scaling-group-id,
Offset/Limit <= 100), DescribeInstances (InstanceIds <= 100) and ExecuteScalingPolicy. Plus node /metrics servers,
one per private address on the loopback network (127.0.0.N), all on the same metrics port."""

from __future__ import annotations

import importlib.util
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location(
    "scaler_index", ROOT / "src" / "gpufleet" / "components/tencentcloud/scaler/index.py"
)
index = importlib.util.module_from_spec(spec)
spec.loader.exec_module(index)

KEYS = {
    "TENCENTCLOUD_SECRETID": "AKIDscalerTEST",
    "TENCENTCLOUD_SECRETKEY": "scaler-secret-never-logged",
    "TENCENTCLOUD_SESSIONTOKEN": "sess-token-never-logged",
}
VERSIONS = {
    f"{svc}.{domain}": (svc, version)
    for svc, version in (("as", "2018-04-19"), ("cvm", "2017-03-12"))
    for domain in ("tencentcloudapi.com", "internal.tencentcloudapi.com")
}


def error(code: str, message: str) -> dict:
    return {"Response": {"Error": {"Code": code, "Message": message}, "RequestId": "req-err"}}


class FakeTencentApi:
    def __init__(self, region: str, keys: dict = KEYS):
        self.region, self.keys = region, keys
        self.instances: dict[str, dict] = {}  # id -> {group, state, ip}
        self.policies: dict[str, str] = {}  # policy id -> group
        self.executed: list[dict] = []
        self.calls: list[tuple[str, dict]] = []
        self.hosts: set[str] = set()
        self.refuse_execute: str = ""  # an error code ExecuteScalingPolicy answers with (e.g. in cooldown)
        owner = self

        class H(BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", "0"))).decode()
                answer = owner.handle({k.lower(): v for k, v in self.headers.items()}, body)
                data = json.dumps(answer).encode()
                self.send_response(200)  # API 3.0 answers errors in the body with HTTP 200
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/"
        threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True).start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()

    def add(self, group: str, n: int, ips: list[str], state: str = "IN_SERVICE") -> list[str]:
        ids = []
        for i in range(n):
            iid = f"ins-{len(self.instances):04d}"
            self.instances[iid] = {
                "group": group,
                "state": state,
                "ip": ips[i] if i < len(ips) else f"10.9.{len(self.instances)}.1",
            }
            ids.append(iid)
        return ids

    def check(self, h: dict, body: str) -> dict | None:
        host = h.get("host", "")
        if host not in VERSIONS:
            return error("InvalidParameter", f"host {host}")
        service, version = VERSIONS[host]
        if h.get("x-tc-version") != version or h.get("x-tc-region") != self.region:
            return error("InvalidParameterValue", "version or region")
        if h.get("x-tc-token") != self.keys["TENCENTCLOUD_SESSIONTOKEN"]:
            return error("AuthFailure.TokenFailure", "token")
        ts = int(h.get("x-tc-timestamp", "0"))
        if abs(ts - time.time()) > 300:
            return error("AuthFailure.SignatureExpire", "timestamp")
        auth = h.get("authorization", "")
        try:
            algo, rest = auth.split(" ", 1)
            fields = dict(part.strip().split("=", 1) for part in rest.split(","))
            secret_id, date, svc, term = fields["Credential"].split("/")
        except ValueError:
            return error("AuthFailure.InvalidAuthorization", "malformed")
        if algo != "TC3-HMAC-SHA256" or fields["SignedHeaders"] != "content-type;host" or term != "tc3_request":
            return error("AuthFailure.InvalidAuthorization", "algorithm or headers")
        if secret_id != self.keys["TENCENTCLOUD_SECRETID"] or svc != service:
            return error("AuthFailure.SecretIdNotFound", "secret id or service")
        to_sign = index.string_to_sign(service, ts, index.canonical_request(host, body, h.get("content-type", "")))
        if to_sign.split("\n")[2].split("/")[0] != date:
            return error("AuthFailure.SignatureFailure", "date")
        if fields["Signature"] != index.signature(self.keys["TENCENTCLOUD_SECRETKEY"], service, ts, to_sign):
            return error("AuthFailure.SignatureFailure", "The provided credentials could not be validated.")
        return None

    def handle(self, h: dict, body: str) -> dict:
        problem = self.check(h, body)
        if problem:
            self.calls.append((h.get("x-tc-action", ""), {"rejected": problem["Response"]["Error"]["Code"]}))
            return problem
        action, p = h["x-tc-action"], json.loads(body)
        self.hosts.add(h["host"])
        self.calls.append((action, p))
        if action == "DescribeAutoScalingInstances":
            limit, offset = p.get("Limit", 20), p.get("Offset", 0)
            if limit > 100:
                return error("InvalidParameterValue.Limit", "Limit at most 100")
            groups = {v for f in p.get("Filters", []) if f["Name"] == "auto-scaling-group-id" for v in f["Values"]}
            rows = [
                {"InstanceId": i, "AutoScalingGroupId": d["group"], "LifeCycleState": d["state"], "HealthStatus": "HEALTHY"}
                for i, d in self.instances.items()
                if d["group"] in groups
            ]
            return {
                "Response": {"TotalCount": len(rows), "AutoScalingInstanceSet": rows[offset : offset + limit], "RequestId": "r"}
            }
        if action == "DescribeInstances":
            ids = p.get("InstanceIds", [])
            if len(ids) > 100:
                return error("InvalidParameterValue.LimitExceeded", "InstanceIds at most 100")
            rows = [{"InstanceId": i, "PrivateIpAddresses": [self.instances[i]["ip"]]} for i in ids if i in self.instances]
            return {"Response": {"TotalCount": len(rows), "InstanceSet": rows, "RequestId": "r"}}
        if action == "ExecuteScalingPolicy":
            if p.get("AutoScalingPolicyId") not in self.policies:
                return error("ResourceNotFound.ScalingPolicyNotFound", p.get("AutoScalingPolicyId", ""))
            if self.refuse_execute:
                return error(self.refuse_execute, "refused")
            self.executed.append(p)
            return {"Response": {"ActivityId": f"asa-{len(self.executed)}", "RequestId": "r"}}
        return error("InvalidAction", action)


class FakeNodes:
    """GET <path> on 127.0.0.N:<port> for each node, answering the given vLLM exposition; None = not listening."""

    def __init__(self, path: str):
        self.path = path
        self.servers: list[ThreadingHTTPServer] = []
        self.port = 0

    def start(self, texts: dict[str, str | None]) -> None:
        import socket

        with socket.socket() as s:  # one free port, then every node binds it on its own address
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        for ip, text in texts.items():
            if text is None:
                continue
            path = self.path

            class H(BaseHTTPRequestHandler):
                body, want = text, path

                def log_message(self, *a):
                    pass

                def do_GET(self):
                    data = (self.body if self.path == self.want else "not found").encode()
                    self.send_response(200 if self.path == self.want else 404)
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)

            srv = ThreadingHTTPServer((ip, self.port), H)
            threading.Thread(target=srv.serve_forever, args=(0.05,), daemon=True).start()
            self.servers.append(srv)

    def close(self) -> None:
        for s in self.servers:
            s.shutdown()
            s.server_close()
