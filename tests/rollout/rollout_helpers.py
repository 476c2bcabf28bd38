"""(tests/rollout's helpers, imported by its conftest and tests under this unique name: a bare `conftest` import
would find another folder's conftest when the suite runs together.)

Two fake vLLM groups (tests/sizing/fake_openai.py) behind a real nginx whose weighted upstream is the load balancer
of the stack file as it stands: `lb.deploy()` plays `pulumi up` (reads the step's spec, writes
`upstream { server CURRENT weight=..; server CANDIDATE weight=..; }` from the per-node weights and node counts the
program declares, restarts nginx). nginx runs on 127.0.0.1 with its own prefix and is stopped by its PID."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from tools import require

sys.path.insert(0, str(Path(__file__).parents[1] / "sizing"))
from fake_openai import Behaviour, FakeServer  # noqa: E402

from gpufleet.stacks import loader  # noqa: E402
from gpufleet.stacks import rollout as steps  # noqa: E402
from gpufleet.validation import load_fleet  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "Pulumi.alicloud-cn-hangzhou-prod-rollout.yaml"
CURRENT_MODEL = "Qwen/Qwen2.5-7B-Instruct"
CANDIDATE_MODEL = "Qwen/Qwen3-8B"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def group(model: str, **kw) -> Behaviour:
    """A group's stand-in: 8 tokens, 50 ms to the first, 5 ms per further token per request in flight."""
    other = CANDIDATE_MODEL if model == CURRENT_MODEL else CURRENT_MODEL
    args = dict(model=model, aliases=(other,), tokens=8, first_token_s=0.05, token_s=0.005)
    return Behaviour(**(args | kw))


class WeightedNginx:
    def __init__(self, tmp: Path, stack_file: Path, current: FakeServer, candidate: FakeServer):
        self.tmp, self.stack_file, self.current, self.candidate = tmp, stack_file, current, candidate
        self.port = free_port()
        self.conf = tmp / "nginx.conf"
        self.proc: subprocess.Popen | None = None
        self.upstream: dict[str, int | None] = {}
        self.deploys = 0

    def weights(self) -> dict[str, int | None]:
        """Each group's weight at the load balancer (node count x per-node weight; None: no node or weight 0)."""
        spec = load_fleet(loader.use_stack_file(self.stack_file), sizing=False).spec
        if spec.rollout is None:  # finished: one group, the fleet
            return {"current": None, "candidate": 1}
        w_cur, w_cand = steps.weights(spec)
        n_cur, n_cand = steps.current_replicas(spec).desired_or_min, steps.candidate_replicas(spec).desired_or_min
        return {"current": (n_cur * w_cur) or None, "candidate": (n_cand * w_cand) or None}

    def deploy(self) -> None:
        """What `pulumi up` of the stack file would make of the load balancer."""
        self.upstream = self.weights()
        servers = []
        for name, srv in (("current", self.current), ("candidate", self.candidate)):
            w = self.upstream[name]
            addr = srv.url.removeprefix("http://")
            servers.append(f"server {addr} weight={w};" if w else f"server {addr} down;")
        self.conf.write_text(
            f"""
pid {self.tmp}/nginx.pid;
error_log {self.tmp}/error.log warn;
worker_processes 1;
events {{ worker_connections 256; }}
http {{
    client_body_temp_path {self.tmp}/body;
    proxy_temp_path {self.tmp}/proxy;
    fastcgi_temp_path {self.tmp}/fastcgi;
    uwsgi_temp_path {self.tmp}/uwsgi;
    scgi_temp_path {self.tmp}/scgi;
    access_log off;
    upstream fleet {{ {" ".join(servers)} }}
    server {{
        listen 127.0.0.1:{self.port};
        location / {{ proxy_pass http://fleet; proxy_buffering off; proxy_http_version 1.1; proxy_set_header Connection ""; }}
    }}
}}
"""
        )
        self.stop()
        checked = subprocess.run(self.cmd("-t"), capture_output=True, text=True, timeout=30)
        assert checked.returncode == 0, checked.stderr
        self.proc = subprocess.Popen(self.cmd("-g", "daemon off;"), stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                httpx.get(f"{self.url}/health", timeout=1)
                break
            except httpx.HTTPError:
                assert self.proc.poll() is None, self.proc.stdout.read().decode()
                time.sleep(0.05)
        self.deploys += 1

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def cmd(self, *extra: str) -> list[str]:
        return [require("nginx"), "-p", str(self.tmp), "-c", str(self.conf), *extra]

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGQUIT)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.kill(self.proc.pid, signal.SIGKILL)
                self.proc.wait()


def stack_copy(tmp: Path, env: str = "prod", **gates: float) -> Path:
    """The shipped example rollout stack (candidate at 5 %) as a file of its own, with the test's gate thresholds."""
    text = EXAMPLE.read_text()
    if env != "prod":
        text = text.replace("environment: prod", f"environment: {env}")
    for key, value in gates.items():
        lines = [ln for ln in text.splitlines() if ln.strip().startswith(f"{key}:")]
        assert len(lines) == 1, key
        indent = lines[0][: len(lines[0]) - len(lines[0].lstrip())]
        text = text.replace(lines[0], f"{indent}{key}: {value}")
    path = tmp / f"Pulumi.alicloud-cn-hangzhou-{env}-rollout.yaml"
    path.write_text(text)
    return path


@pytest.fixture
def fleet(tmp_path, monkeypatch):
    """fleet(env=..., current=Behaviour, candidate=Behaviour, **gates) -> (stack file, nginx, current, candidate)."""
    require("nginx")
    monkeypatch.setenv("PATH", os.pathsep.join(p for p in os.environ["PATH"].split(os.pathsep) if not Path(p, "pulumi").exists()))
    started: list = []

    def make(env: str = "prod", current: Behaviour | None = None, candidate: Behaviour | None = None, **gates):
        cur = FakeServer(current or group(CURRENT_MODEL)).__enter__()
        cand = FakeServer(candidate or group(CANDIDATE_MODEL)).__enter__()
        started.extend([cur, cand])
        path = stack_copy(tmp_path, env, **gates)
        (tmp_path / "nginx").mkdir()
        lb = WeightedNginx(tmp_path / "nginx", path, cur, cand)
        started.append(lb)
        lb.deploy()
        return path, lb, cur, cand

    yield make
    for thing in reversed(started):
        if isinstance(thing, WeightedNginx):
            thing.stop()
        else:
            thing.__exit__()
    shutil.rmtree(tmp_path / "nginx", ignore_errors=True)
