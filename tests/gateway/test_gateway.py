"""The gateway config against a real nginx on 127.0.0.1 (issue 14 item 2): nginx -t on every shipped stack's
rendering, then behaviour in front of a fake vLLM: 404 off /v1 and /health, 401 without the key, 200 with it, 429 past
the rate, 413 past the body size, streaming without buffering, metrics only on the metrics port, no body in the log."""

from __future__ import annotations

import os
import time
from pathlib import Path

import httpx
import pytest
from conftest import KEY, Nginx, values
from tools import require

from gpufleet.images import gateway
from gpufleet.stacks import loader

ROOT = Path(__file__).resolve().parents[2]
AUTH = {"Authorization": f"Bearer {KEY}"}


def raw_get(port: int, path: str) -> int:
    """Status of GET <path> sent byte for byte as written (with the key)."""
    import socket

    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(f"GET {path} HTTP/1.0\r\nHost: x\r\nAuthorization: Bearer {KEY}\r\n\r\n".encode())
        head = s.recv(64).decode()
    return int(head.split()[1])


@pytest.mark.parametrize("stack", loader.stack_names(ROOT))
def test_rendered_config_passes_nginx_t(stack, tmp_path):
    require("nginx")
    n = Nginx(tmp_path, values(stack), [KEY])
    result = n.test()
    assert result.returncode == 0, result.stderr
    assert "test is successful" in result.stderr


def test_nginx_t_fails_on_a_broken_key_map(tmp_path):
    require("nginx")
    n = Nginx(tmp_path, values(), [KEY])
    n.key_map.write_text('"~^Bearer x$" 1\n')  # a missing ';' must be caught, so the check can fail
    assert n.test().returncode != 0


@pytest.mark.parametrize(
    "path",
    [
        "/metrics",
        "/tokenize",
        "/detokenize",
        "/docs",
        "/openapi.json",
        "/invocations",
        "/version",
        "/pooling",
        "/score",
        "/rerank",
        "/classify",
        "/load",
        "/v1",
        "/v1/../metrics",
        "/v1/%2e%2e/metrics",
        "/health/../metrics",
    ],
)
def test_everything_but_v1_and_health_is_404_and_never_reaches_vllm(run_nginx, fake_vllm, path):
    n = run_nginx()
    status = raw_get(n.values.serving_port, path)  # raw: an HTTP client would resolve the dot segments itself
    assert status == 404, (path, status)
    assert not any("metrics" in p or p.rstrip("/") == path for p in fake_vllm.seen), fake_vllm.seen


def test_key_is_required_on_every_v1_request(run_nginx):
    n = run_nginx()
    assert httpx.get(n.url("/v1/models")).status_code == 401
    assert httpx.get(n.url("/v1/models"), headers={"Authorization": "Bearer wrong-key-0123456789"}).status_code == 401
    assert httpx.get(n.url("/v1/models"), headers={"Authorization": f"Bearer {KEY.lower()}"}).status_code == 401
    assert httpx.get(n.url("/v1/models"), headers={"Authorization": f"Bearer {KEY}x"}).status_code == 401
    assert httpx.get(n.url("/v1/models"), headers={"Authorization": f"Bearer {KEY.replace('.', 'x')}"}).status_code == 401
    assert httpx.post(n.url("/v1/chat/completions"), json={}).status_code == 401
    r = httpx.get(n.url("/v1/models"), headers=AUTH)
    assert r.status_code == 200 and r.json()["path"] == "/v1/models"
    assert httpx.get(n.url("/health")).status_code == 200  # the load balancer's health check carries no key


def test_without_a_key_secret_v1_is_open_and_the_rest_still_404(run_nginx):
    n = run_nginx(require_key=False, keys=[])
    assert httpx.get(n.url("/v1/models")).status_code == 200
    assert httpx.get(n.url("/metrics")).status_code == 404


def test_rate_limit_per_client_answers_429_past_the_rate(run_nginx):
    n = run_nginx(rate_per_minute=6, burst=0)  # one request per 10 s, no burst
    codes = [httpx.get(n.url("/v1/models"), headers=AUTH).status_code for _ in range(5)]
    assert codes == [200, 429, 429, 429, 429]
    assert httpx.get(n.url("/health")).status_code == 200  # health checks are not rate limited


def test_forwarded_for_is_trusted_only_from_the_load_balancer(run_nginx):
    # Alibaba shape: the load balancer (here 127.0.0.1) adds X-Forwarded-For; each client has its own budget.
    lb = run_nginx(rate_per_minute=6, burst=0, trusted_proxies=("127.0.0.0/8",))
    for client in ("198.51.100.1", "198.51.100.2"):
        assert httpx.get(lb.url("/v1/models"), headers={**AUTH, "X-Forwarded-For": client}).status_code == 200
    assert httpx.get(lb.url("/v1/models"), headers={**AUTH, "X-Forwarded-For": "198.51.100.1"}).status_code == 429
    # Tencent shape (TCP listener, no trusted proxy): a client-written X-Forwarded-For buys no new budget.
    tcp = run_nginx(rate_per_minute=6, burst=0, trusted_proxies=())
    assert httpx.get(tcp.url("/v1/models"), headers={**AUTH, "X-Forwarded-For": "198.51.100.1"}).status_code == 200
    assert httpx.get(tcp.url("/v1/models"), headers={**AUTH, "X-Forwarded-For": "198.51.100.2"}).status_code == 429


def test_body_larger_than_the_limit_is_413(run_nginx):
    n = run_nginx(max_body_mib=1)
    assert httpx.post(n.url("/v1/chat/completions"), headers=AUTH, content=b"x" * 1000).status_code == 200
    assert httpx.post(n.url("/v1/chat/completions"), headers=AUTH, content=b"x" * (2 << 20)).status_code == 413


def test_streaming_chunks_arrive_before_vllm_finishes(run_nginx):
    import upstream

    n = run_nginx()
    start = time.monotonic()
    arrivals = []
    with httpx.stream("GET", n.url("/v1/stream"), headers=AUTH, timeout=30) as r:
        assert r.status_code == 200
        for chunk in r.iter_raw():
            if chunk:
                arrivals.append((time.monotonic() - start, chunk))
    total = time.monotonic() - start
    assert total >= 3 * upstream.STREAM_GAP_S - 0.2
    first_at = arrivals[0][0]
    assert b"chunk-0" in arrivals[0][1]
    # Buffered, the first bytes would come only when the upstream finishes (~3 s); unbuffered, after ~0 s, and each
    # chunk about STREAM_GAP_S after the one before.
    assert first_at < upstream.STREAM_GAP_S, arrivals
    seen = [t for t, c in arrivals if b"chunk-" in c]
    assert len(seen) == 3 and all(b - a > upstream.STREAM_GAP_S / 2 for a, b in zip(seen, seen[1:])), arrivals


def test_metrics_are_served_on_the_metrics_port_to_allowed_sources_only(run_nginx, fake_vllm):
    n = run_nginx(metrics_cidrs=("127.0.0.0/8",))
    for name in ("vllm", "node", "dcgm"):
        assert httpx.get(n.url(f"/metrics/{name}", metrics=True)).status_code == 200
    assert fake_vllm.seen.count("/metrics") == 3
    assert httpx.get(n.url("/v1/models", metrics=True), headers=AUTH).status_code == 404
    closed = run_nginx(metrics_cidrs=("10.20.0.0/16",))
    assert httpx.get(closed.url("/metrics/vllm", metrics=True)).status_code == 403


def test_access_log_holds_no_body_query_or_key(run_nginx):
    n = run_nginx()
    httpx.post(n.url("/v1/chat/completions?user=SECRETQUERY"), headers=AUTH, content=b'{"prompt": "SECRETPROMPT"}')
    httpx.get(n.url("/v1/models"), headers={"Authorization": "Bearer WRONGKEY-0123456789"})
    n.stop()
    log = n.access_log.read_text()
    assert "/v1/chat/completions" in log and " 200 " in log and " 401 " in log
    for secret in ("SECRETPROMPT", "SECRETQUERY", KEY, "WRONGKEY", "Bearer"):
        assert secret not in log


def test_rotated_key_takes_effect_on_reload(run_nginx):
    import os
    import signal

    n = run_nginx()
    new = "sk-rotated-0123456789abcdef"
    n.key_map.write_text(gateway.key_map_text([new]))
    os.kill(n.proc.pid, signal.SIGHUP)  # what `nginx -s reload` sends
    deadline = time.monotonic() + 30  # new workers start within ms; 30 s covers a loaded CI machine
    resend = time.monotonic() + 3
    # until the old workers have gone: they finish gracefully, and one may still take a connection queued before it
    # stopped listening and answer with the old map, so the new map must hold for several requests in a row
    streak = 0
    while time.monotonic() < deadline and streak < 5:
        if time.monotonic() > resend:  # a reload is idempotent; one that landed mid-start-up is sent again
            os.kill(n.proc.pid, signal.SIGHUP)
            resend = time.monotonic() + 3
        new_ok = httpx.get(n.url("/v1/models"), headers={"Authorization": f"Bearer {new}"}).status_code == 200
        old_refused = httpx.get(n.url("/v1/models"), headers=AUTH).status_code == 401
        streak = streak + 1 if new_ok and old_refused else 0
        if not streak:
            time.sleep(0.1)
    assert streak == 5, "30 s after the reload the rotated key is not taken, or the old one still is"


def test_draining_fails_the_health_check_and_keeps_serving(run_nginx):
    """While the drain flag exists (images/node_agent.py drain), the load balancer's health check gets 503 and requests
    that still arrive are served; without it the health check passes again (a drain cancelled, or a reboot: tmpfs)."""
    n = run_nginx()
    assert httpx.get(n.url("/health")).status_code == 200
    n.drain_flag.write_text("draining\n")
    assert httpx.get(n.url("/health")).status_code == 503
    assert httpx.get(n.url("/v1/models"), headers=AUTH).status_code == 200
    n.drain_flag.unlink()
    assert httpx.get(n.url("/health")).status_code == 200


def test_the_drain_flag_is_where_nginx_workers_can_see_it(run_nginx, tmp_path):
    """nginx's `-f` runs in the worker (not root): a flag in a root-only folder reads as absent and never drains (seen
    here with a 0700 folder), which is why the node's flag sits directly in /run and not in /run/gpufleet (0700)."""
    if os.geteuid() != 0:
        pytest.skip("nginx's workers change user only when nginx starts as root")
    hidden = tmp_path / "root-only"
    hidden.mkdir(mode=0o700)
    n = run_nginx(drain_dir=hidden)
    n.drain_flag.write_text("draining\n")
    assert httpx.get(n.url("/health")).status_code == 200  # the worker cannot see it
    assert str(Path(gateway.DRAIN_FLAG).parent) == "/run"
    assert f"if (-f {gateway.DRAIN_FLAG})" in gateway.render(values())["nginx"]
