"""A real nginx on 127.0.0.1 with the rendered gateway config: its own prefix and temp paths, high ports, stopped by
its PID (never the system nginx)."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import pytest
from tools import require

from gpufleet import validation
from gpufleet.images import gateway

sys.path.insert(0, str(Path(__file__).parent))
import upstream  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
KEY = "sk-test.Gpufleet+Key_0123456789"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main_conf(tmp: Path, include: Path) -> str:
    """The smallest nginx.conf around the gateway include (Ubuntu's nginx.conf includes conf.d/*.conf in http)."""
    return f"""
pid {tmp}/nginx.pid;
error_log {tmp}/error.log info;
worker_processes 1;
events {{ worker_connections 64; }}
http {{
    client_body_temp_path {tmp}/body;
    proxy_temp_path {tmp}/proxy;
    fastcgi_temp_path {tmp}/fastcgi;
    uwsgi_temp_path {tmp}/uwsgi;
    scgi_temp_path {tmp}/scgi;
    include {include};
}}
"""


def values(stack: str = "alicloud-cn-hangzhou-prod", **changes) -> gateway.GatewayValues:
    fleet = validation.load_fleet(stack, ROOT, sizing=False)
    return gateway.values_from_fleet(fleet)._replace(**changes)


class Nginx:
    def __init__(self, tmp: Path, values: gateway.GatewayValues, keys: list[str], drain_dir: Path | None = None):
        self.tmp, self.values = tmp, values
        (tmp / "logs").mkdir(parents=True, exist_ok=True)
        self.key_map = tmp / "gateway-key.map"
        self.key_map.write_text(gateway.key_map_text(keys))
        self.key_map.chmod(0o640)
        self.access_log = tmp / "access.log"
        self.drain_flag = (drain_dir or tmp) / "draining"
        files = gateway.render(
            values,
            key_map_file=str(self.key_map),
            access_log=str(self.access_log),
            pid_file=str(tmp / "nginx.pid"),
            drain_flag=str(self.drain_flag),
            bind="127.0.0.1:",
        )
        self.include = tmp / "gpufleet-gateway.conf"
        self.include.write_text(files["nginx"])
        self.conf = tmp / "nginx.conf"
        self.conf.write_text(main_conf(tmp, self.include))
        self.proc: subprocess.Popen | None = None

    def cmd(self, *extra: str) -> list[str]:
        return [require("nginx"), "-p", str(self.tmp), "-c", str(self.conf), *extra]

    def test(self) -> subprocess.CompletedProcess:
        return subprocess.run(self.cmd("-t"), capture_output=True, text=True, timeout=30)

    def start(self) -> None:
        self.proc = subprocess.Popen(self.cmd("-g", "daemon off;"), stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                # a worker's answer, not only the master's listening socket: until the master has entered its
                # signal loop, a SIGHUP sent by a test sets a flag nothing reads (the reload then waits for another signal)
                socket.create_connection(("127.0.0.1", self.values.serving_port), timeout=0.2).close()
                httpx.get(self.url("/health"), timeout=1)
                return
            except (OSError, httpx.HTTPError):
                if self.proc.poll() is not None:
                    raise RuntimeError(f"nginx exited: {self.proc.stdout.read().decode()}") from None
                time.sleep(0.05)
        raise RuntimeError("nginx did not listen within 10 s")

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGQUIT)  # graceful stop of this master only, by its PID
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.kill(self.proc.pid, signal.SIGKILL)
                self.proc.wait()

    def url(self, path: str, metrics: bool = False) -> str:
        port = self.values.metrics_port if metrics else self.values.serving_port
        return f"http://127.0.0.1:{port}{path}"


@pytest.fixture
def fake_vllm():
    server = upstream.start()
    yield server
    server.shutdown()
    server.server_close()


@pytest.fixture
def run_nginx(tmp_path, fake_vllm):
    """run_nginx(**value changes, keys=[...]) -> a started Nginx in front of the fake vLLM on 127.0.0.1."""
    require("nginx")
    started = []
    # nginx's workers (not root) test the drain flag: a folder they can search, like /run on the node
    searchable = Path(tempfile.mkdtemp(prefix="gpufleet-drain-"))
    searchable.chmod(0o755)

    def start(stack: str = "alicloud-cn-hangzhou-prod", keys: list[str] | None = None, drain_dir=None, **changes) -> Nginx:
        v = values(
            stack,
            serving_port=free_port(),
            metrics_port=free_port(),
            vllm_port=fake_vllm.server_address[1],
            node_exporter_port=fake_vllm.server_address[1],
            dcgm_exporter_port=fake_vllm.server_address[1],
            **changes,
        )
        n = Nginx(tmp_path / f"nginx{len(started)}", v, [KEY] if keys is None else keys, drain_dir or searchable)
        checked = n.test()
        assert checked.returncode == 0, checked.stderr
        n.start()
        started.append(n)
        return n

    yield start
    for n in started:
        n.stop()
    shutil.rmtree(searchable, ignore_errors=True)
