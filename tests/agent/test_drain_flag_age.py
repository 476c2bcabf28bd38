"""A drain started again on a node already draining waits only what is left of the load balancer's detection time.

docs/scaling-node.md and node_agent.drain: the flag fails the health check, and the load balancer stops sending within
GATEWAY_DRAIN_WAIT_S (interval_s x unhealthy_threshold) of it being written. A flag written 100 s ago with a 15 s wait:
the load balancer has long marked the node down, so no more waiting (a scale-in hook's drain --complete after the spot
watcher's drain must not spend its timeout waiting again).
"""

from __future__ import annotations

import os
import time
from types import SimpleNamespace

from gpufleet.images import node_agent


def test_a_flag_older_than_the_wait_is_not_waited_for_again(tmp_path, monkeypatch):
    flag = tmp_path / "draining"
    flag.write_text("draining since earlier\n")
    old = time.time() - 100
    os.utime(flag, (old, old))
    slept: list[float] = []
    fake_time = SimpleNamespace(
        monotonic=time.monotonic, time=time.time, strftime=time.strftime, gmtime=time.gmtime, sleep=slept.append
    )
    monkeypatch.setattr(node_agent, "time", fake_time)
    monkeypatch.setattr(node_agent, "in_flight", lambda cfg, env, timeout: 0.0)  # nothing running or waiting
    cfg = {"drain_flag": str(flag), "http_timeout_s": 2, "drain_poll_s": 1}
    env = {"GATEWAY_DRAIN_WAIT_S": "15", "GATEWAY_READ_TIMEOUT_S": "600"}
    assert node_agent.drain(cfg, env) == 0
    assert sum(slept) == 0, slept


def test_a_fresh_flag_waits_the_load_balancer_out(tmp_path, monkeypatch):
    flag = tmp_path / "draining"
    slept: list[float] = []
    fake_time = SimpleNamespace(
        monotonic=time.monotonic, time=time.time, strftime=time.strftime, gmtime=time.gmtime, sleep=slept.append
    )
    monkeypatch.setattr(node_agent, "time", fake_time)
    monkeypatch.setattr(node_agent, "in_flight", lambda cfg, env, timeout: 0.0)
    cfg = {"drain_flag": str(flag), "http_timeout_s": 2, "drain_poll_s": 1}
    env = {"GATEWAY_DRAIN_WAIT_S": "15", "GATEWAY_READ_TIMEOUT_S": "600"}
    assert node_agent.drain(cfg, env) == 0 and flag.exists()
    assert 14 < slept[0] <= 15, slept
