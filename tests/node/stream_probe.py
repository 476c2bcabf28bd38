#!/usr/bin/python3
"""Run inside the node: one streamed chat completion through the gateway, with the time each piece arrived.

Prints JSON {"first": seconds until the first `data:` line, "done": seconds until `data: [DONE]`, "text": body}.
"""

import json
import socket
import sys
import time

port, key = int(sys.argv[1]), sys.argv[2]
body = json.dumps({"model": "m", "stream": True, "messages": [{"role": "user", "content": "hi"}]}).encode()
head = (
    "POST /v1/chat/completions HTTP/1.1\r\nHost: node\r\nConnection: close\r\nContent-Type: application/json\r\n"
    f"Content-Length: {len(body)}\r\n" + (f"Authorization: Bearer {key}\r\n" if key != "-" else "") + "\r\n"
)
start = time.monotonic()
sock = socket.create_connection(("127.0.0.1", port), timeout=10)
sock.sendall(head.encode() + body)
data, first, done = b"", None, None
while True:
    piece = sock.recv(65536)
    if not piece:
        break
    data += piece
    now = time.monotonic() - start
    if first is None and b"data: {" in data:
        first = now
    if done is None and b"data: [DONE]" in data:
        done = now
print(json.dumps({"first": first, "done": done, "text": data.decode(errors="replace")}))
