#!/usr/bin/python3
"""Stand-in for `vllm serve` at the recipe's venv path: an OpenAI-compatible server without a GPU.

It checks what the sandbox must leave working (cache directories and /dev/shm writable, the weights readable),
honours VLLM_API_KEY on /v1 paths as vLLM does, and serves /health, /v1/models, streaming
/v1/chat/completions and /metrics (the exposition the test writes).
"""

import json
import os
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

METRICS = "/srv/standin/metrics.prom"  # /metrics answers this file (tests/node/test_boot.py writes it)
STREAM_GAP_S = 0.4  # between streamed chunks (tests/node/test_boot.py measures that they arrive apart)


def arg(name: str, default=None):
    argv = sys.argv
    return argv[argv.index(name) + 1] if name in argv else default


def main() -> int:
    if sys.argv[1:2] != ["serve"] or len(sys.argv) < 3:
        print("vllm: usage: vllm serve MODEL [flags]", file=sys.stderr)
        return 2
    model_dir = sys.argv[2]
    try:
        json.load(open(os.path.join(model_dir, "config.json")))
    except OSError as exc:
        print(f"vllm: cannot read the model: {exc}", file=sys.stderr)
        return 1
    for var in ("VLLM_CACHE_ROOT", "TRITON_CACHE_DIR", "HF_HOME"):
        folder = os.environ.get(var)
        if not folder:
            print(f"vllm: {var} is not set", file=sys.stderr)
            return 1
        os.makedirs(folder, exist_ok=True)
        open(os.path.join(folder, "probe"), "w").write("ok")
    open(f"/dev/shm/nccl-probe-{os.getpid()}", "w").write("ok")
    os.unlink(f"/dev/shm/nccl-probe-{os.getpid()}")
    key = os.environ.get("VLLM_API_KEY")
    name = arg("--served-model-name", model_dir)

    class H(BaseHTTPRequestHandler):
        def _send(self, code, body):
            data = json.dumps(body).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _authorized(self):
            if key and self.path.startswith("/v1") and self.headers.get("Authorization") != f"Bearer {key}":
                self._send(401, {"error": "Unauthorized"})
                return False
            return True

        def do_GET(self):
            if self.path == "/metrics" and os.path.exists(METRICS):  # the exposition the test writes (its names)
                data = open(METRICS).read().encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/plain; version=0.0.4")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
            elif self.path == "/health":
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()
            elif self._authorized() and self.path == "/v1/models":
                self._send(200, {"object": "list", "data": [{"id": name, "object": "model"}]})
            elif self.path != "/v1/models":
                self._send(404, {"error": "Not Found"})

        def do_POST(self):
            if not self._authorized():
                return
            if self.path != "/v1/chat/completions":
                return self._send(404, {"error": "Not Found"})
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))) or b"{}")
            if not body.get("stream"):
                return self._send(200, {"choices": [{"message": {"role": "assistant", "content": "ok"}}]})
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.end_headers()
            for word in ("hello", " world"):
                chunk = {"object": "chat.completion.chunk", "model": name, "choices": [{"delta": {"content": word}}]}
                self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                self.wfile.flush()
                time.sleep(STREAM_GAP_S)  # a generation takes time: a buffering proxy would hold the chunks back
            self.wfile.write(b"data: [DONE]\n\n")

        def log_message(self, *a):
            pass

    server = ThreadingHTTPServer((arg("--host", "0.0.0.0"), int(arg("--port", "8000"))), H)
    print(f"vllm stand-in serving {name} on {server.server_address}", flush=True)
    server.serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main())
