"""Fidelity: one scale event of Tencent prod, the simulation's scaler runs against the deployed function's own code.

At every timer firing the simulation records which nodes AS counts in service, what each answers on /metrics/vllm
(nothing while vLLM loads) and what it decided. The test drives the real function (its zip, unpacked as SCF does) at
those same firings against the signature-checking AS/CVM stand-in (tests/scaler/scaler_fakes.py) and node servers
that answer vLLM's exposition with the simulated values, or fail while the simulated node is still loading. The real
function must decide what the simulation decided at each firing and execute the policy exactly when the simulation's
group took the step (the stand-in refuses, as AS does during an activity or cooldown, when the simulation's did)."""

from __future__ import annotations

import importlib.util
import io
import sys
import threading
import zipfile
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from simfixtures import START

from gpufleet import plan
from gpufleet.simulate import check, run

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "scaler"))
from scaler_fakes import KEYS, FakeTencentApi  # noqa: E402

STACK = "tencentcloud-ap-guangzhou-prod"
PATH = "/metrics/vllm"


class Node:
    """A node's metrics port on 127.0.0.N whose answer the test sets per firing (None: 503, vLLM not up)."""

    def __init__(self, ip: str, port: int):
        self.body: str | None = None
        owner = self

        class H(BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def do_GET(self):
                ok = owner.body is not None and self.path == PATH
                data = (owner.body if ok else "vllm not ready").encode()
                self.send_response(200 if ok else 503)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.srv = ThreadingHTTPServer((ip, port), H)
        threading.Thread(target=self.srv.serve_forever, args=(0.05,), daemon=True).start()

    def close(self):
        self.srv.shutdown()
        self.srv.server_close()


def exposition(waiting: float) -> str:
    return f'# TYPE vllm:num_requests_waiting gauge\nvllm:num_requests_waiting{{engine="0",model_name="m"}} {waiting}\n'


@pytest.fixture
def scaler(tmp_path):
    from gpufleet.components.tencentcloud.scaler import package

    with zipfile.ZipFile(io.BytesIO(package.zip_bytes())) as z:
        z.extractall(tmp_path / "code")
    spec = importlib.util.spec_from_file_location("scaler_fidelity", tmp_path / "code" / "index.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_one_scale_event_matches_the_real_scaler_step_by_step(scaler, cap, monkeypatch):
    import socket

    p = plan.for_stack(STACK)
    b = run.behaviour(p.fleet, p.resources)
    r = check.step_result(b, cap, START)
    window = [d for d in r.decisions if check.STEP_AT_S - 300 <= d[0] <= check.STEP_AT_S + 900]
    assert any(executed for *_, executed in window), "no scale event in the window"
    fn = next(x for x in p.resources if x["type"] == "tencentcloud:Scf/function:Function")
    group = b.pollers[0].groups[0]
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    nodes = {n.id: Node(f"127.0.0.{10 + n.id}", port) for n in r.nodes}
    api = FakeTencentApi(p.fleet.spec.region)
    try:
        env = {
            **KEYS,
            **fn["inputs"]["environment"],
            "GPUFLEET_METRICS_PORT": str(port),
            "GPUFLEET_SCALING_GROUP": group,
            "GPUFLEET_SCALE_OUT_POLICY": "asp-out",
            "GPUFLEET_SCALE_IN_POLICY": "asp-in",
        }
        api.policies = {"asp-out": group, "asp-in": group}
        monkeypatch.setattr(scaler, "ENDPOINT", api.url)
        monkeypatch.setattr(scaler.os, "environ", env)
        steps = []
        for t, _, values, decided, executed in window:
            api.instances = {
                f"ins-{int(i):04d}": {"group": group, "state": "IN_SERVICE", "ip": f"127.0.0.{10 + int(i)}"} for i in values
            }
            for i, node in nodes.items():
                v = values.get(str(i))
                node.body = None if v is None else exposition(v)
            api.refuse_execute = "" if executed else "ResourceInUse.ActivityInProgress"
            before = len(api.executed)
            got = scaler.main_handler({"Type": "Timer"}, None)
            real = got["action"]
            if "error" in got:  # it decided, AS refused: the decision is in its reason
                real = "out" if " > " in got["why"] else "in" if " < " in got["why"] else "hold"
            steps.append((t, decided, real, executed, len(api.executed) > before))
        mismatched = [s for s in steps if s[1] != s[2] or s[3] != s[4]]
        assert not mismatched, "\n".join(
            f"t={t:g}: simulated {d} (executed {e}), real {g} (executed {x})" for t, d, g, e, x in steps
        )
        assert sum(1 for s in steps if s[4]) >= 1
    finally:
        api.close()
        for node in nodes.values():
            node.close()
