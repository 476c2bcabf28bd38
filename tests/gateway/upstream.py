"""A small HTTP/1.1 server standing in for vLLM behind the gateway: records every path it is asked for.

/health and /v1/models answer 200; /v1/stream sends three chunks `STREAM_GAP_S` apart (chunked, text/event-stream);
/metrics, /tokenize, /docs and the rest answer 200 too, so that a 404 seen by a client can only come from the gateway.
"""

from __future__ import annotations

import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

STREAM_GAP_S = 1.0


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):  # quiet
        pass

    def _body(self) -> bytes:
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def _reply(self, body: bytes, status: int = 200, ctype: str = "application/json") -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        self.server.seen.append(self.path)
        if self.path == "/v1/stream":
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for i in range(3):
                data = f"data: chunk-{i}\n\n".encode()
                self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
                self.wfile.flush()
                time.sleep(STREAM_GAP_S)
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
            return
        self._reply(b'{"ok": true, "path": "' + self.path.encode() + b'"}')

    def do_POST(self):
        self.server.seen.append(self.path)
        self._body()
        self._reply(b'{"ok": true}')

    do_HEAD = do_GET


def start(port: int = 0) -> ThreadingHTTPServer:
    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    server.daemon_threads = True
    server.seen = []
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server
