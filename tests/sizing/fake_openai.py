"""A fake OpenAI-compatible chat server on 127.0.0.1 for the load-test tests.

Its latency is a known function of load: the first token comes after `first_token_s`, and each further
token takes `token_s` times the number of requests in flight when the request arrived. So a level of
concurrency c takes about first_token_s + tokens x token_s x c per request, and a test can place the
knee. It can also refuse keys, fail every n-th request with a 500, leave out the usage chunk, or hang.

Like vLLM it also answers non-streaming requests (`"stream": false`: one chat completion whose text is
`answer(prompt)`, the same every time, as greedy decoding gives), `GET /health` (200, or 503 when not `healthy`)
and `GET /metrics` (any query string ignored) in Prometheus text with vLLM's own names: `vllm:num_requests_running`,
`vllm:num_requests_waiting` and the KV-cache use (`vllm:kv_cache_usage_perc`, or with `metric_names="0.10.0-v0"`
`vllm:gpu_cache_usage_perc`). With `max_num_seqs` set, at most that many requests are served at once and the
others really wait (counted as waiting); KV-cache use is running x `kv_per_seq` (a fraction, at most 1).
"""

from __future__ import annotations

import json
import socket
import struct
import sys
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from msgspec import Struct, field


def default_answer(prompt: str) -> str:
    """A deterministic answer of a prompt (the same text every time, as with temperature 0)."""
    words = prompt.split()
    return f"The answer to '{' '.join(words[:6])}' is {len(words)} words long and ends with {words[-1] if words else '-'}."


class Behaviour(Struct):
    model: str = "fake-model"
    api_key: str | None = None
    tokens: int = 4  # tokens per answer (fewer when max_tokens is lower)
    first_token_s: float = 0.02
    token_s: float = 0.005  # per token, times the requests in flight
    fail_every: int = 0  # every n-th request gets HTTP 500 (0: never)
    usage: bool = True  # send the usage chunk when asked for it
    hang_s: float = 0.0  # sleep this long before answering
    echo_auth_on_401: bool = True  # a careless server that echoes the Authorization header
    mode: str = "sse"  # "sse"; "json": ignores stream and answers one JSON body; "cut": no [DONE]; "reset": the
    # connection is reset (TCP RST) after the first event
    events: tuple[str, ...] = ()  # sent verbatim as the stream's data events (then [DONE]) instead of the tokens
    aliases: tuple[str, ...] = ()  # other model names it answers to (a group behind a shared load balancer)
    answer: Callable[[str], str] = default_answer  # the text of a non-streaming answer
    healthy: bool = True
    max_num_seqs: int = 0  # served at once (0: no limit); the others wait, as vLLM's queue
    kv_per_seq: float = 0.1  # KV-cache fraction each running request takes
    metric_names: str = "0.33.0"  # "0.33.0": vllm:kv_cache_usage_perc; "0.10.0-v0": vllm:gpu_cache_usage_perc
    bodies: list = field(default_factory=list)
    in_flight: int = 0
    waiting: int = 0
    max_in_flight: int = 0
    count: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)
    slots: threading.Semaphore | None = None

    def __post_init__(self) -> None:
        if self.max_num_seqs:
            self.slots = threading.Semaphore(self.max_num_seqs)

    def metrics_text(self) -> str:
        with self.lock:
            running = self.in_flight - self.waiting
            waiting = self.waiting
        kv_name = "vllm:gpu_cache_usage_perc" if self.metric_names == "0.10.0-v0" else "vllm:kv_cache_usage_perc"
        labels = f'{{engine="0",model_name="{self.model}"}}'
        lines = []
        for name, value in (
            ("vllm:num_requests_running", running),
            ("vllm:num_requests_waiting", waiting),
            (kv_name, min(1.0, running * self.kv_per_seq)),
        ):
            lines += [f"# HELP {name} fake", f"# TYPE {name} gauge", f"{name}{labels} {float(value)}"]
        return "\n".join(lines) + "\n"


def _handler(b: Behaviour):
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):  # quiet
            pass

        def _send(self, status: int, payload: dict) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _event(self, payload) -> None:
            text = payload if isinstance(payload, str) else json.dumps(payload)
            self.wfile.write(f"data: {text}\n\n".encode())
            self.wfile.flush()

        def do_GET(self):
            path = self.path.split("?", 1)[0]  # a query string is ignored, as vLLM ignores one it does not read
            if path == "/health":
                return self._send(200 if b.healthy else 503, {})
            if path == "/metrics":
                data = b.metrics_text().encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/plain; version=0.0.4")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
                return None
            return self._send(404, {"error": {"message": f"no route {self.path}"}})

        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            with b.lock:
                b.bodies.append(body)
                b.count += 1
                n = b.count
                b.in_flight += 1
                b.max_in_flight = max(b.max_in_flight, b.in_flight)
                load = b.in_flight
            self.counted = True
            try:
                if b.slots is not None:
                    with b.lock:
                        b.waiting += 1
                    b.slots.acquire()
                    with b.lock:
                        b.waiting -= 1
                try:
                    self._answer(body, n, load)
                finally:
                    if b.slots is not None:
                        b.slots.release()
            finally:
                self._served()

        def _served(self) -> None:
            """No longer in flight (once): called before the stream's last event, which lets the client send its next
            request, so that a client holding c requests open is never seen as c + 1 while this thread ends."""
            if self.counted:
                self.counted = False
                with b.lock:
                    b.in_flight -= 1

        def _answer(self, body: dict, n: int, load: int) -> None:
            if self.path != "/v1/chat/completions":
                return self._send(404, {"error": {"message": f"no route {self.path}"}})
            auth = self.headers.get("Authorization", "")
            if b.api_key and auth != f"Bearer {b.api_key}":
                shown = auth if b.echo_auth_on_401 else ""
                return self._send(401, {"error": {"message": f"invalid key {shown}"}})
            if body.get("model") != b.model and body.get("model") not in b.aliases:
                return self._send(404, {"error": {"message": f"The model `{body.get('model')}` does not exist."}})
            if b.hang_s:
                time.sleep(b.hang_s)
            if b.fail_every and n % b.fail_every == 0:
                return self._send(500, {"error": {"message": "engine overloaded"}})
            if b.mode == "sse" and body.get("stream") is not True:
                prompt = str((body.get("messages") or [{}])[-1].get("content", ""))
                text = b.answer(prompt)
                return self._send(
                    200,
                    {
                        "object": "chat.completion",
                        "model": b.model,
                        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
                        "usage": {"prompt_tokens": len(prompt.split()), "completion_tokens": len(text.split())},
                    },
                )
            if b.mode == "json":
                return self._send(200, {"choices": [{"index": 0, "message": {"role": "assistant", "content": "hi"}}]})
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.end_headers()  # no length: the stream ends when the connection closes (HTTP/1.0)
            tokens = min(b.tokens, int(body.get("max_tokens", b.tokens)))
            time.sleep(b.first_token_s)
            self.wfile.write(b": keep-alive comment\n\n")
            self._event({"choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]})
            if b.mode == "reset":
                self._served()
                self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                self.connection.close()  # linger 0: the close sends RST, not FIN
                return None
            if b.events:
                self._served()
                for text in b.events:
                    self._event(text)
                self._event("[DONE]")
                return None
            for i in range(tokens):
                if i:
                    time.sleep(b.token_s * load)
                self._event({"choices": [{"index": 0, "delta": {"content": f"tok{i} "}}]})
            if b.usage and body.get("stream_options", {}).get("include_usage"):
                self._event(
                    {"choices": [], "usage": {"prompt_tokens": 10, "completion_tokens": tokens, "total_tokens": 10 + tokens}}
                )
            self._served()
            if b.mode != "cut":
                self._event("[DONE]")

    return Handler


class _Server(ThreadingHTTPServer):
    request_queue_size = 256  # the default 5 would make simultaneous connects wait for SYN retries

    def handle_error(self, request, client_address):
        if not isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError)):  # a client that timed out
            super().handle_error(request, client_address)


class FakeServer:
    def __init__(self, behaviour: Behaviour | None = None):
        self.behaviour = behaviour or Behaviour()
        self.httpd = _Server(("127.0.0.1", 0), _handler(self.behaviour))
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> FakeServer:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
