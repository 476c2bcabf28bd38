#!/usr/bin/python3
"""Stand-in for the ECS instance metadata service on the test node (100.100.100.200:80, an address the test adds to
lo): hardened mode's session token (PUT /latest/api/token; a GET without a valid token gets 403), the node role's STS
keys (only for the role in /srv/standin/config.json) and the spot reclaim notice (404 until /srv/standin/spot-notice
exists, then its text). Every request is appended to /srv/standin/metadata-calls."""

import json
import os
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

DIR = "/srv/standin"
ROLE = json.load(open(os.path.join(DIR, "config.json")))["role"]
TOKENS = set()


class H(BaseHTTPRequestHandler):
    def log_message(self, *a):
        pass

    def reply(self, code, body):
        data = body.encode()
        self.send_response(code)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def record(self):
        with open(os.path.join(DIR, "metadata-calls"), "a") as fh:
            fh.write(f"{self.command} {self.path}\n")

    def do_PUT(self):
        self.record()
        ttl = self.headers.get("X-aliyun-ecs-metadata-token-ttl-seconds", "")
        if self.path != "/latest/api/token" or not ttl.isdigit() or not 1 <= int(ttl) <= 21600:
            return self.reply(400, "bad token request")
        TOKENS.add(f"tk{len(TOKENS)}")
        self.reply(200, f"tk{len(TOKENS) - 1}")

    def do_GET(self):
        self.record()
        if self.headers.get("X-aliyun-ecs-metadata-token") not in TOKENS:
            return self.reply(403, "Forbidden")
        if self.path == f"/latest/meta-data/ram/security-credentials/{ROLE}":
            expires = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + 3600))
            keys = {"AccessKeyId": "STS.node", "AccessKeySecret": "node-secret-x", "SecurityToken": "node-token-x"}
            return self.reply(200, json.dumps({**keys, "Expiration": expires, "Code": "Success"}))
        notice = os.path.join(DIR, "spot-notice")
        if self.path == "/latest/meta-data/instance/spot/termination-time" and os.path.exists(notice):
            return self.reply(200, open(notice).read())
        self.reply(404, "Not Found")


ThreadingHTTPServer(("100.100.100.200", 80), H).serve_forever()
